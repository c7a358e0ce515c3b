package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

// stopRounds is how many rounds TestStopNeverHangs runs; the default
// suite runs a few, a stress run many:
//
//	go test -race -tags hashicorpmetrics -run TestStopNeverHangs -cluster.stop-rounds 200 ./cluster/
var stopRounds = flag.Int("cluster.stop-rounds", 3, "rounds of TestStopNeverHangs")

// stopDeadline is how long any call may take to return once the nodes it
// runs on have stopped; far above anything a healthy run needs, far below
// the maxWait bound a lost future would hit.
const stopDeadline = 20 * time.Second

// TestStopNeverHangs stops the servers of a three-node cluster, crashed
// or gracefully, while writers keep batches queued in raft's apply
// channel, readers wait on read barriers, and the leader is being asked
// to step down: no Apply, ReadBarrier, TransferLeadership or stop may
// hang (raft does not answer futures still queued when it shuts down).
// Each round picks its stop plan from a printed seed.
func TestStopNeverHangs(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (rounds %d)", seed, *stopRounds)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	start := time.Now()
	for round := range *stopRounds {
		graceful := []bool{rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0}
		transfer := rng.IntN(2) == 0
		after := 1 + rng.IntN(300)
		ok := t.Run(fmt.Sprintf("round=%d", round), func(t *testing.T) {
			stopRound(t, graceful, transfer, after)
		})
		if !ok {
			t.Fatalf("round %d failed (seed %d, graceful %v, transfer %v, after %d entries)", round, seed, graceful, transfer, after)
		}
	}
	t.Logf("%d rounds in %s", *stopRounds, time.Since(start).Round(time.Millisecond))
}

// stopRound runs one round: the stops start once the leader has applied
// `after` entries, so rounds hit different points of the write stream.
func stopRound(t *testing.T, graceful []bool, transfer bool, after int) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	// Load: every node writes batches (no deadline: a lost future would
	// hang such a caller until maxWait) and reads through barriers.
	var load sync.WaitGroup
	stopLoad := make(chan struct{})
	for i, tn := range c.nodes {
		node := tn.node
		load.Add(2)
		go func() {
			defer load.Done()
			for k := 0; ; k++ {
				select {
				case <-stopLoad:
					return
				default:
				}
				batch := make([][]byte, 32)
				for j := range batch {
					batch[j] = fmt.Appendf(nil, "w%d-%d-%d|x", i, k, j)
				}
				res := node.ApplyBatch(context.Background(), batch)
				if errors.Is(res[0].Err, ErrShutdown) {
					return
				}
			}
		}()
		go func() {
			defer load.Done()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				if err := node.ReadBarrier(context.Background()); errors.Is(err, ErrShutdown) {
					return
				}
			}
		}()
	}
	// Let the writers fill the apply channel.
	waitFor(t, 10*time.Second, "writes under way", func() bool { return len(l.fsm.entries()) >= after })
	var stops sync.WaitGroup
	if transfer {
		stops.Add(1)
		go func() {
			defer stops.Done()
			_ = l.node.TransferLeadership(context.Background())
		}()
	}
	for i, tn := range c.nodes {
		stops.Add(1)
		go func() {
			defer stops.Done()
			if graceful[i] {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = tn.node.Shutdown(ctx)
			} else {
				_ = tn.node.stop()
			}
		}()
	}
	mustReturn(t, &stops, "stopping the nodes")
	close(stopLoad)
	mustReturn(t, &load, "writers and readers after the stop")
	for _, tn := range c.nodes {
		tn.running = false
		_ = tn.srv.Close()
	}
}

// mustReturn waits for wg up to stopDeadline and fails with every
// goroutine's stack when it does not come.
func mustReturn(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopDeadline):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatalf("%s: still waiting after %s (goroutines above)", what, stopDeadline)
	}
}
