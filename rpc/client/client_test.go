package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newSite starts a site with resources cpu (128) and gpu (8).
func newSite(t *testing.T, servers int) *agenttest.Site {
	t.Helper()
	api := rpctestAPI(t)
	// The server asks LeaderHint for every answer it gives, errors
	// included: while the log is down and a call has been refused, that
	// is the moment to end the "election" (see downBriefly).
	var site atomic.Pointer[agenttest.Site]
	api.LeaderHint = func() string {
		if s := site.Load(); s != nil && s.Log.Down.Load() {
			if end, ok := downs.LoadAndDelete(s); ok {
				end.(func())()
			}
		}
		return ""
	}
	s := agenttest.NewSite(t, agenttest.Options{Servers: servers, API: api})
	site.Store(s)
	ops := newClient(t, s, agenttest.TokenOps)
	for _, r := range []*ledgerdv1.Resource{{Name: "cpu", Capacity: 128}, {Name: "gpu", Capacity: 8}} {
		if _, err := ops.CreateResource(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// downs holds, per site, the end of its current downBriefly.
var downs sync.Map

// downBriefly makes the site's log unavailable, as during an election,
// until the server has refused one call for it: the call started next
// must be retried, and its retry succeeds. No clock decides when the
// election ends, the refusal does.
func downBriefly(s *agenttest.Site) {
	s.Log.Down.Store(true)
	downs.Store(s, func() { s.Log.Down.Store(false) })
}

// newClient returns a client over every server of s, starting at server 0.
func newClient(t *testing.T, s *agenttest.Site, token string) *Client {
	t.Helper()
	c, err := New(s.Addrs, Options{Token: token, MaxAttempts: 5, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.next.Store(0)
	return c
}

func gpuShape(amount int64, dur time.Duration) *ledgerdv1.Shape {
	return &ledgerdv1.Shape{
		Parts:     []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: amount}},
		Duration:  durationpb.New(dur),
		NotBefore: timestamppb.New(t0.Add(time.Hour)),
	}
}

func countLive(t *testing.T, c *Client) int {
	t.Helper()
	all, err := c.ListAll(context.Background(), &ledgerdv1.ListRequest{States: []ledgerdv1.ReservationState{
		ledgerdv1.ReservationState_RESERVATION_STATE_HELD, ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

func TestRetriesOnNextNodeWhenOneIsDown(t *testing.T) {
	s := newSite(t, 2)
	s.Stop(0)
	c := newClient(t, s, agenttest.TokenAcme)
	r, err := c.Reserve(context.Background(), &ledgerdv1.ReserveRequest{Shape: gpuShape(2, time.Hour)})
	if err != nil {
		t.Fatalf("reserve with node 0 down: %v", err)
	}
	if r.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("state = %v", r.State)
	}
	if n := countLive(t, c); n != 1 {
		t.Fatalf("%d live reservations, want 1", n)
	}
}

func TestRetriesThroughAnElectionExactlyOnce(t *testing.T) {
	s := newSite(t, 1)
	c := newClient(t, s, agenttest.TokenAcme)
	c.opts.MaxAttempts = 50
	downBriefly(s)
	if _, err := c.Reserve(context.Background(), &ledgerdv1.ReserveRequest{Shape: gpuShape(2, time.Hour)}); err != nil {
		t.Fatalf("reserve across an election: %v", err)
	}
	if n := countLive(t, c); n != 1 {
		t.Fatalf("%d live reservations, want 1", n)
	}
}

func TestNoRetryOnRejection(t *testing.T) {
	s := newSite(t, 1)
	c := newClient(t, s, agenttest.TokenAcme)
	if _, err := c.Reserve(context.Background(), &ledgerdv1.ReserveRequest{Shape: gpuShape(8, time.Hour)}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Reserve(context.Background(), &ledgerdv1.ReserveRequest{Shape: &ledgerdv1.Shape{
		Parts: []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: 1}}, Duration: durationpb.New(time.Hour),
		NotBefore: timestamppb.New(t0.Add(time.Hour)), Deadline: timestamppb.New(t0.Add(2 * time.Hour)),
	}})
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("err = %v, want FailedPrecondition", err)
	}
}

// TestWatchResumesAcrossFailover breaks the stream by stopping the node it
// is attached to, in the middle of a version with several events, and
// checks that the events seen equal the ledger's history: no gap, no
// duplicate.
func TestWatchResumesAcrossFailover(t *testing.T) {
	s := newSite(t, 2)
	acme := newClient(t, s, agenttest.TokenAcme)
	ops := newClient(t, s, agenttest.TokenOps)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	var seen []*ledgerdv1.Event
	got := make(chan struct{}, 1000)
	done := make(chan error, 1)
	go func() {
		done <- ops.Watch(ctx, Position{Version: 1}, func(e *ledgerdv1.Event) error {
			mu.Lock()
			seen = append(seen, e)
			mu.Unlock()
			got <- struct{}{}
			return nil
		})
	}()
	wait := func(n int) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			k := len(seen)
			mu.Unlock()
			if k >= n {
				return
			}
			select {
			case <-got:
			case <-deadline:
				t.Fatalf("saw %d events, want %d", k, n)
			}
		}
	}
	// Three holds that expire together: one entry, three events.
	for range 3 {
		if _, err := acme.Hold(ctx, &ledgerdv1.HoldRequest{Shape: gpuShape(1, time.Hour), HoldTtl: durationpb.New(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	wait(5) // 2 resources + 3 holds
	s.Stop(0)
	s.Clock.Advance(2 * time.Minute)
	if err := s.Log.Tick(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := acme.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := ops.History(ctx, &ledgerdv1.HistoryRequest{FromVersion: 1, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	wait(len(hist.Events))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch ended with %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(hist.Events) {
		t.Fatalf("watch saw %d events, history has %d", len(seen), len(hist.Events))
	}
	for i := range seen {
		if !proto.Equal(seen[i], hist.Events[i]) {
			t.Fatalf("event %d: watch %v, history %v", i, seen[i], hist.Events[i])
		}
	}
	expired := slices.IndexFunc(seen, func(e *ledgerdv1.Event) bool {
		return e.Reservation != nil && e.Reservation.State == ledgerdv1.ReservationState_RESERVATION_STATE_EXPIRED
	})
	if expired < 0 || seen[expired+2].Version != seen[expired].Version || seen[expired+2].Index != 2 {
		t.Fatalf("expected three expiry events in one version, got %v", seen)
	}
}

// TestWatchResumeInsideAVersion resumes a raw stream from (v, 1) and checks
// it starts with event (v, 1).
func TestWatchResumeInsideAVersion(t *testing.T) {
	s := newSite(t, 1)
	acme := newClient(t, s, agenttest.TokenAcme)
	ctx := context.Background()
	for range 3 {
		if _, err := acme.Hold(ctx, &ledgerdv1.HoldRequest{Shape: gpuShape(1, time.Hour), HoldTtl: durationpb.New(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Clock.Advance(2 * time.Minute)
	if err := s.Log.Tick(); err != nil {
		t.Fatal(err)
	}
	v := s.FSM.AppliedIndex()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first *ledgerdv1.Event
	err := acme.Watch(wctx, Position{Version: v, Index: 1}, func(e *ledgerdv1.Event) error {
		first = e
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	if first.Version != v || first.Index != 1 {
		t.Fatalf("resumed at (%d,%d), want (%d,1)", first.Version, first.Index, v)
	}
}

var errStop = errors.New("stop")

// TestWatchFromNowKeepsItsPlaceAcrossReconnect starts a watch at "now",
// breaks it before any event, books while it is away, and expects the
// booking's event after the reconnect.
func TestWatchFromNowKeepsItsPlaceAcrossReconnect(t *testing.T) {
	s := newSite(t, 2)
	acme := newClient(t, s, agenttest.TokenAcme)
	watcher := newClient(t, s, agenttest.TokenAcme)
	watcher.opts.BaseBackoff = 400 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan *ledgerdv1.Event, 10)
	started := make(chan Position, 10)
	done := make(chan struct{})
	testHookWatchProgress = func(p Position) {
		select {
		case started <- p:
		default:
		}
	}
	t.Cleanup(func() {
		cancel()
		<-done // the watch no longer reads the hook
		testHookWatchProgress = nil
	})
	go func() {
		defer close(done)
		_ = watcher.Watch(ctx, Position{}, func(e *ledgerdv1.Event) error {
			events <- e
			return nil
		})
	}()
	select {
	case p := <-started:
		if p.Version != s.FSM.AppliedIndex()+1 {
			t.Fatalf("watch starts at %v, want version %d", p, s.FSM.AppliedIndex()+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no start notice")
	}
	s.Stop(0)
	r, err := acme.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-events:
		if e.Reservation.GetId() != r.Id {
			t.Fatalf("first event %v, want the booking %s", e, r.Id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the booking made while the watch reconnected was never delivered")
	}
}
