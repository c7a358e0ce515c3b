package rpc

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestOpWorkersNeverWait: operations that wait on each other all run (a
// bounded pool would deadlock them, as the operations of one batch wait
// on the pipeline together), an idle worker takes the next operation,
// and every worker exits once idle for opIdle (synctest fails the test if
// a goroutine outlives the bubble).
func TestOpWorkersNeverWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOpWorkers()
		const n = 100
		var started, ran atomic.Int64
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			w.Go(func() {
				defer wg.Done()
				started.Add(1)
				<-release // each waits until all have started
				ran.Add(1)
			})
		}
		synctest.Wait()
		if got := started.Load(); got != n {
			t.Fatalf("%d of %d operations started while the others waited", got, n)
		}
		close(release)
		wg.Wait()
		if got := ran.Load(); got != n {
			t.Fatalf("%d of %d operations ran", got, n)
		}
		synctest.Wait() // every worker now waits for work
		// The next operation goes to one of the idle workers: the send
		// succeeds only when a worker receives it.
		done := make(chan struct{})
		select {
		case w.work <- func() { close(done) }:
		default:
			t.Fatal("no idle worker took an operation")
		}
		<-done
		// Waiting for the workers to exit blocks the bubble durably, so
		// its fake clock moves on to the workers' idle timers.
		start := time.Now()
		w.Wait()
		if idle := time.Since(start); idle < opIdle {
			t.Fatalf("the workers exited after %s idle, want %s", idle, opIdle)
		}
		select {
		case w.work <- func() {}:
			t.Fatal("a worker still waits after opIdle")
		default:
		}
	})
}

// TestOpWorkersZeroValue: without a channel every operation gets its own
// goroutine.
func TestOpWorkersZeroValue(t *testing.T) {
	var w opWorkers
	done := make(chan struct{})
	w.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("operation did not run within 10s")
	}
}
