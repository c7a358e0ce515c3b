package client

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/agenttest"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// hostRecorder is a transport that notes which node each call went to.
type hostRecorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	calls []call
}

type call struct{ method, host string }

func (r *hostRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.calls = append(r.calls, call{method: path.Base(req.URL.Path), host: req.URL.Host})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// hosts returns the nodes the calls of method went to since call number from.
func (r *hostRecorder) hosts(method string, from int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls[from:] {
		if c.method == method {
			out = append(out, c.host)
		}
	}
	return out
}

func (r *hostRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// TestWritesGoStraightToTheLeader starts a client at a follower of a real
// three-node cluster: its first write is forwarded by that follower, whose
// response names the leader, and every later write goes to the leader
// directly, while reads keep visiting every node. When the leader stops,
// writes find the new one. Coalesced calls (sent as Batch) route alike.
func TestWritesGoStraightToTheLeader(t *testing.T) {
	for _, coalesce := range []bool{true, false} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) { testWritesGoStraightToTheLeader(t, coalesce) })
	}
}

func testWritesGoStraightToTheLeader(t *testing.T, coalesce bool) {
	// The calls are sequential: each Batch carries one operation.
	method := func(m string) string {
		if coalesce {
			return "Batch"
		}
		return m
	}
	c := agenttest.NewCluster(t, 3, rpctestAPI(t))
	leader := c.WaitLeader(15 * time.Second)
	follower := slices.IndexFunc(c.Servers, func(s *agenttest.Server) bool { return s != leader })
	rec := &hostRecorder{next: httpClient(nil, false).Transport}
	cl, err := New(c.Addrs(), Options{Token: agenttest.TokenOps, HTTPClient: &http.Client{Transport: rec}, NoCoalesce: !coalesce})
	if err != nil {
		t.Fatal(err)
	}
	cl.next.Store(uint64(follower))
	ctx := context.Background()
	if _, err := cl.CreateResource(ctx, &ledgerdv1.Resource{Name: "gpu", Capacity: 1000}); err != nil {
		t.Fatal(err)
	}
	if got := rec.hosts("Create", 0); !slices.Equal(got, []string{c.Servers[follower].Addr}) {
		t.Fatalf("Create went to %v, want the follower %s", got, c.Servers[follower].Addr)
	}
	reserve := func() {
		t.Helper()
		if _, err := cl.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	mark := rec.len()
	var ids []string
	for range 6 {
		r, err := cl.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Id)
	}
	// sixToLeader checks that six calls of op each made one request, to
	// the leader.
	sixToLeader := func(op string, mark int) {
		t.Helper()
		got := rec.hosts(method(op), mark)
		if len(got) != 6 {
			t.Fatalf("6 %ss made %d calls", op, len(got))
		}
		for i, h := range got {
			if h != leader.Addr {
				if now := c.WaitLeader(15 * time.Second); now != leader {
					// An election under load moved the leader while the
					// calls ran: the routing was not what was tested.
					t.Skipf("leadership moved from %s to %s during the check (a loaded machine); the routing was not exercised", leader.Addr, now.Addr)
				}
				t.Fatalf("%s %d went to %s, want the leader %s", op, i, h, leader.Addr)
			}
		}
	}
	sixToLeader("Reserve", mark)
	mark = rec.len()
	for _, id := range ids {
		if _, err := cl.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// A linearizable Get goes to the leader too (its read barrier is
	// cheapest there); other reads are spread over every node.
	sixToLeader("Get", mark)
	mark = rec.len()
	for range 6 {
		if _, err := cl.List(ctx, &ledgerdv1.ListRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	got := rec.hosts("List", mark)
	slices.Sort(got)
	if got = slices.Compact(got); len(got) != 3 {
		t.Fatalf("6 Lists went to %v, want every node", got)
	}

	// A client not given the leader's address never dials it: its writes
	// go through a follower, as before.
	var followers []string
	for _, s := range c.Servers {
		if s != leader {
			followers = append(followers, s.Addr)
		}
	}
	rec2 := &hostRecorder{next: httpClient(nil, false).Transport}
	fc, err := New(followers, Options{Token: agenttest.TokenOps, HTTPClient: &http.Client{Transport: rec2}, NoCoalesce: !coalesce})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := fc.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec2.hosts(method("Reserve"), 0); len(got) != 3 || slices.Contains(got, leader.Addr) {
		t.Fatalf("a client without the leader's address sent its writes to %v (leader %s)", got, leader.Addr)
	}

	c.Stop(leader)
	reserve() // learns the new leader (from its hint)
	// Under load leadership may move again while a call is under way;
	// the routing is checked on a call during which it stayed put.
	for attempt := 1; ; attempt++ {
		next := c.WaitLeader(15 * time.Second)
		mark = rec.len()
		reserve()
		if c.WaitLeader(15*time.Second) != next {
			if attempt == 5 {
				t.Fatal("leadership kept moving during five calls")
			}
			reserve() // learn the newer leader
			continue
		}
		if got := rec.hosts(method("Reserve"), mark); !slices.Equal(got, []string{next.Addr}) {
			t.Fatalf("after the failover Reserve went to %v, want the new leader %s", got, next.Addr)
		}
		return
	}
}
