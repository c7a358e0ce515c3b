package threadcpu

import (
	"runtime"
	"testing"
)

// TestNowAdvances: on Linux the clock is available and runs while the
// locked goroutine computes.
func TestNowAdvances(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, ok := Now()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("the thread CPU clock is unavailable on Linux")
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	x := 0
	for i := range 20_000_000 {
		x ^= i
	}
	b, _ := Now()
	if b <= a {
		t.Fatalf("thread CPU time did not advance: %v -> %v (x=%d)", a, b, x)
	}
}
