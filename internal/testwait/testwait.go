// Package testwait waits in tests for a condition that another goroutine
// or process makes true: it re-checks on a ticker and fails the test,
// naming what it waited for, when the deadline passes. It is test support
// only: product code must not import it.
package testwait

import (
	"testing"
	"time"
)

// Interval is how often Until re-checks its condition.
const Interval = 20 * time.Millisecond

// Until returns once cond reports true, re-checking every Interval, and
// fails the test with what (and the time waited) if timeout passes first.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Every(t, timeout, Interval, what, cond)
}

// Every is Until re-checking every `every` instead of every Interval, for
// conditions that are costly to check (a CLI process, a cluster-wide
// query) on a machine that is already busy.
func Every(t testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			t.Fatalf("waited %s for %s", timeout, what)
		case <-tick.C:
			if cond() {
				return
			}
		}
	}
}
