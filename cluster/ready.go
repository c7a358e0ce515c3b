package cluster

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
)

// defaultReadyLag is Config.ReadyLag's default; see there for why.
const defaultReadyLag = 250

// readyPoll is how often a follower refreshes the leader's commit index
// for Ready.
const readyPoll = 250 * time.Millisecond

// readyLoop latches the node ready once a leader is known and the local
// FSM has applied every entry acknowledged before it asked (catchUp);
// from then on it keeps a follower's view of the leader's commit index
// fresh, for the lag Ready checks.
func (n *Node) readyLoop() {
	// Try at once: a restarted one-server cluster is often leader already.
	for first := true; first || n.sleep(100*time.Millisecond); first = false {
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		err := n.catchUp(ctx)
		cancel()
		if err == nil {
			n.ready.Store(true)
			// Every entry of the start's log tail is applied: a restore's
			// collection waiting for them need wait no longer.
			n.fsm.startPendingCollection(math.MaxUint64)
			applied, restored := n.fsm.Applied(), n.fsm.restored.Load()
			n.log.Info("node ready", "since_start", time.Since(n.started).Round(time.Millisecond),
				"applied", applied, "snapshot_restored", restored, "replayed_or_received", applied-min(applied, restored))
			break
		}
	}
	for n.sleep(readyPoll) {
		n.refreshLeaderCommit()
	}
}

// catchUp returns once this node has applied every entry that was
// acknowledged before it asked. A follower takes a read barrier. A
// leader waits for its term's barrier (leaderDuties): once that is
// applied, so is every entry of an earlier term, and an entry of its own
// term is applied here before it is acknowledged. A read barrier would
// also wait for entries committed after it asked, which on a leader
// restarted after a long stop is the first tick: it fires every timer of
// the downtime (seconds at 1M reservations) and is nothing any client was
// told of.
func (n *Node) catchUp(ctx context.Context) error {
	for {
		if n.IsLeader() {
			if t := n.readable.Load(); t != 0 && t == n.raft.CurrentTerm() {
				return nil
			}
		} else if id, rpc := n.Leader(); id != "" && rpc != "" {
			return n.ReadBarrier(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: catch up: %w", context.Cause(ctx))
		case <-n.ctx.Done():
			return fmt.Errorf("cluster: catch up: %w", ErrShutdown)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// refreshLeaderCommit asks the leader for its commit index (a follower's
// own commit index never exceeds its last log entry, so it cannot show
// how far replication itself is behind). When the leader cannot be asked
// the last answer stays; Ready also compares with the local commit index.
func (n *Node) refreshLeaderCommit() {
	if n.IsLeader() {
		return
	}
	id, rpc := n.Leader()
	if id == "" || rpc == "" {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, min(n.cfg.ForwardTimeout, 2*time.Second))
	defer cancel()
	st, err := n.fetchStatus(ctx, rpc)
	if err != nil || st.ID != id {
		n.log.Debug("ready: leader status unavailable", "leader", id, "err", err)
		return
	}
	n.leaderCommit.Store(st.CommitIndex)
}

// Ready reports whether this node can serve: it caught up with the leader
// once since it started, it knows a leader now (from its own point of
// view: a node cut off from a majority stops knowing one within an
// election timeout), and it has at most Config.ReadyLag committed entries
// left to apply. It backs /readyz and the ledgerd_ready gauge, and is
// cheap: a follower's view of the leader's commit index is refreshed in
// the background every 250 ms.
func (n *Node) Ready() bool {
	ok, _ := n.readiness()
	return ok
}

// NotReadyReason says why Ready is false, or "" when it is true.
func (n *Node) NotReadyReason() string {
	_, why := n.readiness()
	return why
}

func (n *Node) readiness() (bool, string) {
	switch {
	case n.closed.Load():
		return false, "shutting down"
	case !n.ready.Load():
		return false, "starting: no leader yet or still catching up"
	}
	if _, lid := n.raft.LeaderWithID(); lid == "" {
		return false, "no leader known"
	}
	commit := n.raft.CommitIndex()
	if !n.IsLeader() {
		commit = max(commit, n.leaderCommit.Load())
	}
	if lag := commit - min(commit, n.appliedForLag()); lag > uint64(n.cfg.ReadyLag) {
		return false, "catching up: " + strconv.FormatUint(lag, 10) + " committed entries not yet applied"
	}
	return true, ""
}

// appliedForLag is the index this node has applied for the purpose of
// lag: the FSM's applied index, or raft's applied index when every
// command raft handed over has been applied (the entries after the last
// command are no-ops and barriers, which never reach the FSM and would
// otherwise count as lag forever).
func (n *Node) appliedForLag() uint64 {
	applied, handed := n.fsm.Applied(), n.raft.AppliedIndex()
	if handed > applied && n.lastCommandAtOrBelow(handed) <= applied {
		return handed
	}
	return applied
}
