package testwait

import (
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeT records a Fatalf instead of ending the test that uses it.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestUntil(t *testing.T) {
	var n atomic.Int32
	Until(t, 2*time.Second, "three checks", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times, want 3", n.Load())
	}
	f := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		Until(f, 50*time.Millisecond, "never", func() bool { return false })
	}()
	if !strings.HasPrefix(f.failed, "waited") {
		t.Fatalf("a condition that never holds did not fail the test: %q", f.failed)
	}
}

func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		start := time.Now()
		Every(t, time.Minute, time.Second, "three checks", func() bool { return n.Add(1) >= 3 })
		// The first check is immediate, the next two one period apart
		// each (fake time: exact).
		if n.Load() != 3 || time.Since(start) != 2*time.Second {
			t.Fatalf("checked %d times over %s, want 3 over 2s", n.Load(), time.Since(start))
		}
	})
}
