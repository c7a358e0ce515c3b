package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
)

// Coalescing: the API round trip of one call costs more CPU than the raft
// write behind it, so concurrent Hold, Reserve, Commit, Abort, Cancel,
// Modify and Get calls to one node travel together as Batch calls. A call
// that finds no batch in flight to its node goes out at once (no added
// latency at low load); otherwise it queues and leaves with the next
// batch. That batch starts when one in flight returns, or earlier, while
// fewer than MaxInFlight are in flight, once the queue holds a fair share
// of the node's callers (see shareLocked). Each operation is answered
// with exactly what its unary call would return, so retries, leader
// routing and errors work on it one by one as for a unary call (see do).

// errNoBatch means the node cannot take this batch (it predates Batch, or
// its batch limit is lower than ours): the call goes out on its own.
var errNoBatch = errors.New("client: batch not served by this node")

// batcher queues one node's coalesced calls.
type batcher struct {
	// rpc is the node's client for Batch calls.
	rpc         ledgerdv1connect.ReservationServiceClient
	maxBatch    int
	maxInFlight int
	// unsupported is set once the node answered Batch with Unimplemented.
	unsupported atomic.Bool

	mu       sync.Mutex
	queue    []*pendingOp
	inFlight int
	// inFlightOps counts the calls of the batches in flight.
	inFlightOps int
	// peak is the most calls seen outstanding (queued or in flight)
	// since a batch last returned, and lastPeak the same over the
	// interval before: together the node's recent callers (see
	// shareLocked).
	peak, lastPeak int
}

// pendingOp is one call waiting for its batch.
type pendingOp struct {
	ctx  context.Context
	op   *ledgerdv1.BatchOperation
	done chan struct{}
	res  *ledgerdv1.BatchResult
	err  error
}

// submit queues op, starts a batch when fewer than maxInFlight are in
// flight, and waits for op's result or ctx.
func (b *batcher) submit(ctx context.Context, op *ledgerdv1.BatchOperation) (*ledgerdv1.BatchResult, error) {
	p := &pendingOp{ctx: ctx, op: op, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	batch := b.startLocked()
	b.mu.Unlock()
	if len(batch) == 1 && batch[0] == p {
		// The call leaves alone (what happens at low load): it makes the
		// Batch call itself, with its own context, instead of handing it
		// to a goroutine and waiting to be woken. Only this call waits
		// on it, so nothing needs the detached context of send.
		b.call(ctx, batch)
		if ctx.Err() != nil && p.err != nil {
			return nil, ctxError(ctx)
		}
		return p.res, p.err
	}
	if batch != nil {
		go b.send(batch)
	}
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return nil, ctxError(ctx)
	}
}

// ctxError is what a unary call returns when its context ends first.
func ctxError(ctx context.Context) error {
	code := connect.CodeCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = connect.CodeDeadlineExceeded
	}
	return connect.NewError(code, ctx.Err())
}

// startLocked takes the next batch off the queue, leaving out calls whose
// caller has gone, when a batch may start: none is in flight, or fewer
// than maxInFlight are and the queue holds at least shareLocked calls.
func (b *batcher) startLocked() []*pendingOp {
	b.peak = max(b.peak, len(b.queue)+b.inFlightOps)
	if b.inFlight >= b.maxInFlight || (b.inFlight > 0 && len(b.queue) < b.shareLocked()) {
		return nil
	}
	var batch []*pendingOp
	n := 0
	for _, p := range b.queue {
		n++
		if p.ctx.Err() != nil {
			continue
		}
		batch = append(batch, p)
		if len(batch) == b.maxBatch {
			break
		}
	}
	b.queue = b.queue[n:]
	if len(batch) == 0 {
		return nil
	}
	b.inFlight++
	b.inFlightOps += len(batch)
	return batch
}

// shareLocked is how many calls must wait before a batch starts beside
// those in flight: the node's recent callers divided among maxInFlight
// batches (at most maxBatch, at least one).
//
// Why: each batch costs a raft round and an API round trip whatever its
// size, and a lone batch in flight leaves the leader's raft idle during
// its API round trip and the API idle during its raft round. Several
// batches in flight overlap the two, but sent as soon as a slot is free
// they split the callers into many small batches: with 64 callers and
// two slots that cost 15-25 % more CPU per operation than one slot. A
// fair share keeps the callers in maxInFlight cohorts of equal size, each
// batch as large as the rounds in flight allow. The callers are counted
// over the last two intervals between returns (peak, lastPeak) because
// right after a return the answered callers have not queued again yet.
func (b *batcher) shareLocked() int {
	callers := max(b.peak, b.lastPeak)
	return min(max((callers+b.maxInFlight-1)/b.maxInFlight, 1), b.maxBatch)
}

// batchContext is the context of one Batch call: detached from the
// callers (one leaving must not cancel the others' operations), with the
// latest of their deadlines when all have one.
func batchContext(batch []*pendingOp) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, p := range batch {
		d, ok := p.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// send makes one Batch call for batch in a context of its own (see
// batchContext), hands every call its answer, then starts the next batch
// if calls are waiting.
func (b *batcher) send(batch []*pendingOp) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	b.call(ctx, batch)
}

// call is send in ctx.
func (b *batcher) call(ctx context.Context, batch []*pendingOp) {
	ops := make([]*ledgerdv1.BatchOperation, len(batch))
	for i, p := range batch {
		ops[i] = p.op
	}
	resp, err := b.rpc.Batch(ctx, connect.NewRequest(&ledgerdv1.BatchRequest{Operations: ops}))
	var leader string
	switch {
	case err != nil:
		var ce *connect.Error
		if errors.As(err, &ce) {
			leader = ce.Meta().Get(leaderHeader)
		}
		if connect.CodeOf(err) == connect.CodeUnimplemented {
			b.unsupported.Store(true)
			err = errNoBatch
		} else if connect.CodeOf(err) == connect.CodeInvalidArgument {
			// The node's batch limit is below ours.
			err = errNoBatch
		}
	case len(resp.Msg.Results) != len(batch):
		err = connect.NewError(connect.CodeInternal, fmt.Errorf("client: batch of %d operations answered with %d results", len(batch), len(resp.Msg.Results)))
	default:
		leader = resp.Header().Get(leaderHeader)
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else if e := resp.Msg.Results[i].GetError(); e != nil {
			p.err = batchError(e, leader)
		} else {
			p.res = resp.Msg.Results[i]
		}
		close(p.done)
	}
	b.mu.Lock()
	b.inFlight--
	b.inFlightOps -= len(batch)
	b.lastPeak, b.peak = b.peak, len(b.queue)+b.inFlightOps
	next := b.startLocked()
	b.mu.Unlock()
	if next != nil {
		go b.send(next)
	}
}

// batchError rebuilds the error a unary call would have returned: the
// same code, message and details, sent by the server, with the leader
// header the batch response carried.
func batchError(e *ledgerdv1.BatchError, leader string) error {
	ce := connect.NewWireError(connect.Code(e.Code), errors.New(e.Message))
	for _, d := range e.Details {
		if ed, err := connect.NewErrorDetail(d); err == nil {
			ce.AddDetail(ed)
		}
	}
	if leader != "" {
		ce.Meta().Set(leaderHeader, leader)
	}
	return ce
}

// coalesced answers one call on ep: through ep's batcher when coalescing
// is on and the node takes batches, else (or when the node turns out not
// to) by the unary call. pick extracts the answer from a batch result.
func coalesced[T any](ctx context.Context, ep *endpoint, op *ledgerdv1.BatchOperation, pick func(*ledgerdv1.BatchResult) (T, bool), unary func() (T, error)) (T, error) {
	b := ep.batch
	if b == nil || b.unsupported.Load() {
		return unary()
	}
	res, err := b.submit(ctx, op)
	if errors.Is(err, errNoBatch) {
		return unary()
	}
	if err != nil {
		var zero T
		return zero, err
	}
	v, ok := pick(res)
	if !ok {
		return v, connect.NewError(connect.CodeInternal, fmt.Errorf("client: batch answered %T for a %T", res.GetResult(), op.GetOp()))
	}
	return v, nil
}
