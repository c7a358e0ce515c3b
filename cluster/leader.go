package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// leadershipLoop starts the leader's duties when this node wins an
// election and stops them when it loses leadership.
func (n *Node) leadershipLoop() {
	var stop func()
	var done chan struct{}
	end := func() {
		if stop != nil {
			stop()
			n.waitDone(done, stopWait, "leader duties")
			stop = nil
		}
	}
	defer end()
	for {
		select {
		case <-n.ctx.Done():
			return
		case isLeader := <-n.raft.LeaderCh():
			end()
			n.readable.Store(0)
			if !isLeader {
				n.log.Info("lost leadership")
				continue
			}
			n.log.Info("became leader", "since_start", time.Since(n.started).Round(time.Millisecond))
			n.leaderSince.Store(time.Now().UnixNano())
			ctx, cancel := context.WithCancel(n.ctx)
			stop = cancel
			done = make(chan struct{})
			go func() {
				defer close(done)
				n.leaderDuties(ctx)
			}()
		}
	}
}

// leaderDuties runs while this node leads: it makes reads safe (barrier),
// runs autopilot, reconciles gossip with the Raft configuration from this
// one goroutine, and runs the tick (tickLoop) beside it.
func (n *Node) leaderDuties(ctx context.Context) {
	term := n.raft.CurrentTerm()
	for {
		// Not Barrier().Error(): with BatchApplyCh the barrier sits in a
		// buffered channel, and if raft shuts down before its leader loop
		// takes it nobody ever answers it, which hung Shutdown forever.
		// waitFuture also returns when ctx ends or after maxWait (its
		// waiter goroutine is then left on the dead future).
		err := n.waitFuture(ctx, "leader barrier", n.raft.Barrier(n.cfg.LeaderWait))
		if err == nil {
			break
		}
		n.log.Warn("leader barrier failed", "err", err)
		if n.raft.State() != raft.Leader || ctx.Err() != nil {
			return
		}
	}
	n.readable.Store(term)
	n.ap.Start(ctx)
	defer func() { n.waitDone(n.ap.Stop(), stopWait, "autopilot stop") }()

	// The tick runs beside the membership work so that neither waits for
	// the other; it ends with ctx, before autopilot stops.
	ticks := make(chan struct{})
	go func() {
		defer close(ticks)
		n.tickLoop(ctx)
	}()
	defer n.waitDone(ticks, stopWait, "leader tick")

	reconcile := time.NewTicker(n.cfg.ReconcileInterval)
	defer reconcile.Stop()
	n.reconcile(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.gossip.kick:
			n.reconcile(ctx)
		case <-reconcile.C:
			n.reconcile(ctx)
		case id := <-n.removeCh:
			n.removeFailed(ctx, id)
		}
	}
}
