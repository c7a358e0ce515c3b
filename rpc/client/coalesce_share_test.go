package client

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

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
	res := make([]*ledgerdv1.BatchResult, hb.size)
	for i := range res {
		res[i] = &ledgerdv1.BatchResult{}
	}
	return connect.NewResponse(&ledgerdv1.BatchResponse{Results: res}), nil
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
