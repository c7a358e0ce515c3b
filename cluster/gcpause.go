package cluster

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// gcPause holds the collector off while any restore's build stages run.
// debug.SetGCPercent is one setting for the whole process, and a process
// may hold several nodes (tests, the recovery benchmark's prefill): two
// overlapping restores that each saved and put back the setting could
// leave it off for good (the second saves the first's "off"). So the
// first pause saves the setting and the last resume puts it back.
var gcPause struct {
	mu    sync.Mutex
	n     int
	saved int

	// lowered: the setting is lowerGCOnce's until the end of the next
	// cycle, and back is the one to put back then. gen numbers the
	// lowerings; ended is closed when the current one ends.
	lowered bool
	back    int
	gen     uint64
	ended   chan struct{}
}

// pauseGC turns the collector off until the matching resumeGC. A memory
// limit (GOMEMLIMIT, -memory-limit) still starts cycles.
func pauseGC() {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	if gcPause.n == 0 {
		gcPause.saved = debug.SetGCPercent(-1)
		if gcPause.lowered {
			gcPause.saved = gcPause.back
		}
	}
	gcPause.n++
}

// resumeGC ends one pauseGC; the last one puts the setting back.
func resumeGC() {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	gcPause.n--
	if gcPause.n == 0 {
		debug.SetGCPercent(gcPause.saved)
	}
}

// afterRestoreGCPercent is the GOGC setting of the first cycle after a
// restore's closing collection (lowerGCOnce). That collection sets the heap
// goal to twice the restored state (GOGC=100), nearly all of it long-lived:
// the garbage of the first load could then grow the heap by a whole
// state's size before the next cycle. At 1M reservations that took the
// agent from 1.13 GiB resident after the restore to 1.31 GiB after 10 s
// of load; with 50 the first cycle comes at 1.5 times the state and the
// peak under load stayed at the restore's own. The cycle after it has its
// goal set from the state plus the load's live data, with the setting the
// process had.
const afterRestoreGCPercent = 50

// gcSentinel is allocated only to be collected: its finalizer runs after
// the first cycle that finds it unreachable. It holds a pointer so that it
// is not batched with other small objects by the tiny allocator.
type gcSentinel struct{ _ *int }

// lowerGCOnce sets GOGC to percent until the end of the next collection
// cycle, then puts back the setting the process had. It does nothing when
// the setting is already at or below percent (or off), while a restore
// holds the collector off (that restore's resume sets the goal), or while
// an earlier lowering is in force.
func lowerGCOnce(percent int) {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	if gcPause.n != 0 || gcPause.lowered {
		return
	}
	cur := debug.SetGCPercent(percent)
	if cur < 0 || cur <= percent {
		debug.SetGCPercent(cur)
		return
	}
	gcPause.lowered, gcPause.back = true, cur
	gcPause.gen++
	gcPause.ended = make(chan struct{})
	gen := gcPause.gen
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) { endLoweredGC(gen) })
}

// endLoweredGC ends lowering gen, if it is still in force: it puts back
// the setting, or hands it to the pause in progress to put back.
func endLoweredGC(gen uint64) {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	if !gcPause.lowered || gcPause.gen != gen {
		return
	}
	gcPause.lowered = false
	if gcPause.n == 0 {
		debug.SetGCPercent(gcPause.back)
	} else {
		gcPause.saved = gcPause.back
	}
	close(gcPause.ended)
}

// SetGCPercent sets the process's GOGC the way restores expect it to be
// changed: while a restore holds the collector off (pauseGC) or lowered
// for its first cycle (lowerGCOnce), percent becomes the setting they put
// back when they end, instead of undoing them now; otherwise it applies at
// once. Code outside this package that tunes GOGC (the agent's
// gc_headroom) goes through it: a plain debug.SetGCPercent during a
// restore's build stages would start the collector they hold off, and be
// overwritten when the restore ends.
func SetGCPercent(percent int) {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	switch {
	case gcPause.n > 0:
		gcPause.saved = percent
	case gcPause.lowered:
		gcPause.back = percent
	default:
		debug.SetGCPercent(percent)
	}
}
