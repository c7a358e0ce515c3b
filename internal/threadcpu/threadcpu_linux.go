//go:build linux

package threadcpu

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now returns the CPU time consumed so far by the calling OS thread. It
// reports false if the clock cannot be read.
func Now() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
