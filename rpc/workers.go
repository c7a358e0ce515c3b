package rpc

import (
	"sync"
	"time"
)

// opWorkers runs the operations of Batch calls on goroutines that outlive
// one operation. A goroutine starts with a small stack, and an operation's
// call chain (handler, fingerprint, ledger, cluster, result decoding) grows
// it several times, each growth copying every frame: with a fresh goroutine
// per operation that copying was about a twentieth of all CPU under load.
// A worker keeps its grown stack for the next operation.
//
// Go hands f to a worker that is idle at that moment, or else starts a new
// worker with f, so an operation never waits for another one to finish
// (the operations of a batch wait on each other through the pipeline, and
// a bounded pool could deadlock them). A worker that finds no work for
// opIdle exits, so the pool shrinks back to nothing when the API is idle.
// The zero value is usable: without a channel every f gets its own
// goroutine.
type opWorkers struct {
	// work is unbuffered: a send succeeds only when a worker waits.
	work chan func()
	// live counts the running workers (nil in the zero value): Wait
	// returns once every worker has gone idle for opIdle and exited.
	live *sync.WaitGroup
}

// opIdle is how long a worker waits for its next operation.
const opIdle = 2 * time.Second

func newOpWorkers() opWorkers {
	return opWorkers{work: make(chan func()), live: new(sync.WaitGroup)}
}

// Go runs f on an idle worker or a new one; it never blocks.
func (w *opWorkers) Go(f func()) {
	select {
	case w.work <- f:
	default:
		if w.live != nil {
			w.live.Add(1)
		}
		go w.loop(f)
	}
}

// Wait returns once no worker runs: each has been idle for opIdle.
func (w *opWorkers) Wait() {
	if w.live != nil {
		w.live.Wait()
	}
}

// loop runs f, then whatever it is handed next, until it has been idle for
// opIdle.
func (w *opWorkers) loop(f func()) {
	if w.live != nil {
		defer w.live.Done()
	}
	var idle *time.Timer
	for {
		f()
		f = nil // let f's captures go while waiting
		if idle == nil {
			idle = time.NewTimer(opIdle)
		} else {
			idle.Reset(opIdle)
		}
		select {
		case f = <-w.work:
		case <-idle.C:
			return
		}
	}
}
