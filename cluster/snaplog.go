package cluster

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Snapshots by log volume. Raft's own trigger counts entries and looks
// only every SnapshotInterval (stretched up to twice as long), so the log
// a crashed node replays grows with the write rate times that interval,
// and an entry holding a group of 64 admissions counts as one. Replay
// costs CPU per byte of command data, roughly (the ledger's crash tail at
// 1M live: 79 us per KiB, whether entries hold one operation or a group),
// so this trigger counts the bytes of the entries applied since the last
// snapshot and asks raft for a snapshot as soon as they reach
// Config.SnapshotLogBytes. The replay after a crash then stays near that
// volume plus what arrives while one snapshot is written. With a restart
// target (restarttarget.go) the limit follows the node's own measured
// restore and replay costs instead of one fixed volume.

// logVolume counts the command bytes the FSM applied since its last
// snapshot or restore. Apply and Snapshot run on raft's FSM goroutine;
// the trigger loop reads the count and is woken when it crosses the
// limit.
type logVolume struct {
	// fixed is Config.SnapshotLogBytes (0: none); limit is the limit in
	// force (0: off): fixed, or lower when a restart target derives a
	// lower one (restarttarget.go).
	fixed uint64
	limit atomic.Uint64
	since atomic.Uint64
	due   chan struct{} // buffered 1: a wake-up for the trigger loop
}

func newLogVolume(fixed uint64) *logVolume {
	v := &logVolume{fixed: fixed, due: make(chan struct{}, 1)}
	v.limit.Store(fixed)
	return v
}

// setLimit puts derived (0: none) in force beside the fixed limit, the
// lower of the two, and wakes the loop if the count is already there.
func (v *logVolume) setLimit(derived uint64) {
	l := v.fixed
	if derived > 0 && (l == 0 || derived < l) {
		l = derived
	}
	v.limit.Store(l)
	v.add(0)
}

// applied adds the entries' command bytes and wakes the trigger loop when
// the count reaches the limit; it returns the bytes. It counts with the
// trigger off too, for the ledgerd_log_bytes_since_snapshot gauge.
func (v *logVolume) applied(logs ...*raft.Log) uint64 {
	if v == nil {
		return 0
	}
	var n uint64
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			n += uint64(len(l.Data))
		}
	}
	v.add(n)
	return n
}

// add counts n bytes and wakes the trigger loop (at most one wake-up
// pending) once the count reaches the limit.
func (v *logVolume) add(n uint64) {
	if l := v.limit.Load(); v.since.Add(n) >= l && l > 0 {
		select {
		case v.due <- struct{}{}:
		default:
		}
	}
}

// captured resets the count when the FSM captures a snapshot (or restores
// one) and returns what it was, for giveBack should the snapshot fail.
func (v *logVolume) captured() uint64 {
	if v == nil {
		return 0
	}
	return v.since.Swap(0)
}

// giveBack returns the bytes of a snapshot that was captured but not
// persisted: they still have to be replayed after a crash.
func (v *logVolume) giveBack(n uint64) {
	if v != nil {
		v.add(n)
	}
}

// snapshotByVolumeLoop takes a snapshot whenever the applied log volume
// reaches the limit in force, one at a time, until shutdown. With a
// restart target it also derives that limit once a second from what the
// node measured (restarttarget.go), and after each snapshot by volume
// waits as long as that snapshot took before the next, so that a target
// the node cannot meet does not keep it snapshotting all the time.
func (n *Node) snapshotByVolumeLoop() {
	v, m := n.fsm.volume, n.fsm.restart
	if v == nil || (v.fixed == 0 && m == nil) {
		return
	}
	var tick <-chan time.Time
	if m != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	var avg replayAverage
	warned := false
	// notBefore is when the next snapshot by volume may start.
	var notBefore time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick:
			n.retarget(m, &avg, &warned)
			continue
		case <-v.due:
		}
		// The count may have been reset by a snapshot raft took on its
		// own since the wake-up.
		if l, since := v.limit.Load(), v.since.Load(); l == 0 || since < l {
			continue
		}
		if wait := time.Until(notBefore); wait > 0 {
			if !n.sleep(wait) {
				return
			}
			if v.since.Load() < v.limit.Load() {
				continue
			}
		}
		start := time.Now()
		err := n.waitFuture(n.ctx, "snapshot by log volume", n.raft.Snapshot())
		switch {
		case err == nil:
			took := time.Since(start)
			n.snapByVolume.Add(1)
			n.log.Info("snapshot by log volume taken", "applied", n.fsm.Applied(), "took", took.Round(time.Millisecond))
			if m != nil {
				notBefore = time.Now().Add(took)
			}
		case errors.Is(err, ErrShutdown), n.ctx.Err() != nil:
			return
		case errors.Is(err, raft.ErrNothingNewToSnapshot):
		default:
			// A configuration change not yet applied, or a failed
			// persist (counted in the snapshot failure metric): try
			// again at the next wake-up, after a pause so that a disk
			// that keeps failing is not hammered.
			n.log.Warn("snapshot by log volume failed; will retry", "err", err)
			if !n.sleep(time.Second) {
				return
			}
			// Wake this loop again while the count is still at the
			// limit (no apply may come to do it).
			v.add(0)
		}
	}
}

// retarget puts in force the limit the restart target leaves for the
// replay, from the costs measured so far, and says once when the target
// cannot be met (and once when it can again).
func (n *Node) retarget(m *restartModel, avg *replayAverage, warned *bool) {
	restore := m.restoreEstimate()
	limit, met := volumeLimit(m.target, restore, avg.update(m))
	n.fsm.volume.setLimit(limit)
	switch {
	case !met && !*warned:
		*warned = true
		n.log.Warn("restart target cannot be met: restoring the newest snapshot alone takes about as long; snapshotting by log volume often, at most half the time",
			"restart_target", m.target, "restore_estimate", restore.Round(time.Millisecond),
			"snapshot_bytes", m.snapBytes.Load(), "limit_bytes", limit)
	case met && *warned:
		*warned = false
		n.log.Info("restart target within reach again", "restart_target", m.target,
			"restore_estimate", restore.Round(time.Millisecond), "limit_bytes", limit)
	}
}
