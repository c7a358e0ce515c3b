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
// volume plus what arrives while one snapshot is written.

// logVolume counts the command bytes the FSM applied since its last
// snapshot or restore. Apply and Snapshot run on raft's FSM goroutine;
// the trigger loop reads the count and is woken when it crosses the
// limit.
type logVolume struct {
	limit uint64 // 0: off
	since atomic.Uint64
	due   chan struct{} // buffered 1: a wake-up for the trigger loop
}

func newLogVolume(limit uint64) *logVolume {
	return &logVolume{limit: limit, due: make(chan struct{}, 1)}
}

// applied adds the entries' command bytes and wakes the trigger loop when
// the count reaches the limit. It counts with the trigger off too, for
// the ledgerd_log_bytes_since_snapshot gauge.
func (v *logVolume) applied(logs ...*raft.Log) {
	if v == nil {
		return
	}
	var n uint64
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			n += uint64(len(l.Data))
		}
	}
	v.add(n)
}

// add counts n bytes and wakes the trigger loop (at most one wake-up
// pending) once the count reaches the limit.
func (v *logVolume) add(n uint64) {
	if v.since.Add(n) >= v.limit && v.limit > 0 {
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
// reaches Config.SnapshotLogBytes, one at a time, until shutdown.
func (n *Node) snapshotByVolumeLoop() {
	v := n.fsm.volume
	if v == nil || v.limit == 0 {
		return
	}
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-v.due:
		}
		// The count may have been reset by a snapshot raft took on its
		// own since the wake-up.
		if since := v.since.Load(); since < v.limit {
			continue
		}
		start := time.Now()
		err := n.waitFuture(n.ctx, "snapshot by log volume", n.raft.Snapshot())
		switch {
		case err == nil:
			n.snapByVolume.Add(1)
			n.log.Info("snapshot by log volume taken", "applied", n.fsm.Applied(), "took", time.Since(start).Round(time.Millisecond))
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
