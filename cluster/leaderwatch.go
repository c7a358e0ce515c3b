package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// Re-routing. A follower that forwards a write to the leader, or asks it
// for a read index, must not wait out its deadline on a leader that has
// stopped answering (a long GC pause, a stalled disk, a frozen VM) while
// the rest of the cluster elects another one. The node therefore watches
// its own Raft view of the leadership and cancels every in-flight call to
// the leader as soon as that view changes: a new leader observed, the
// leader forgotten (a follower's heartbeat timeout fired: the old
// leader's lease, as this follower grants it, lapsed), or this node
// changing state (it campaigns, wins or steps down). The caller then
// sends the request again to whoever leads now:
//
//   - a read index is always safe to ask again;
//   - a write that may already be in the old leader's log is sent again
//     only when Config.Idempotent says the command carries an idempotency
//     key: the state machine's idempotency record then answers the first
//     result if the first attempt committed, and the command is applied
//     once either way. Anything else keeps ErrOutcomeUnknown.

// errLeaderMoved is the cause of a call to the leader cancelled because
// this node's view of the leadership changed while it waited.
var errLeaderMoved = errors.New("the leadership moved while waiting for the leader")

// errForwardDeadline is the cause of a call to the leader that ran out of
// Config.ForwardTimeout while the leader stayed the same.
var errForwardDeadline = errors.New("no answer from the leader within the forward deadline")

// leaderWatch hands out a channel that is closed at the next change of
// this node's view of the leadership, then replaced.
type leaderWatch struct {
	mu sync.Mutex
	ch chan struct{}
}

func newLeaderWatch() *leaderWatch { return &leaderWatch{ch: make(chan struct{})} }

// next returns the channel closed at the next change.
func (w *leaderWatch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// changed closes the current channel and starts a new one.
func (w *leaderWatch) changed() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// leaderWatchLoop turns raft's leader and state observations into
// leaderWatch changes until the node stops. The observer does not block
// raft: when its buffer is full an observation is dropped, which only
// matters if every one of a burst is, and the buffer holds 64.
func (n *Node) leaderWatchLoop() {
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	defer n.raft.DeregisterObserver(obs)
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-ch:
			n.moved.changed()
		}
	}
}

// leaderMoved returns a channel closed at the next change of this node's
// view of the leadership. Take it before reading the leader to call, so
// that a change in between is not missed.
func (n *Node) leaderMoved() <-chan struct{} { return n.moved.next() }

// toLeader bounds a call to the leader: the returned context ends with
// ctx, after Config.ForwardTimeout (cause errForwardDeadline), or as soon
// as moved is closed (cause errLeaderMoved). Call cancel when done.
func (n *Node) toLeader(ctx context.Context, moved <-chan struct{}) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	tctx, tcancel := context.WithTimeoutCause(cctx, n.cfg.ForwardTimeout, errForwardDeadline)
	done := make(chan struct{})
	go func() {
		select {
		case <-moved:
			cancel(errLeaderMoved)
		case <-done:
		case <-n.ctx.Done():
			cancel(ErrShutdown)
		}
	}()
	return tctx, func() {
		close(done)
		tcancel()
		cancel(context.Canceled)
	}
}
