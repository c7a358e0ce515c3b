package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
)

// The ledger's FSM restores in stages through the node's runner: if its
// RestoreWith stopped matching stagedRestorer, the node would fall back to
// a one-goroutine restore without a word.
var _ stagedRestorer = (*fsm.FSM)(nil)

// TestRunConcurrently: every stage runs exactly once, the runner returns
// only after all of them, and they overlap (the first stage waits for the
// last one to start, which a runner that ran them in turn would never
// let happen).
func TestRunConcurrently(t *testing.T) {
	runConcurrently(nil)
	var ran [5]atomic.Int32
	lastStarted := make(chan struct{})
	stages := make([]func(), len(ran))
	for i := range stages {
		stages[i] = func() { ran[i].Add(1) }
	}
	stages[0] = func() {
		select {
		case <-lastStarted:
		case <-time.After(10 * time.Second):
			t.Error("the first stage waited 10s for the last one: stages do not overlap")
		}
		ran[0].Add(1)
	}
	stages[len(stages)-1] = func() {
		close(lastStarted)
		ran[len(ran)-1].Add(1)
	}
	runConcurrently(stages)
	for i := range ran {
		if n := ran[i].Load(); n != 1 {
			t.Errorf("stage %d ran %d times, want once", i, n)
		}
	}
}
