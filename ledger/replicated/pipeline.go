package replicated

import (
	"github.com/ledgerd/ledgerd/ledger"

	"context"
	"slices"

	"github.com/ledgerd/ledgerd/cluster"
)

// BatchLog is a Log that can also propose several commands
// back to back and wait for them together; *cluster.Node implements it.
// ApplyBatch returns one result per command, in order, each with Apply's
// meaning.
type BatchLog interface {
	Log
	ApplyBatch(ctx context.Context, cmds [][]byte) []cluster.Result
}

// pipeline implements ledger.Pipeline on a BatchLog: it gathers what the
// concurrent operations of one batch ask of the log. Once every
// unfinished operation is waiting, it proposes all pending writes in one
// ApplyBatch in operation order, or, when only read barriers wait, serves
// them with one barrier; released operations carry on (a modify reads
// after its barrier, then writes) until all are done.
//
// Read barriers that wait beside writes are answered by the writes'
// round when this node's FSM applied every one of them as the leader
// (each result carries the FSM's Value): an entry this leader proposed
// after the reads arrived and saw committed orders them after every
// write acknowledged before they arrived, as a read through the log
// would, so the reads that follow see those writes without a heartbeat
// round of their own. Otherwise (a write refused, or forwarded to
// another leader and applied there first) they take a barrier after
// the writes.
type pipeline struct {
	r      BatchLog
	n      int
	events chan pipeEvent
	// replies holds one reply channel per slot, made on its first call
	// and only touched by that slot's operation: an operation's log calls
	// are sequential and each is answered exactly once before its next,
	// so a slot's channel is free again when its call returns.
	replies []chan cluster.Result
	// op makes the ledger view of one operation.
	op func(Log) ledger.Ledger
}

type pipeKind int

const (
	pipeApply pipeKind = iota
	pipeBarrier
	pipeDone
)

type pipeEvent struct {
	kind  pipeKind
	slot  int
	cmd   []byte
	reply chan cluster.Result
}

// pipeSlot is the Log of one operation: it hands the operation's
// log calls to the pipeline.
type pipeSlot struct {
	p    *pipeline
	slot int
}

var (
	_ Log       = pipeSlot{}
	_ resultLog = pipeSlot{}
)

func newPipeline(r BatchLog, n int, op func(Log) ledger.Ledger) *pipeline {
	return &pipeline{r: r, n: n, events: make(chan pipeEvent, n), replies: make([]chan cluster.Result, n), op: op}
}

// Op returns the Ledger operation slot must use.
func (p *pipeline) Op(slot int) ledger.Ledger { return p.op(pipeSlot{p: p, slot: slot}) }

// Done reports that operation slot finished.
func (p *pipeline) Done(slot int) {
	p.events <- pipeEvent{kind: pipeDone, slot: slot}
}

// reply returns the slot's reply channel. One channel per slot is enough
// because an operation makes its log calls (Apply, ReadBarrier) one after
// another and waits for each answer: nothing in the ledger calls the log
// concurrently within one operation. An operation that did would read
// another call's answer, so it would need a channel per call again.
func (s pipeSlot) reply() chan cluster.Result {
	ch := s.p.replies[s.slot]
	if ch == nil {
		ch = make(chan cluster.Result, 1)
		s.p.replies[s.slot] = ch
	}
	return ch
}

// Apply hands cmd to the pipeline and waits for its result.
func (s pipeSlot) Apply(ctx context.Context, cmd []byte) ([]byte, error) {
	r := s.ApplyResult(ctx, cmd)
	return r.Data, r.Err
}

// ApplyResult is Apply returning the whole cluster.Result (resultLog).
func (s pipeSlot) ApplyResult(_ context.Context, cmd []byte) cluster.Result {
	ch := s.reply()
	s.p.events <- pipeEvent{kind: pipeApply, slot: s.slot, cmd: cmd, reply: ch}
	return <-ch
}

// ReadBarrier waits for the batch's shared read barrier.
func (s pipeSlot) ReadBarrier(context.Context) error {
	ch := s.reply()
	s.p.events <- pipeEvent{kind: pipeBarrier, slot: s.slot, reply: ch}
	return (<-ch).Err
}

// Run serves the operations until all are done; ctx bounds the barriers
// and writes it performs for them. nil-safe.
func (p *pipeline) Run(ctx context.Context) {
	live := p.n
	var waiting []pipeEvent
	for live > 0 {
		e := <-p.events
		if e.kind == pipeDone {
			live--
		} else {
			waiting = append(waiting, e)
		}
		if live == 0 || len(waiting) < live {
			continue
		}
		var applies []pipeEvent
		barriers := 0
		for _, w := range waiting {
			if w.kind == pipeBarrier {
				barriers++
			} else {
				applies = append(applies, w)
			}
		}
		led := false
		if len(applies) > 0 {
			slices.SortFunc(applies, func(a, b pipeEvent) int { return a.slot - b.slot })
			cmds := make([][]byte, len(applies))
			for i, w := range applies {
				cmds[i] = w.cmd
			}
			res := p.r.ApplyBatch(ctx, cmds)
			led = appliedHere(res)
			for i, r := range res {
				applies[i].reply <- r
			}
		}
		if barriers > 0 {
			var err error
			if !led {
				err = p.r.ReadBarrier(ctx)
			}
			for _, w := range waiting {
				if w.kind == pipeBarrier {
					w.reply <- cluster.Result{Err: err}
				}
			}
		}
		waiting = waiting[:0]
	}
}

// appliedHere reports whether this node's FSM applied every command of
// res as the leader that proposed it: each has a Value, which the cluster
// sets only for an entry this node proposed, saw committed and applied.
func appliedHere(res []cluster.Result) bool {
	for _, r := range res {
		if r.Err != nil || r.Value == nil {
			return false
		}
	}
	return len(res) > 0
}
