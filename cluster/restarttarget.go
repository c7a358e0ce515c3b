package cluster

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ledgerd/ledgerd/internal/threadcpu"
)

// A restart target. After a crash a node restores its newest snapshot and
// replays the log applied since; the first costs about the same per
// snapshot byte every time, the second about the same per command byte as
// applying it did. A fixed volume trigger (SnapshotLogBytes) has to be
// chosen for one state size: small enough for a node with a million
// reservations, whose restore alone takes most of a few seconds, it makes
// a node with ten thousand snapshot every few seconds for nothing; large
// enough for that one, it lets the big node's replay run long. With
// Config.RestartTarget the node measures both costs on itself and keeps
// the volume trigger's limit at what the target leaves for the replay:
//
//	limit = (target - restartOverhead - 1.2 × restore) / replay cost per byte
//
// where restore is the newest snapshot's size times the restore cost per
// byte this node last measured (planned a fifth slower: see
// restoreSlowdownPercent), and the replay cost is a moving average
// of the CPU time applying took per command byte (applyClock). A small
// state gets a limit so high that raft's own trigger comes first; a state
// whose restore alone leaves nothing of the target gets minVolumeLimit,
// and the loop then never spends more than half its time snapshotting
// (snaplog.go).

// restartOverhead is what a start costs besides the restore and the
// replay: opening the stores, starting raft, hearing from a leader (about
// 0.05-0.3 s measured on a 2-core machine).
const restartOverhead = 300 * time.Millisecond

// defaultRestoreNsPerByte is the restore cost assumed before this node has
// restored a snapshot of at least minRestoreSample bytes: 10 ns per
// snapshot byte, a little above the 7-8.5 ns a 1M-reservation restore
// measured on a 2-vCPU machine.
const defaultRestoreNsPerByte = 10.0

// minRestoreSample is the smallest restore whose cost per byte is
// trusted: below it fixed costs dominate.
const minRestoreSample = 1 << 20

// minApplySample is how many command bytes must have been applied before
// the replay cost is estimated at all; until then the target sets no
// limit.
const minApplySample = 256 << 10

// minVolumeLimit and maxVolumeLimit bound the derived limit.
const (
	minVolumeLimit = 1 << 20
	maxVolumeLimit = 1 << 30
)

// restartModel is what a node measures of its own restart cost. The FSM
// goroutine records applies, restores and persisted snapshots; the
// volume loop reads them.
type restartModel struct {
	target time.Duration // 0: no target

	// restoreNs and restoreBytes are the last restore's wall time and
	// snapshot size.
	restoreNs, restoreBytes atomic.Int64
	// snapBytes is the size of the newest snapshot this node persisted
	// or restored: what a restart would restore.
	snapBytes atomic.Int64
	// applyNs and applyBytes add up the FSM's apply time and the
	// command bytes it applied, since start.
	applyNs, applyBytes atomic.Int64
	// replayNsPerByte is the moving average the volume loop keeps of
	// the apply cost (float64 bits; 0: not yet estimated), for the limit
	// and the estimate gauge.
	replayNsPerByte atomic.Uint64
}

func newRestartModel(target time.Duration) *restartModel {
	if target <= 0 {
		return nil
	}
	return &restartModel{target: target}
}

// applyClock times one apply for the model. Where the thread CPU clock
// exists it counts the CPU time of the FSM goroutine, locked to its
// thread meanwhile, not the wall time: under load the applying goroutine
// waits for a core and for the state lock, which a node replaying its log
// after a crash, before it serves, mostly does not (on a 2-core machine
// at 10k live under 64 clients, wall time gave a limit of 18-20 MB after
// 10 s, CPU time 23 MB, on every server).
type applyClock struct {
	// locked: the goroutine is locked to its thread and cpu is that
	// thread's CPU time at the start; otherwise wall is the start.
	locked bool
	cpu    time.Duration
	wall   time.Time
}

// startApply starts timing an apply on the calling goroutine; every call
// must be followed by stopApply on the same goroutine.
func (m *restartModel) startApply() applyClock {
	if m == nil {
		return applyClock{}
	}
	runtime.LockOSThread()
	if cpu, ok := threadcpu.Now(); ok {
		return applyClock{cpu: cpu, locked: true}
	}
	runtime.UnlockOSThread()
	return applyClock{wall: time.Now()}
}

// stopApply returns how long the apply took (0 without a model).
func (m *restartModel) stopApply(c applyClock) time.Duration {
	if m == nil {
		return 0
	}
	if c.locked {
		// The clock that was read at the start reads again on the
		// same thread; were it to fail, the apply counts as free.
		cpu, _ := threadcpu.Now()
		runtime.UnlockOSThread()
		return max(cpu-c.cpu, 0)
	}
	return time.Since(c.wall)
}

// applied records an apply of n command bytes that took d.
func (m *restartModel) applied(n uint64, d time.Duration) {
	if m == nil || n == 0 {
		return
	}
	m.applyNs.Add(int64(d))
	m.applyBytes.Add(int64(n))
}

// restored records a restore of a snapshot of n bytes that took d.
func (m *restartModel) restored(n int64, d time.Duration) {
	if m == nil {
		return
	}
	m.restoreNs.Store(int64(d))
	m.restoreBytes.Store(n)
	m.snapBytes.Store(n)
}

// persisted records a snapshot of n bytes written.
func (m *restartModel) persisted(n int64) {
	if m != nil {
		m.snapBytes.Store(n)
	}
}

// restoreEstimate is how long restoring the newest snapshot would take.
func (m *restartModel) restoreEstimate() time.Duration {
	perByte := defaultRestoreNsPerByte
	if b := m.restoreBytes.Load(); b >= minRestoreSample {
		perByte = float64(m.restoreNs.Load()) / float64(b)
	}
	return time.Duration(perByte * float64(m.snapBytes.Load()))
}

// replayCost returns the replay cost per byte the loop last estimated.
func (m *restartModel) replayCost() float64 {
	return math.Float64frombits(m.replayNsPerByte.Load())
}

// estimate is how long a restart would take now, with since command
// bytes to replay (0 before the replay cost is known).
func (m *restartModel) estimate(since uint64) time.Duration {
	if m == nil {
		return 0
	}
	return restartOverhead + m.restoreEstimate() + time.Duration(m.replayCost()*float64(since))
}

// replayAverage folds the applies since the previous call into m's moving
// average of the apply cost per byte (replayNsPerByte). It is called by
// the volume loop only, which keeps the counters it last read.
type replayAverage struct {
	prevNs, prevBytes int64
}

// update reads m's counters and returns the new average (0: not enough
// measured yet). Each second of applies weighs a quarter.
func (a *replayAverage) update(m *restartModel) float64 {
	ns, bytes := m.applyNs.Load(), m.applyBytes.Load()
	dNs, dBytes := ns-a.prevNs, bytes-a.prevBytes
	avg := m.replayCost()
	switch {
	case avg == 0 && bytes >= minApplySample:
		avg = float64(ns) / float64(bytes)
	case avg != 0 && dBytes >= minApplySample/16:
		avg = 0.75*avg + 0.25*float64(dNs)/float64(dBytes)
	default:
		return avg
	}
	a.prevNs, a.prevBytes = ns, bytes
	m.replayNsPerByte.Store(math.Float64bits(avg))
	return avg
}

// restoreSlowdownPercent is how much slower than the last one measured
// the next restore is planned to be. The restore's cost per byte moves
// between minutes on a shared machine: at 1M reservations on a 2-vCPU VM
// a crash restore ran 9-21 % slower per byte than the graceful one minutes
// before it, and a tail sized from the faster one took the restart past
// its target (3.02 s against 3 s).
const restoreSlowdownPercent = 20

// volumeLimit is the log volume whose replay, after a restore that takes
// restore (planned restoreSlowdownPercent longer), still ends within
// target: (target - restartOverhead - planned restore) / replayNsPerByte,
// at least minVolumeLimit and at most maxVolumeLimit. met reports whether
// the target leaves any time for a replay at all. A zero replay cost (not
// measured yet) gives no limit.
func volumeLimit(target, restore time.Duration, replayNsPerByte float64) (limit uint64, met bool) {
	if replayNsPerByte <= 0 {
		return 0, true
	}
	budget := target - restartOverhead - (restore + restore*restoreSlowdownPercent/100)
	if budget <= 0 {
		return minVolumeLimit, false
	}
	b := float64(budget) / replayNsPerByte
	return uint64(min(max(b, minVolumeLimit), maxVolumeLimit)), true
}
