package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
)

// heldBatches is a node whose Batch calls wait until the test releases
// them, so that a test sees which batches the batcher starts and when.
type heldBatches struct {
	ledgerdv1connect.ReservationServiceClient // only Batch is called
	started                                   chan *heldBatch
}

// heldBatch is one Batch call waiting for release.
type heldBatch struct {
	size    int
	release chan struct{}
}

func (h *heldBatches) Batch(ctx context.Context, req *connect.Request[ledgerdv1.BatchRequest]) (*connect.Response[ledgerdv1.BatchResponse], error) {
	hb := &heldBatch{size: len(req.Msg.Operations), release: make(chan struct{})}
	h.started <- hb
	select {
	case <-hb.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return emptyResults(hb.size), nil
}

// emptyResults answers a Batch of n operations with n empty results.
func emptyResults(n int) *connect.Response[ledgerdv1.BatchResponse] {
	res := make([]*ledgerdv1.BatchResult, n)
	for i := range res {
		res[i] = &ledgerdv1.BatchResult{}
	}
	return connect.NewResponse(&ledgerdv1.BatchResponse{Results: res})
}

// TestBatchesStartAtAFairShare follows a batcher step by step: which
// batches it starts, of what size, as calls arrive and batches return.
// Each step submits calls or releases a started batch, waits until every
// goroutine is blocked, and checks the sizes of the batches started since
// the step before.
func TestBatchesStartAtAFairShare(t *testing.T) {
	type step struct {
		submit  int // calls to submit
		release int // index (in start order) of a batch to release, or -1
		want    []int
	}
	cases := []struct {
		name        string
		maxInFlight int
		steps       []step
	}{
		{"one in flight: the queue waits for the return", 1, []step{
			{submit: 1, release: -1, want: []int{1}},
			{submit: 5, release: -1, want: nil},
			{release: 0, want: []int{5}},
			{submit: 2, release: -1, want: nil},
			{release: 1, want: []int{2}},
		}},
		{"two in flight: a second batch waits for half the callers", 2, []step{
			// A lone call goes at once; the second finds half of the two
			// callers waiting (itself) and goes beside it.
			{submit: 1, release: -1, want: []int{1}},
			{submit: 1, release: -1, want: []int{1}},
			// Both slots taken: eight calls queue.
			{submit: 8, release: -1, want: nil},
			// A return frees a slot; eight of ten callers wait, more
			// than half: they leave together.
			{release: 0, want: []int{8}},
			// The answered caller comes back: one of ten is not a fair
			// share, and no slot is free anyway.
			{submit: 1, release: -1, want: nil},
			// A slot frees, but one waiting call is under half of the
			// ten callers: it waits for company.
			{release: 1, want: nil},
			{submit: 1, release: -1, want: nil},
			// The eight return: with nothing in flight, whatever waits
			// goes at once.
			{release: 2, want: []int{2}},
			// Their callers come back: the fifth makes half of the ten.
			{submit: 4, release: -1, want: nil},
			{submit: 1, release: -1, want: []int{5}},
			// Both slots taken again.
			{submit: 3, release: -1, want: nil},
			// The two return: three waiting calls are under half.
			{release: 3, want: nil},
			// Their callers come back: five wait, a batch of five starts
			// beside the other five. The callers now travel in two
			// cohorts of five.
			{submit: 2, release: -1, want: []int{5}},
			{release: 4, want: nil},
			{submit: 4, release: -1, want: nil},
			{submit: 1, release: -1, want: []int{5}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				node := &heldBatches{started: make(chan *heldBatch, 64)}
				b := &batcher{rpc: node, maxBatch: 128, maxInFlight: tc.maxInFlight}
				var batches []*heldBatch
				answered := 0
				done := make(chan error, 256)
				for i, s := range tc.steps {
					for range s.submit {
						go func() {
							_, err := b.submit(context.Background(), &ledgerdv1.BatchOperation{})
							done <- err
						}()
					}
					if s.release >= 0 {
						if s.release >= len(batches) {
							t.Fatalf("step %d: release batch %d of %d started", i, s.release, len(batches))
						}
						close(batches[s.release].release)
					}
					synctest.Wait()
					var got []int
				drain:
					for {
						select {
						case hb := <-node.started:
							batches = append(batches, hb)
							got = append(got, hb.size)
						default:
							break drain
						}
					}
					if !slices.Equal(got, s.want) {
						t.Fatalf("step %d (submit %d, release %d): started batches of %v, want %v", i, s.submit, s.release, got, s.want)
					}
					for len(done) > 0 {
						if err := <-done; err != nil {
							t.Fatalf("step %d: call failed: %v", i, err)
						}
						answered++
					}
				}
				for _, hb := range batches {
					select {
					case <-hb.release:
					default:
						close(hb.release)
					}
				}
				synctest.Wait()
				for len(done) > 0 {
					if err := <-done; err != nil {
						t.Fatalf("call failed: %v", err)
					}
					answered++
				}
				submitted := 0
				for _, s := range tc.steps {
					submitted += s.submit
				}
				if answered != submitted {
					t.Fatalf("%d calls answered of %d", answered, submitted)
				}
			})
		})
	}
}

// timedBatches is a node whose Batch calls take a drawn service time (in
// a synctest bubble's fake clock) and that records how many were in
// flight at once and how large each was.
type timedBatches struct {
	ledgerdv1connect.ReservationServiceClient // only Batch is called
	service                                   func() time.Duration

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	sizes       []int
}

func (n *timedBatches) Batch(ctx context.Context, req *connect.Request[ledgerdv1.BatchRequest]) (*connect.Response[ledgerdv1.BatchResponse], error) {
	n.mu.Lock()
	n.inFlight++
	n.maxInFlight = max(n.maxInFlight, n.inFlight)
	n.sizes = append(n.sizes, len(req.Msg.Operations))
	d := n.service()
	n.mu.Unlock()
	// The service time passes on the synctest bubble's fake clock: it
	// models the batch's round, it does not wait for anything, and no
	// assertion depends on what else ran meanwhile.
	time.Sleep(d)
	n.mu.Lock()
	n.inFlight--
	n.mu.Unlock()
	return emptyResults(len(req.Msg.Operations)), nil
}

// simulated is what one simulated run of a batcher saw.
type simulated struct {
	sizes       []int // of each batch, in start order
	maxInFlight int   // batches in flight at once, at most
	answered    int   // calls answered without error
	leftover    string
}

// meanBatch is the mean number of calls per batch.
func (s simulated) meanBatch() float64 {
	total := 0
	for _, n := range s.sizes {
		total += n
	}
	return float64(total) / float64(len(s.sizes))
}

// simulate runs callers closed-loop callers of calls calls each against a
// batcher inside a synctest bubble: each caller thinks 0-1 ms between
// calls and each Batch takes 0.5-3 ms, drawn from a seeded generator on
// the bubble's fake clock, so no run depends on the machine's speed.
// Goroutines woken at the same fake instant may still interleave in
// another order and draw other times, so runs differ a little: over 40
// runs TestFairShareKeepsBatchesLarge's ratio ranged 0.76-0.85.
func simulate(t *testing.T, callers, calls, inFlight, maxBatch int) simulated {
	var out simulated
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(callers), uint64(inFlight*1000+maxBatch)))
		var rngMu sync.Mutex
		draw := func(lo, hi time.Duration) time.Duration {
			rngMu.Lock()
			defer rngMu.Unlock()
			return lo + time.Duration(rng.Int64N(int64(hi-lo)))
		}
		node := &timedBatches{service: func() time.Duration { return draw(500*time.Microsecond, 3*time.Millisecond) }}
		b := &batcher{rpc: node, maxBatch: maxBatch, maxInFlight: inFlight}
		var answered atomic.Int64
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for range calls {
					// Think time, on the bubble's fake clock like the
					// service time.
					time.Sleep(draw(0, time.Millisecond))
					if _, err := b.submit(context.Background(), &ledgerdv1.BatchOperation{}); err != nil {
						t.Errorf("call failed: %v", err)
						return
					}
					answered.Add(1)
				}
			})
		}
		wg.Wait()
		// A batch answers its calls before it gives its slot back, so
		// the last callers can return while its goroutine still holds
		// the slot: wait until every goroutine of the bubble is done or
		// blocked before reading the batcher's state.
		synctest.Wait()
		out = simulated{sizes: node.sizes, maxInFlight: node.maxInFlight, answered: int(answered.Load())}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.inFlight != 0 || b.inFlightOps != 0 || len(b.queue) != 0 {
			out.leftover = fmt.Sprintf("%d in flight (%d calls), %d queued", b.inFlight, b.inFlightOps, len(b.queue))
		}
	})
	return out
}

// TestBatcherInvariantsUnderLoad checks, over simulated closed-loop
// callers, what must hold whatever the timing: no more than maxInFlight
// batches at once, none larger than maxBatch, every call answered once
// and carried by exactly one batch, nothing left behind, and a lone
// caller never batched or delayed (one call per batch).
func TestBatcherInvariantsUnderLoad(t *testing.T) {
	const calls = 40
	for _, callers := range []int{1, 3, 16, 64} {
		for _, inFlight := range []int{1, 2, 3} {
			for _, maxBatch := range []int{4, 128} {
				t.Run(fmt.Sprintf("callers=%d/inflight=%d/maxbatch=%d", callers, inFlight, maxBatch), func(t *testing.T) {
					r := simulate(t, callers, calls, inFlight, maxBatch)
					if r.answered != callers*calls {
						t.Fatalf("%d calls answered, want %d", r.answered, callers*calls)
					}
					total := 0
					for _, n := range r.sizes {
						if n < 1 || n > maxBatch {
							t.Fatalf("a batch of %d calls (max %d)", n, maxBatch)
						}
						total += n
					}
					if total != callers*calls {
						t.Fatalf("batches carried %d calls for %d calls made", total, callers*calls)
					}
					if r.maxInFlight > inFlight {
						t.Fatalf("%d batches in flight at once, max %d", r.maxInFlight, inFlight)
					}
					if callers == 1 && len(r.sizes) != calls {
						t.Fatalf("a lone caller's %d calls went out in %d batches", calls, len(r.sizes))
					}
					if r.leftover != "" {
						t.Fatalf("the batcher was left with %s", r.leftover)
					}
				})
			}
		}
	}
}

// TestFairShareKeepsBatchesLarge compares, over the same simulated
// callers, the batches of two in flight with those of one: the fair
// share must keep them at least two thirds as large (it keeps them
// 0.76-0.85 as large). Starting a batch whenever a slot was free made
// them 0.59-0.60 as large here, which is what cost CPU per operation in
// the service.
func TestFairShareKeepsBatchesLarge(t *testing.T) {
	for _, callers := range []int{16, 64} {
		t.Run(fmt.Sprintf("callers=%d", callers), func(t *testing.T) {
			one := simulate(t, callers, 40, 1, 128).meanBatch()
			two := simulate(t, callers, 40, 2, 128).meanBatch()
			if two < one*2/3 {
				t.Fatalf("mean batch with two in flight %.1f calls, with one %.1f: want at least two thirds", two, one)
			}
		})
	}
}
