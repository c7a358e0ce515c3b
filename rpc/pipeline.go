package rpc

import (
	"context"
	"slices"

	"github.com/ledgerd/ledgerd/cluster"
)

// BatchReplicator is a Replicator that can also propose several commands
// back to back and wait for them together; *cluster.Node implements it.
// ApplyBatch returns one result per command, in order, each with Apply's
// meaning.
type BatchReplicator interface {
	Replicator
	ApplyBatch(ctx context.Context, cmds [][]byte) []cluster.Result
}

// pipeliner is a Ledger that can run the operations of a batch through a
// pipeline.
type pipeliner interface {
	// pipeline returns a pipeline for n operations, or nil when the
	// ledger cannot pipeline.
	pipeline(n int) *pipeline
}

// pipeline gathers what the concurrent operations of one Batch ask of
// the Replicator. Once every unfinished operation is waiting, it serves
// all pending read barriers with one barrier, or else proposes all pending
// writes in one ApplyBatch in operation order; released operations carry
// on (a modify reads after its barrier, then writes) until all are done.
// Every operation must report done exactly once.
type pipeline struct {
	r      BatchReplicator
	n      int
	events chan pipeEvent
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

// pipeSlot is what bind puts in an operation's context.
type pipeSlot struct {
	p    *pipeline
	slot int
}

type pipeKey struct{}

func newPipeline(r BatchReplicator, n int) *pipeline {
	return &pipeline{r: r, n: n, events: make(chan pipeEvent, n)}
}

// bind returns the context for operation slot.
func (p *pipeline) bind(ctx context.Context, slot int) context.Context {
	return context.WithValue(ctx, pipeKey{}, pipeSlot{p: p, slot: slot})
}

// slotOf returns the pipeline slot ctx is bound to, if any.
func slotOf(ctx context.Context) (pipeSlot, bool) {
	s, ok := ctx.Value(pipeKey{}).(pipeSlot)
	return s, ok
}

// done reports that operation slot finished; nil-safe.
func (p *pipeline) done(slot int) {
	if p != nil {
		p.events <- pipeEvent{kind: pipeDone, slot: slot}
	}
}

// apply hands cmd to the pipeline and waits for its result.
func (s pipeSlot) apply(cmd []byte) ([]byte, error) {
	ch := make(chan cluster.Result, 1)
	s.p.events <- pipeEvent{kind: pipeApply, slot: s.slot, cmd: cmd, reply: ch}
	r := <-ch
	return r.Data, r.Err
}

// barrier waits for the batch's shared read barrier.
func (s pipeSlot) barrier() error {
	ch := make(chan cluster.Result, 1)
	s.p.events <- pipeEvent{kind: pipeBarrier, slot: s.slot, reply: ch}
	return (<-ch).Err
}

// run serves the operations until all are done; ctx bounds the barriers
// and writes it performs for them. nil-safe.
func (p *pipeline) run(ctx context.Context) {
	if p == nil {
		return
	}
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
		if barriers > 0 {
			err := p.r.ReadBarrier(ctx)
			for _, w := range waiting {
				if w.kind == pipeBarrier {
					w.reply <- cluster.Result{Err: err}
				}
			}
			waiting = applies
			continue
		}
		slices.SortFunc(applies, func(a, b pipeEvent) int { return a.slot - b.slot })
		cmds := make([][]byte, len(applies))
		for i, w := range applies {
			cmds[i] = w.cmd
		}
		for i, r := range p.r.ApplyBatch(ctx, cmds) {
			applies[i].reply <- r
		}
		waiting = nil
	}
}
