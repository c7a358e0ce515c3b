//go:build !linux

package threadcpu

import "time"

// Now is unavailable off Linux: it reports false.
func Now() (time.Duration, bool) { return 0, false }
