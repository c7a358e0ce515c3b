package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	"github.com/ledgerd/ledgerd/rpc"
)

// outcome is one call's answer in comparable form.
type outcome struct {
	res *ledgerdv1.Reservation
	err error
}

// sameOutcome reports how a and b differ ("" when they do not): the same
// reservation, or the same error code, message, origin and details.
func sameOutcome(a, b outcome) string {
	if (a.err == nil) != (b.err == nil) {
		return fmt.Sprintf("error %v vs %v", a.err, b.err)
	}
	if a.err == nil {
		if !proto.Equal(a.res, b.res) {
			return fmt.Sprintf("reservation %v vs %v", a.res, b.res)
		}
		return ""
	}
	var ea, eb *connect.Error
	if !errors.As(a.err, &ea) || !errors.As(b.err, &eb) {
		return fmt.Sprintf("not connect errors: %T vs %T", a.err, b.err)
	}
	if ea.Error() != eb.Error() || connect.IsWireError(ea) != connect.IsWireError(eb) {
		return fmt.Sprintf("error %q (wire %v) vs %q (wire %v)", ea, connect.IsWireError(ea), eb, connect.IsWireError(eb))
	}
	da, db := ea.Details(), eb.Details()
	if len(da) != len(db) {
		return fmt.Sprintf("%d details vs %d", len(da), len(db))
	}
	for i := range da {
		va, erra := da[i].Value()
		vb, errb := db[i].Value()
		if erra != nil || errb != nil || !proto.Equal(va, vb) {
			return fmt.Sprintf("detail %d: %v vs %v", i, va, vb)
		}
	}
	return ""
}

// batchCounter counts the Batch calls going through a transport and
// those answered compressed.
type batchCounter struct {
	next       http.RoundTripper
	batches    atomic.Int64
	calls      atomic.Int64
	compressed atomic.Int64
}

func (b *batchCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	b.calls.Add(1)
	isBatch := strings.HasSuffix(req.URL.Path, "/Batch")
	if isBatch {
		b.batches.Add(1)
	}
	resp, err := b.next.RoundTrip(req)
	if isBatch && err == nil && resp.Header.Get("Content-Encoding") != "" {
		b.compressed.Add(1)
	}
	return resp, err
}

// TestCoalescedCallsAnswerAsUnary runs one script of calls, covering
// every coalesced operation and every error class, against two identical
// ledgers: once with unary calls and once coalesced into Batch calls. Each
// step must give the same reservation or the same error: code, message,
// details (field violations, rejections, error info).
func TestCoalescedCallsAnswerAsUnary(t *testing.T) {
	window := func(amount int64) *ledgerdv1.Shape {
		return &ledgerdv1.Shape{
			Parts: []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: amount}}, Duration: durationpb.New(time.Hour),
			NotBefore: timestamppb.New(t0.Add(time.Hour)), Deadline: timestamppb.New(t0.Add(2 * time.Hour)),
		}
	}
	const r1, r2 = "r-00000000000000000003", "r-00000000000000000004"
	type step struct {
		name string
		call func(ctx context.Context, acme, globex *Client) (*ledgerdv1.Reservation, error)
	}
	steps := []step{
		{"hold", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Hold(ctx, &ledgerdv1.HoldRequest{Shape: window(2), HoldTtl: durationpb.New(time.Minute)})
		}},
		{"reserve", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: window(3), Labels: map[string]string{"job": "x"}})
		}},
		{"reserve rejected", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: window(4)})
		}},
		{"reserve invalid amount", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: window(0)})
		}},
		{"hold invalid ttl", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Hold(ctx, &ledgerdv1.HoldRequest{Shape: window(1), HoldTtl: durationpb.New(-time.Second)})
		}},
		{"hold unknown resource", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			s := window(1)
			s.Parts[0].Resource = "tpu"
			return a.Hold(ctx, &ledgerdv1.HoldRequest{Shape: s})
		}},
		{"get other tenant", func(ctx context.Context, _, g *Client) (*ledgerdv1.Reservation, error) { return g.Get(ctx, r1) }},
		{"commit other tenant", func(ctx context.Context, _, g *Client) (*ledgerdv1.Reservation, error) { return g.Commit(ctx, r1, "") }},
		{"commit", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Commit(ctx, r1, "") }},
		{"commit again", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Commit(ctx, r1, "") }},
		{"commit empty id", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Commit(ctx, "", "") }},
		{"get", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Get(ctx, r1) }},
		{"get unknown", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Get(ctx, "r-404") }},
		{"get bad id", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Get(ctx, "bad id!") }},
		{"modify", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Modify(ctx, &ledgerdv1.ModifyRequest{Id: r2, Shape: window(1)})
		}},
		{"modify rejected", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Modify(ctx, &ledgerdv1.ModifyRequest{Id: r1, Shape: window(8)})
		}},
		{"modify unknown", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Modify(ctx, &ledgerdv1.ModifyRequest{Id: "r-404", Shape: window(1)})
		}},
		{"abort", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Abort(ctx, r2, "") }},
		{"abort unknown", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Abort(ctx, "r-404", "")
		}},
		{"cancel other tenant", func(ctx context.Context, _, g *Client) (*ledgerdv1.Reservation, error) { return g.Cancel(ctx, r2, "") }},
		{"cancel", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Cancel(ctx, r2, "key-1")
		}},
		{"cancel retried", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) {
			return a.Cancel(ctx, r2, "key-1")
		}},
		{"cancel again", func(ctx context.Context, a, _ *Client) (*ledgerdv1.Reservation, error) { return a.Cancel(ctx, r2, "") }},
	}
	run := func(coalesce bool) ([]outcome, *batchCounter) {
		s := newSite(t, 1)
		counter := &batchCounter{next: httpClient(nil, false).Transport}
		mk := func(token string) *Client {
			c, err := New(s.Addrs, Options{Token: token, MaxAttempts: 1, HTTPClient: &http.Client{Transport: counter}, NoCoalesce: !coalesce})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		acme, globex := mk(agenttest.TokenAcme), mk(agenttest.TokenGlobex)
		var out []outcome
		for _, st := range steps {
			r, err := st.call(context.Background(), acme, globex)
			out = append(out, outcome{r, err})
		}
		return out, counter
	}
	unary, uc := run(false)
	coal, cc := run(true)
	if uc.batches.Load() != 0 || cc.batches.Load() != int64(len(steps)) {
		t.Fatalf("Batch calls: %d unary, %d coalesced; want 0 and %d", uc.batches.Load(), cc.batches.Load(), len(steps))
	}
	errs := 0
	for i, st := range steps {
		if d := sameOutcome(unary[i], coal[i]); d != "" {
			t.Errorf("%s: unary and coalesced differ: %s", st.name, d)
		}
		if unary[i].err != nil {
			errs++
		}
	}
	// The script must exercise failures, not only successes.
	if errs < 12 {
		t.Fatalf("only %d of %d steps failed; the script lost its error cases", errs, len(steps))
	}
	for _, want := range []struct {
		step  int
		code  connect.Code
		field string
	}{{2, connect.CodeFailedPrecondition, ""}, {3, connect.CodeInvalidArgument, "shape.parts[0].amount"}, {6, connect.CodePermissionDenied, ""}, {12, connect.CodeNotFound, ""}} {
		err := coal[want.step].err
		if f, _ := rpc.BadField(err); connect.CodeOf(err) != want.code || f != want.field {
			t.Errorf("%s: %v (field %q), want %v naming %q", steps[want.step].name, err, f, want.code, want.field)
		}
	}
	if _, ok := rpc.Rejection(coal[2].err); !ok {
		t.Errorf("coalesced rejection lost its Rejection detail: %v", coal[2].err)
	}
}

// oldServer serves s's ledger like a server that predates Batch (404 on
// it) or, with delay, answers Batch slowly.
func oldServer(t *testing.T, s *agenttest.Site, batch func(w http.ResponseWriter, r *http.Request, next http.Handler)) string {
	t.Helper()
	srv, err := rpc.New(rpc.Options{Ledger: s.Ledger, Auth: agenttest.NewAuth(t), Now: s.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/Batch") {
			batch(w, r, h)
			return
		}
		h.ServeHTTP(w, r)
	}))
	hs.Config.Protocols = rpc.ServeProtocols()
	hs.Start()
	t.Cleanup(hs.Close)
	return hs.Listener.Addr().String()
}

// TestCoalescingFallsBackToUnary: against a server without Batch the
// first call finds out (Unimplemented) and is sent unary, and later calls
// skip the batch attempt.
func TestCoalescingFallsBackToUnary(t *testing.T) {
	s := newSite(t, 1)
	addr := oldServer(t, s, func(w http.ResponseWriter, r *http.Request, _ http.Handler) { http.NotFound(w, r) })
	counter := &batchCounter{next: httpClient(nil, false).Transport}
	c, err := New([]string{addr}, Options{Token: agenttest.TokenAcme, MaxAttempts: 1, HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)}); err != nil {
			t.Fatalf("reserve against a server without Batch: %v", err)
		}
	}
	if b, n := counter.batches.Load(), counter.calls.Load(); b != 1 || n != 4 {
		t.Fatalf("%d Batch calls of %d, want 1 of 4 (one probe, then unary)", b, n)
	}
	if n := countLive(t, c); n != 3 {
		t.Fatalf("%d live reservations, want 3", n)
	}
}

// TestCoalescedCallDeadline: a call whose deadline passes while its batch
// is in flight returns DeadlineExceeded at its deadline, as a unary call
// does, and a call in the same batch without a deadline is unaffected.
func TestCoalescedCallDeadline(t *testing.T) {
	s := newSite(t, 1)
	// The server holds every request until the test releases it, and
	// says when one has arrived.
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	addr := oldServer(t, s, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		arrived <- struct{}{}
		<-release
		next.ServeHTTP(w, r)
	})
	c, err := New([]string{addr}, Options{Token: agenttest.TokenAcme, MaxAttempts: 1, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	reserve := func(ctx context.Context, errp *error) {
		wg.Go(func() { _, *errp = c.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)}) })
	}
	// The first call fills the one in-flight slot; the next two queue and
	// share the second batch.
	var first, patient, hasty error
	reserve(ctx, &first)
	<-arrived // the first batch holds the one in-flight slot
	reserve(ctx, &patient)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, hasty = c.Reserve(short, &ledgerdv1.ReserveRequest{Shape: gpuShape(1, time.Hour)})
	// The server has answered nothing yet, so only the call's own
	// deadline can have ended it.
	select {
	case <-release:
		t.Fatal("released early")
	default:
	}
	if connect.CodeOf(hasty) != connect.CodeDeadlineExceeded {
		t.Fatalf("call with a 100ms deadline while the server holds its batch: %v, want DeadlineExceeded", hasty)
	}
	close(release)
	wg.Wait()
	if first != nil || patient != nil {
		t.Fatalf("calls without a deadline: %v, %v", first, patient)
	}
}

// TestCoalescedBrokersOnRealCluster: many goroutines book the last slots
// of a window and run hold/commit/abort/get cycles through one coalescing
// client on a real three-node cluster. Every call is answered, exactly
// the capacity is booked (no overbooking, no lost booking), and the calls
// did travel in batches.
func TestCoalescedBrokersOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	c := agenttest.NewCluster(t, 3, rpctestAPI(t))
	counter := &batchCounter{next: httpClient(nil, false).Transport}
	cl, err := New(c.Addrs(), Options{Token: agenttest.TokenOps, MaxAttempts: 20, BaseBackoff: 10 * time.Millisecond, HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const capacity, brokers, cyclers = 16, 48, 16
	for _, r := range []*ledgerdv1.Resource{{Name: "gpu", Capacity: capacity}, {Name: "cpu", Capacity: 1000}} {
		if _, err := cl.CreateResource(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now().Add(time.Hour).Truncate(time.Minute)
	slot := &ledgerdv1.Shape{
		Parts: []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: 1}}, Duration: durationpb.New(time.Hour),
		NotBefore: timestamppb.New(start), Deadline: timestamppb.New(start.Add(time.Hour)),
	}
	var booked, rejected atomic.Int64
	var mu sync.Mutex
	var failures []error
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}
	calls0 := counter.calls.Load()
	var wg sync.WaitGroup
	for range brokers {
		wg.Go(func() {
			_, err := cl.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: proto.CloneOf(slot)})
			switch _, rej := rpc.Rejection(err); {
			case err == nil:
				booked.Add(1)
			case rej:
				rejected.Add(1)
			default:
				fail(fmt.Errorf("reserve: %w", err))
			}
		})
	}
	for i := range cyclers {
		wg.Go(func() {
			shape := proto.CloneOf(slot)
			shape.Parts[0].Resource = "cpu"
			for j := range 5 {
				h, err := cl.Hold(ctx, &ledgerdv1.HoldRequest{Shape: shape})
				if err != nil {
					fail(fmt.Errorf("hold: %w", err))
					return
				}
				end := cl.Commit
				if (i+j)%2 == 0 {
					end = cl.Abort
				}
				r, err := end(ctx, h.Id, "")
				if err != nil {
					fail(fmt.Errorf("commit/abort: %w", err))
					return
				}
				if g, err := cl.Get(ctx, h.Id); err != nil || g.State != r.State {
					fail(fmt.Errorf("get %s = %v, %v; want state %v", h.Id, g, err, r.State))
				}
			}
		})
	}
	wg.Wait()
	for _, err := range failures {
		t.Error(err)
	}
	if booked.Load() != capacity || booked.Load()+rejected.Load() != brokers {
		t.Fatalf("booked %d, rejected %d of %d brokers; want exactly %d booked", booked.Load(), rejected.Load(), brokers, capacity)
	}
	av, err := cl.Availability(ctx, &ledgerdv1.AvailabilityRequest{Resource: "gpu", From: slot.NotBefore, To: slot.Deadline})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range av.Blocks {
		if b.Free != 0 {
			t.Fatalf("free gpu %d in %v..%v after booking the whole window", b.Free, b.Start.AsTime(), b.End.AsTime())
		}
	}
	if n := counter.compressed.Load(); n != 0 {
		t.Errorf("%d Batch answers were compressed; batches ask for plain ones", n)
	}
	ops := int64(brokers + cyclers*5*3)
	if n := counter.calls.Load() - calls0; n >= ops {
		t.Fatalf("%d HTTP calls for %d operations: nothing was coalesced", n, ops)
	}
	t.Logf("%d operations in %d HTTP calls (%d Batch)", ops, counter.calls.Load()-calls0, counter.batches.Load())
}
