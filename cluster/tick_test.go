package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

// fakeDue is the FSM side of the due-time ticker, driven by the test:
// set is an applied entry that moves the next due time, tick is the
// leader's tick entry, which (with clearOnTick) does all due work.
type fakeDue struct {
	mu          sync.Mutex
	at          int64
	ok          bool
	clearOnTick bool
	changed     chan struct{}
	ticks       []time.Time // when each tick was applied
	reads       int         // nextDue calls
}

func newFakeDue() *fakeDue { return &fakeDue{changed: make(chan struct{}), clearOnTick: true} }

// applied closes the change channel, as trackedFSM does; f.mu is held.
func (f *fakeDue) applied() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeDue) set(at time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.ok = at.UnixMilli(), ok
	f.applied()
}

func (f *fakeDue) nextDue() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.at, f.ok
}

func (f *fakeDue) changedCh() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeDue) tick(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ticks = append(f.ticks, time.Now())
	if f.clearOnTick && f.ok && time.Now().UnixMilli() >= f.at {
		f.ok = false
	}
	f.applied()
	return nil
}

// short renders at most five tick times, for failure messages.
func short(ticks []time.Time) string {
	if len(ticks) > 5 {
		return fmt.Sprintf("%d ticks, first %v", len(ticks), ticks[:5])
	}
	return fmt.Sprint(ticks)
}

func (f *fakeDue) state() (ticks []time.Time, reads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ticks), f.reads
}

// startDueTicker runs a dueTicker over f in the current synctest bubble
// and returns a function that cancels it (leadership lost) and checks
// that it returned.
func startDueTicker(t *testing.T, f *fakeDue, minGap time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		dueTicker{nextDue: f.nextDue, now: time.Now, changed: f.changedCh, tick: f.tick, minGap: minGap}.run(ctx)
	}()
	return func() {
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("ticker still runs after its context ended")
		}
	}
}

// TestDueTicker drives the leader's due-time ticker with a fake FSM under
// testing/synctest, so the clock is fake and every assertion is about
// exact instants, not about how long a sleep happened to take.
func TestDueTicker(t *testing.T) {
	const gap = 100 * time.Millisecond

	t.Run("nothing due: no tick, no polling", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeDue()
			stop := startDueTicker(t, f, gap)
			defer stop()
			time.Sleep(24 * time.Hour)
			f.set(time.Time{}, false) // an entry applied after the clock moved
			synctest.Wait()
			time.Sleep(24 * time.Hour)
			ticks, reads := f.state()
			if len(ticks) != 0 {
				t.Fatalf("%d ticks while nothing was due, want none", len(ticks))
			}
			if reads != 2 {
				t.Fatalf("NextDue read %d times in 48h with one applied entry, want 2 (start, entry)", reads)
			}
		})
	})

	t.Run("due in the past: one tick at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			f := newFakeDue()
			f.set(start.Add(-time.Second), true)
			stop := startDueTicker(t, f, gap)
			defer stop()
			synctest.Wait()
			if ticks, _ := f.state(); len(ticks) != 1 || !ticks[0].Equal(start) {
				t.Fatalf("ticks %s, want one at the start %v", short(ticks), start)
			}
			time.Sleep(time.Hour)
			if ticks, _ := f.state(); len(ticks) != 1 {
				t.Fatalf("%d ticks after the due work was done, want 1", len(ticks))
			}
		})
	})

	t.Run("due in the future: tick at that time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			f := newFakeDue()
			f.set(start.Add(90*time.Second), true) // many recheck periods away
			stop := startDueTicker(t, f, gap)
			defer stop()
			time.Sleep(5 * time.Minute)
			if ticks, _ := f.state(); len(ticks) != 1 || !ticks[0].Equal(start.Add(90*time.Second)) {
				t.Fatalf("ticks %s, want one at %v", short(ticks), start.Add(90*time.Second))
			}
		})
	})

	t.Run("an applied entry that moves NextDue earlier re-arms", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			f := newFakeDue()
			f.set(start.Add(10*time.Minute), true)
			stop := startDueTicker(t, f, gap)
			defer stop()
			time.Sleep(time.Minute + time.Second)
			// Due half a recheck period from now: only the re-arm on the
			// applied entry ticks at that very instant.
			f.set(start.Add(time.Minute+time.Second+dueRecheck/2), true)
			time.Sleep(time.Minute)
			want := start.Add(time.Minute + time.Second + dueRecheck/2)
			if ticks, _ := f.state(); len(ticks) != 1 || !ticks[0].Equal(want) {
				t.Fatalf("ticks %s, want one at %v", short(ticks), want)
			}
			time.Sleep(10 * time.Minute) // past the first due time, now done
			if ticks, _ := f.state(); len(ticks) != 1 {
				t.Fatalf("%d ticks, want 1", len(ticks))
			}
		})
	})

	t.Run("never more often than the minimum gap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			f := newFakeDue()
			f.clearOnTick = false // work stays due: ticks as often as allowed
			f.set(start.Add(-time.Hour), true)
			stop := startDueTicker(t, f, gap)
			defer stop()
			time.Sleep(5*gap + gap/2)
			ticks, _ := f.state()
			var want []time.Time
			for i := range 6 {
				want = append(want, start.Add(time.Duration(i)*gap))
			}
			if !slices.EqualFunc(ticks, want, time.Time.Equal) {
				t.Fatalf("ticks at %s, want %v", short(ticks), want)
			}
		})
	})

	t.Run("stops when leadership ends while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeDue()
			f.set(time.Now().Add(time.Hour), true)
			stop := startDueTicker(t, f, gap)
			time.Sleep(time.Minute)
			stop()
			if ticks, _ := f.state(); len(ticks) != 0 {
				t.Fatalf("%d ticks, want none", len(ticks))
			}
		})
	})
}

// dueKV is kvFSM with a next due time: "due|<ms>" sets it, a tick whose
// leader timestamp has reached it clears it. order records every entry
// ("tick" or the payload) in apply order.
type dueKV struct {
	*kvFSM
	mu    sync.Mutex
	at    int64
	ok    bool
	order []string
	reads atomic.Int64
}

func (f *dueKV) Apply(l *raft.Log) any {
	s := string(l.Data)
	var stamp int64
	if i := strings.LastIndex(s, "|t="); i >= 0 {
		stamp, _ = strconv.ParseInt(s[i+3:], 10, 64)
	}
	f.mu.Lock()
	switch {
	case strings.HasPrefix(s, "tick"):
		if f.ok && stamp >= f.at {
			f.ok = false
		}
		f.order = append(f.order, "tick")
	case strings.HasPrefix(s, "due|"):
		f.at, _ = strconv.ParseInt(strings.Split(s, "|")[1], 10, 64)
		f.ok = true
		f.order = append(f.order, "due")
		f.mu.Unlock()
		return []byte("due")
	default:
		_, payload, _ := strings.Cut(strings.Split(s, "|t=")[0], "|")
		f.order = append(f.order, payload)
	}
	f.mu.Unlock()
	return f.kvFSM.Apply(l)
}

func (f *dueKV) nextDue() (int64, bool) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at, f.ok
}

func (f *dueKV) entries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.order)
}

// fakeClock is a wall clock that moves only when the test moves it.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time               { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) add(d time.Duration)          { c.ms.Add(d.Milliseconds()) }
func (c *fakeClock) millis(d time.Duration) int64 { return c.ms.Load() + d.Milliseconds() }

// TestLeaderTicksWhenDue: a real one-server cluster whose FSM reports a
// next due time ticks only when that time has come by the leader's clock
// (Config.Now, here a fake clock), once, and re-arms when an applied
// entry makes work due earlier.
func TestLeaderTicksWhenDue(t *testing.T) {
	clock := &fakeClock{}
	clock.ms.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	var due *dueKV
	c := &tcluster{t: t}
	tn := c.add(0, func(cfg *Config) {
		cfg.Dev = true
		cfg.Now = clock.Now
		cfg.Tick = func() []byte { return []byte("tick") }
		cfg.NextDue = func() (int64, bool) { return due.nextDue() }
		cfg.TickInterval = 10 * time.Millisecond
	})
	tn.wrap = func(kv *kvFSM) raft.FSM {
		due = &dueKV{kvFSM: kv}
		return due
	}
	c.start(tn)
	t.Cleanup(c.stopAll)
	c.leader()
	// reevaluated waits until the ticker has read NextDue since reads
	// was taken, i.e. after the entries applied before that.
	reevaluated := func(reads int64) {
		waitFor(t, 5*time.Second, "the ticker to read NextDue again", func() bool { return due.reads.Load() > reads })
	}

	// Nothing due: markers around a clock jump, no tick between them.
	apply(t, tn, "m1|m1")
	clock.add(time.Hour)
	r := due.reads.Load()
	apply(t, tn, "m2|m2")
	reevaluated(r)
	apply(t, tn, "m3|m3")
	readEntries(t, tn)
	if got, want := due.entries(), []string{"m1", "m2", "m3"}; !slices.Equal(got, want) {
		t.Fatalf("entries %q with nothing due, want %q (no tick)", got, want)
	}

	// Due in the past: one tick, which does the work; then none.
	apply(t, tn, fmt.Sprintf("due|%d", clock.millis(-time.Second)))
	waitFor(t, 5*time.Second, "a tick for work due in the past", func() bool { return slices.Contains(due.entries(), "tick") })
	r = due.reads.Load()
	clock.add(time.Hour)
	apply(t, tn, "m4|m4")
	reevaluated(r)
	apply(t, tn, "m5|m5")
	readEntries(t, tn)
	if got, want := due.entries(), []string{"m1", "m2", "m3", "due", "tick", "m4", "m5"}; !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q (exactly one tick)", got, want)
	}

	// Due in an hour (the timer is armed for up to dueRecheck), then an
	// entry makes it due now: the tick comes at once, not at the recheck.
	r = due.reads.Load()
	apply(t, tn, fmt.Sprintf("due|%d", clock.millis(time.Hour)))
	reevaluated(r)
	apply(t, tn, fmt.Sprintf("due|%d", clock.millis(-time.Millisecond)))
	waitFor(t, 5*time.Second, "a tick after NextDue moved earlier", func() bool {
		return len(due.entries()) == 10
	})
	readEntries(t, tn)
	if got, want := due.entries(), []string{"m1", "m2", "m3", "due", "tick", "m4", "m5", "due", "due", "tick"}; !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
}
