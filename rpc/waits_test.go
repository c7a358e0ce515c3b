package rpc_test

import (
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
)

// waitFSM waits until cond holds on f, re-checking after every entry f
// applies (its Notify channel), and fails the test after timeout.
func waitFSM(t *testing.T, f *fsm.FSM, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := f.Notify()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// waitUntil waits until cond holds, for state only visible through the
// API (membership, leadership): cond is asked again on every tick of a
// short ticker, and the test fails after timeout with cond's last
// explanation.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %s (last: %s)", what, timeout, last)
		}
	}
}
