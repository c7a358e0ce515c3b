package cluster

import (
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
}

// pauseGC turns the collector off until the matching resumeGC. A memory
// limit (GOMEMLIMIT, -memory-limit) still starts cycles.
func pauseGC() {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	if gcPause.n == 0 {
		gcPause.saved = debug.SetGCPercent(-1)
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
