package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
)

// fakeNode answers Reserve with a reservation named after the node, or,
// when stalled, holds every Reserve until its caller goes away (a node
// frozen by a long pause). Every other method is unimplemented, so
// coalescing falls back to unary calls. It counts the Reserve calls and
// the idempotency keys it saw.
type fakeNode struct {
	ledgerdv1connect.UnimplementedReservationServiceHandler
	name    string
	stalled bool
	arrived chan string // idempotency key of each Reserve, when it arrives
	calls   atomic.Int64
}

func (f *fakeNode) Reserve(ctx context.Context, req *connect.Request[ledgerdv1.ReserveRequest]) (*connect.Response[ledgerdv1.ReserveResponse], error) {
	f.calls.Add(1)
	select {
	case f.arrived <- req.Msg.GetIdempotencyKey():
	default:
	}
	if f.stalled {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return connect.NewResponse(&ledgerdv1.ReserveResponse{Reservation: &ledgerdv1.Reservation{Id: f.name + "/" + req.Msg.GetIdempotencyKey()}}), nil
}

func startFake(t *testing.T, f *fakeNode) string {
	t.Helper()
	f.arrived = make(chan string, 16)
	mux := http.NewServeMux()
	mux.Handle(ledgerdv1connect.NewReservationServiceHandler(f))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

type reserveOut struct {
	r   *ledgerdv1.Reservation
	err error
}

// TestStalledNodeAttemptTimeout: a call whose first attempt goes to a node
// that never answers moves on to the next node after AttemptTimeout, with
// the same idempotency key, instead of waiting for the caller's deadline.
func TestStalledNodeAttemptTimeout(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "coalesce"}[coalesce], func(t *testing.T) {
			stalled := &fakeNode{name: "stalled", stalled: true}
			healthy := &fakeNode{name: "healthy"}
			c, err := New([]string{startFake(t, stalled), startFake(t, healthy)}, Options{
				AttemptTimeout: 50 * time.Millisecond, NoCoalesce: !coalesce, HTTPClient: &http.Client{Transport: http.DefaultTransport}})
			if err != nil {
				t.Fatal(err)
			}
			c.next.Store(0) // the first attempt goes to the stalled node
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: "k1"})
			if err != nil {
				t.Fatalf("reserve: %v, want the healthy node's answer", err)
			}
			if r.GetId() != "healthy/k1" {
				t.Fatalf("reservation %q, want healthy/k1 (the same key on the next node)", r.GetId())
			}
			if stalled.calls.Load() == 0 {
				t.Fatal("the stalled node was never tried; the test proves nothing")
			}
		})
	}
}

// TestStalledLeaderMovedAttempt: an attempt on the node the client knows
// as leader ends as soon as a response names another leader, and goes
// there at once with the same key; no attempt timeout is involved.
func TestStalledLeaderMovedAttempt(t *testing.T) {
	old := &fakeNode{name: "old", stalled: true}
	nw := &fakeNode{name: "new"}
	oldURL, newURL := startFake(t, old), startFake(t, nw)
	c, err := New([]string{oldURL, newURL}, Options{AttemptTimeout: -1, NoCoalesce: true, HTTPClient: &http.Client{Transport: http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	c.learnLeader(strings.TrimPrefix(oldURL, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan reserveOut, 1)
	go func() {
		r, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: "k2"})
		got <- reserveOut{r, err}
	}()
	select {
	case k := <-old.arrived:
		if k != "k2" {
			t.Fatalf("old leader got key %q, want k2", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write never reached the known leader")
	}
	// A response to another call names the new leader.
	c.learnLeader(strings.TrimPrefix(newURL, "http://"))
	select {
	case r := <-got:
		if r.err != nil || r.r.GetId() != "new/k2" {
			t.Fatalf("reserve = %v, %v; want new/k2 from the new leader", r.r, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write stayed on the stalled old leader after the leader moved")
	}
}

// TestAttemptCutIsRetryable: an attempt cut short by the client is
// reported as Unavailable (retryable), naming why, when attempts run out.
func TestAttemptCutIsRetryable(t *testing.T) {
	stalled := &fakeNode{name: "stalled", stalled: true}
	c, err := New([]string{startFake(t, stalled)}, Options{AttemptTimeout: 20 * time.Millisecond, MaxAttempts: 2,
		BaseBackoff: time.Millisecond, NoCoalesce: true, HTTPClient: &http.Client{Transport: http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: "k3"})
	if !errors.Is(err, errAttemptTimeout) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("reserve on a stalled node: %v, want Unavailable caused by the attempt timeout", err)
	}
	if n := stalled.calls.Load(); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
}

// TestLeaderMovedCutsWatches drives the registry of attempts on the known
// leader without a server: attempts on a node are cut (errLeaderMoved) by
// the change that names another node the leader, and by no other change;
// they keep watching while no leader is known; and ending an attempt,
// cut or not, leaves no watch behind.
func TestLeaderMovedCutsWatches(t *testing.T) {
	c, err := New([]string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, Options{AttemptTimeout: -1, NoCoalesce: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.eps[0], c.eps[1]
	type att struct {
		ctx context.Context
		end func() error
	}
	start := func(ep *endpoint, n int) []att {
		out := make([]att, n)
		for i := range out {
			out[i].ctx, out[i].end = c.attempt(context.Background(), ep)
		}
		return out
	}
	cutBy := func(as []att) (n int) {
		for _, x := range as {
			if errors.Is(context.Cause(x.ctx), errLeaderMoved) {
				n++
			}
		}
		return n
	}
	c.learnLeader("127.0.0.1:1")
	onA := start(a, 20)
	onB := start(b, 5) // b is not the leader: not watched
	if n := len(c.watches); n != 20 {
		t.Fatalf("%d watches, want the 20 attempts on the leader", n)
	}
	c.learnLeader("127.0.0.1:9") // not a configured node: no leader known
	if n := cutBy(onA); n != 0 {
		t.Fatalf("%d attempts cut while no leader is known, want 0", n)
	}
	c.learnLeader("127.0.0.1:1") // back to a: still the attempts' node
	if n := cutBy(onA); n != 0 {
		t.Fatalf("%d attempts cut when the leader came back to their node, want 0", n)
	}
	// Half of them end before the leader moves.
	for _, x := range onA[:10] {
		if err := x.end(); err != nil {
			t.Fatalf("an attempt ended normally reports %v", err)
		}
	}
	if n := len(c.watches); n != 10 {
		t.Fatalf("%d watches after 10 of 20 attempts ended, want 10", n)
	}
	c.learnLeader("127.0.0.1:2")
	if n := cutBy(onA[10:]); n != 10 {
		t.Fatalf("%d of the 10 running attempts on the old leader cut, want 10", n)
	}
	if n := cutBy(onB); n != 0 {
		t.Fatalf("%d attempts on the new leader cut, want 0", n)
	}
	for _, x := range onA[10:] {
		if err := x.end(); !errors.Is(err, errLeaderMoved) {
			t.Fatalf("a cut attempt ends with %v, want errLeaderMoved", err)
		}
	}
	for _, x := range onB {
		_ = x.end()
	}
	if n := len(c.watches); n != 0 {
		t.Fatalf("%d watches left after every attempt ended", n)
	}
}
