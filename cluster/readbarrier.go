package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// ReadBarrier makes the next local read linearizable: when it returns nil
// the local FSM reflects every write acknowledged before the call. On the
// leader it uses the read-index recipe (barrier once per term, then note
// the commit index, confirm leadership with a heartbeat round, wait for the
// FSM to apply that index); a follower asks the leader for that index over
// HTTP and waits until it has applied it locally. Callers that accept stale
// data simply skip it.
func (n *Node) ReadBarrier(ctx context.Context) error {
	ctx, cancel := n.bound(ctx)
	defer cancel()
	deadline := time.Now().Add(n.cfg.LeaderWait)
	var lastErr error
	for {
		if n.closed.Load() {
			return fmt.Errorf("cluster: read barrier: %w", ErrShutdown)
		}
		var index uint64
		var err error
		moved := n.leaderMoved()
		if n.raft.State() == raft.Leader {
			index, err = n.readIndex(ctx)
		} else if id, rpc := n.Leader(); id != "" && rpc != "" {
			index, err = n.fetchReadIndex(ctx, rpc, moved)
		} else {
			err = ErrNoLeader
		}
		if err == nil {
			if err := n.waitIndex(ctx, index); err != nil {
				return fmt.Errorf("cluster: read barrier: %w", err)
			}
			return nil
		}
		if !(errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader)) {
			return fmt.Errorf("cluster: read barrier: %w", err)
		}
		lastErr = err
		if errors.Is(err, errLeaderMoved) {
			// The leader we asked was replaced while we waited: give the
			// election that follows a full LeaderWait.
			if d := time.Now().Add(n.cfg.LeaderWait); d.After(deadline) {
				deadline = d
			}
		}
		if err := n.waitLeaderChange(ctx, deadline); err != nil {
			return fmt.Errorf("cluster: read barrier: %w (last attempt: %w)", err, lastErr)
		}
	}
}

// readIndex returns an index such that, once applied locally, the FSM
// reflects every write acknowledged before the call. Leader only.
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	// Wait for this term's barrier: until it completes, the commit index
	// may not yet cover entries committed by earlier leaders.
	for n.readable.Load() == 0 || n.readable.Load() != n.raft.CurrentTerm() {
		if n.raft.State() != raft.Leader {
			return 0, ErrNotLeader
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-n.ctx.Done():
			return 0, ErrShutdown
		case <-time.After(5 * time.Millisecond):
		}
	}
	index := n.raft.CommitIndex()
	if err := n.waitFuture(ctx, "verify leader", n.raft.VerifyLeader()); err != nil {
		return 0, err
	}
	return index, nil
}

// waitIndex waits until the local FSM reflects every entry up to index.
// Only commands reach the FSM, so it first waits for Raft to hand index to
// the FSM goroutine, then for the FSM to apply the last command at or
// below index (entries already compacted are covered by a snapshot the
// FSM holds).
func (n *Node) waitIndex(ctx context.Context, index uint64) error {
	// Commands wake us through the FSM wrapper; entries that never reach
	// the FSM (no-ops, barriers) are caught by a short poll.
	sleep := 500 * time.Microsecond
	for n.raft.AppliedIndex() < index {
		n.fsm.mu.Lock()
		changed := n.fsm.changed
		n.fsm.mu.Unlock()
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for index %d (raft applied %d): %w", index, n.raft.AppliedIndex(), ctx.Err())
		case <-n.ctx.Done():
			t.Stop()
			return ErrShutdown
		case <-changed:
		case <-t.C:
		}
		t.Stop()
		sleep = min(2*sleep, 5*time.Millisecond)
	}
	return n.fsm.waitApplied(ctx, n.ctx.Done(), n.lastCommandAtOrBelow(index))
}

func (n *Node) lastCommandAtOrBelow(index uint64) uint64 {
	first, err := n.logs.FirstIndex()
	if err != nil {
		return index
	}
	var l raft.Log
	for i := index; i >= first && i > 0; i-- {
		if err := n.logs.GetLog(i, &l); err != nil {
			return 0 // compacted into a snapshot the FSM has restored or taken
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return 0
}
