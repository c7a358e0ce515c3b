//go:build !linux

package seed

import "time"

// threadCPU is unavailable off Linux: replays report wall time only.
func threadCPU() (time.Duration, bool) { return 0, false }
