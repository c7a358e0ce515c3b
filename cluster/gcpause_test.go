package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestGCPauseNests: the collector stays off until the last of several
// overlapping pauses ends, and then gets the setting it had before the
// first, whatever order they end in.
func TestGCPauseNests(t *testing.T) {
	waitStartCollections(t)
	orig := debug.SetGCPercent(137)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	pauseGC()
	pauseGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("during two pauses GOGC = %d, want -1 (off)", got)
	}
	resumeGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("with one pause left GOGC = %d, want -1 (off)", got)
	}
	resumeGC()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Fatalf("after both pauses GOGC = %d, want 137", got)
	}
}

// gatedRestorer's second stage call blocks until release is closed, with
// started closed when it begins: two restores can be made to overlap in
// their build stages.
type gatedRestorer struct{ started, release chan struct{} }

func (g *gatedRestorer) Apply(*raft.Log) any                 { return nil }
func (g *gatedRestorer) Snapshot() (raft.FSMSnapshot, error) { return nil, nil }
func (g *gatedRestorer) Restore(io.ReadCloser) error         { return nil }
func (g *gatedRestorer) RestoreWith(rc io.ReadCloser, run func([]func())) error {
	defer rc.Close()
	run([]func(){func() {}})
	run([]func(){func() { close(g.started); <-g.release }})
	return nil
}

func snapStream(index uint64) io.ReadCloser {
	var b [16]byte
	copy(b[:8], snapMagic[:])
	binary.BigEndian.PutUint64(b[8:], index)
	return io.NopCloser(bytes.NewReader(b[:]))
}

// TestOverlappingRestoresRestoreGC: two nodes of one process restoring at
// once, the first finishing first, leave the collector as it was (each
// used to save and put back the setting on its own, so the second put
// back the first's "off").
func TestOverlappingRestoresRestoreGC(t *testing.T) {
	waitStartCollections(t)
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	a := &gatedRestorer{make(chan struct{}), make(chan struct{})}
	b := &gatedRestorer{make(chan struct{}), make(chan struct{})}
	fa, fb := newTrackedFSM(a), newTrackedFSM(b)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	waitErr := func(ch <-chan error, what string) {
		t.Helper()
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	go func() { doneA <- fa.Restore(snapStream(5)) }()
	wait(a.started, "restore A's build stage")
	go func() { doneB <- fb.Restore(snapStream(7)) }()
	wait(b.started, "restore B's build stage")
	close(a.release)
	waitErr(doneA, "restore A")
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("with restore B still building GOGC = %d, want -1 (off)", got)
	}
	close(b.release)
	waitErr(doneB, "restore B")
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after both restores GOGC = %d, want 100", got)
	}
}

// preparingRestorer records the collector's setting when its RestoreWith
// begins, before it calls the stage runner (where the ledger's restore
// allocates the scan stages' outputs), and fails there when fail is set.
type preparingRestorer struct {
	gatedRestorer
	atStart int
	fail    bool
}

func (p *preparingRestorer) RestoreWith(rc io.ReadCloser, run func([]func())) error {
	defer rc.Close()
	p.atStart, _ = gcSetting()
	if p.fail {
		return errors.New("bad snapshot")
	}
	run([]func(){func() {}})
	run([]func(){func() {}})
	return nil
}

// TestRestorePausesGCBeforePreparing: the collector is already off when
// a staged restore begins preparing its stages, not only once the first
// stage runs (a cycle during the preparation marked its untouched outputs,
// and each page the scan then wrote took a second fault), and a restore
// refused during its preparation turns it back on.
func TestRestorePausesGCBeforePreparing(t *testing.T) {
	waitStartCollections(t)
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, fail := range []bool{false, true} {
		r := &preparingRestorer{fail: fail}
		err := newTrackedFSM(r).Restore(snapStream(9))
		if (err != nil) != fail {
			t.Fatalf("fail=%v: Restore returned %v", fail, err)
		}
		if r.atStart != -1 {
			t.Errorf("fail=%v: GOGC = %d as the restore began preparing, want -1 (off)", fail, r.atStart)
		}
		waitStartCollections(t)
		if got, _ := gcSetting(); got != 100 {
			t.Errorf("fail=%v: after the restore GOGC = %d, want 100", fail, got)
		}
	}
}

// TestStartRestoreCollectsAfterShortTail: a restore on the node's start
// with a short log tail returns with the collector still off and leaves
// its collection waiting for the tail: it starts once the tail's last
// entry is applied (or the node is ready, the wait runs out or the tail
// has allocated its budget), and turns the collector back on when it
// ends. With a long tail, on a follower's snapshot install (no start
// log), or when the log cannot be read, the restore returns with the
// collector on again.
func TestStartRestoreCollectsAfterShortTail(t *testing.T) {
	waitStartCollections(t)
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	const index = 1000
	// applyTail returns a release that applies the tail's entries one by
	// one and checks that the collection waits for the last. A case's
	// release, if set, runs after the restore; it may end the wait some
	// other way.
	applyTail := func(tail uint64) func(*testing.T, *trackedFSM) {
		return func(t *testing.T, f *trackedFSM) {
			for i := uint64(1); i <= tail; i++ {
				if f.collectAt.Load() == nil {
					t.Fatalf("the collection started with %d of %d tail entries applied", i-1, tail)
				}
				if got, _ := gcSetting(); got != -1 {
					t.Fatalf("GOGC = %d with %d of %d tail entries applied, want -1 (off)", got, i-1, tail)
				}
				if i%2 == 0 {
					f.Apply(&raft.Log{Index: index + i, Type: raft.LogCommand})
				} else {
					f.ApplyBatch([]*raft.Log{{Index: index + i, Type: raft.LogCommand}})
				}
			}
		}
	}
	for _, tc := range []struct {
		name    string
		last    func() (uint64, error)
		after   bool
		release func(*testing.T, *trackedFSM)
		wait    time.Duration
	}{
		{"no tail", func() (uint64, error) { return index, nil }, true, nil, 0},
		{"log behind snapshot", func() (uint64, error) { return 10, nil }, true, nil, 0},
		{"short tail", func() (uint64, error) { return index + 5, nil }, true, applyTail(5), 0},
		{"longest short tail", func() (uint64, error) { return index + collectAfterTail, nil }, true, applyTail(collectAfterTail), 0},
		{"ready first", func() (uint64, error) { return index + 5, nil }, true,
			func(t *testing.T, f *trackedFSM) { f.startPendingCollection(math.MaxUint64) }, 0},
		{"tail never applied", func() (uint64, error) { return index + 5, nil }, true, nil, time.Millisecond},
		{"tail over its allocation budget", func() (uint64, error) { return index + 5, nil }, true,
			func(t *testing.T, f *trackedFSM) {
				f.Apply(&raft.Log{Index: index + 1, Type: raft.LogCommand})
				if f.collectAt.Load() == nil {
					t.Fatal("the collection started after one of five tail entries")
				}
				budgetSink = make([]byte, collectAfterTailBudget+1)
				f.Apply(&raft.Log{Index: index + 2, Type: raft.LogCommand})
				budgetSink = nil
				if f.collectAt.Load() != nil {
					t.Fatal("the collection still waits after the tail allocated its budget")
				}
			}, 0},
		{"long tail", func() (uint64, error) { return index + collectAfterTail + 1, nil }, false, nil, 0},
		{"log error", func() (uint64, error) { return 0, errors.New("boom") }, false, nil, 0},
		{"not on start", nil, false, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatedRestorer{make(chan struct{}), make(chan struct{})}
			close(g.release)
			f := newTrackedFSM(g)
			f.collectWait = tc.wait
			if f.collectWait == 0 {
				f.collectWait = time.Hour // never, in a test
			}
			if tc.last != nil {
				f.startLog.Store(&tc.last)
			}
			if err := f.Restore(snapStream(index)); err != nil {
				t.Fatal(err)
			}
			done := f.collected.Load()
			if !tc.after {
				if done != nil {
					t.Fatal("collection left for after the tail")
				}
				if got := debug.SetGCPercent(100); got != 100 {
					t.Fatalf("after the restore GOGC = %d, want 100", got)
				}
				return
			}
			if done == nil {
				t.Fatal("restore collected before returning, want after the tail")
			}
			gen := loweringGen()
			if tc.release != nil {
				tc.release(t, f)
			}
			select {
			case <-*done:
			case <-time.After(30 * time.Second):
				t.Fatal("timed out waiting for the collection after the tail")
			}
			if f.collectAt.Load() != nil {
				t.Fatal("a collection still pending after it ran")
			}
			if got := loweringGen(); got != gen+1 {
				t.Fatalf("after the collection %d lowerings of GOGC, want 1", got-gen)
			}
			waitLoweringEnds(t)
			if got := debug.SetGCPercent(100); got != 100 {
				t.Fatalf("after the collection and the next cycle GOGC = %d, want 100", got)
			}
			if f.Applied() < index {
				t.Fatalf("applied = %d, want at least %d", f.Applied(), index)
			}
		})
	}
}

// budgetSink keeps an allocation alive past the compiler's escape
// analysis.
var budgetSink []byte

// waitStartCollections waits for the collections earlier tests' restores
// left for after a start's log tail: each holds a collector pause, so GOGC
// reads -1 until it ends.
func waitStartCollections(t *testing.T) {
	t.Helper()
	mustReturn(t, &startCollections, "collections left for after a start's log tail")
	// And for the lowered setting they leave until the next cycle.
	waitLoweringEnds(t)
}

// loweringGen returns how many times lowerGCOnce has lowered GOGC.
func loweringGen() uint64 {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	return gcPause.gen
}

// gcSetting returns GOGC and whether lowerGCOnce's setting is in force.
func gcSetting() (percent int, lowered bool) {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, gcPause.lowered
}

// waitLoweringEnds runs a cycle and waits for the lowering in force, if
// any, to end.
func waitLoweringEnds(t *testing.T) {
	t.Helper()
	gcPause.mu.Lock()
	lowered, ended := gcPause.lowered, gcPause.ended
	gcPause.mu.Unlock()
	if !lowered {
		return
	}
	runtime.GC()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the lowered GOGC to end after a cycle")
	}
}

// TestLowerGCOnce: the setting is lowered until the end of the next
// cycle and then put back; not when it is already lower or off, nor while
// a restore holds the collector off; and a pause that starts while it is
// lowered puts back the setting from before the lowering.
func TestLowerGCOnce(t *testing.T) {
	waitStartCollections(t)
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, tc := range []struct {
		name        string
		setting     int
		pauseBefore bool
		pauseDuring bool
		wantLowered bool
	}{
		{"default", 100, false, false, true},
		{"high", 400, false, false, true},
		{"already lower", 30, false, false, false},
		{"equal", afterRestoreGCPercent, false, false, false},
		{"off", -1, false, false, false},
		{"restore holding the collector off", 100, true, false, false},
		{"pause while lowered", 100, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(tc.setting)
			if tc.pauseBefore {
				pauseGC()
			}
			gen := loweringGen()
			lowerGCOnce(afterRestoreGCPercent)
			if got := loweringGen() != gen; got != tc.wantLowered {
				t.Fatalf("lowered = %v, want %v", got, tc.wantLowered)
			}
			if tc.pauseBefore {
				resumeGC()
			}
			// A cycle the test did not ask for may already have ended it.
			if p, lowered := gcSetting(); lowered && p != afterRestoreGCPercent {
				t.Fatalf("while lowered GOGC = %d, want %d", p, afterRestoreGCPercent)
			} else if !tc.wantLowered && p != tc.setting {
				t.Fatalf("not lowered, GOGC = %d, want %d", p, tc.setting)
			}
			if tc.pauseDuring {
				pauseGC()
				waitLoweringEnds(t)
				if p, _ := gcSetting(); p != -1 {
					t.Fatalf("paused after the lowering ended GOGC = %d, want -1 (off)", p)
				}
				resumeGC()
			}
			waitLoweringEnds(t)
			if p, lowered := gcSetting(); lowered || p != tc.setting {
				t.Fatalf("after the next cycle GOGC = %d (lowered %v), want %d", p, lowered, tc.setting)
			}
		})
	}
}

// TestStartTailAsksOnce: only the first restore after the node sets its
// log's last index counts as the start's; a snapshot installed later
// collects before returning.
func TestStartTailAsksOnce(t *testing.T) {
	last := func() (uint64, error) { return 1000, nil }
	f := newTrackedFSM(&gatedRestorer{make(chan struct{}), make(chan struct{})})
	f.startLog.Store(&last)
	if tail, ok := f.startTail(1000); !ok || tail != 0 {
		t.Fatalf("first startTail = %d, %v; want 0, true", tail, ok)
	}
	if _, ok := f.startTail(1000); ok {
		t.Fatal("second startTail answered: a later restore would be taken for the start's")
	}
}

// TestSoleServer: the beside collection is only for a node whose newest
// snapshot records a configuration of one server.
func TestSoleServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers int
		want    bool
	}{
		{"no snapshot", -1, false},
		{"one server", 1, true},
		{"three servers", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, err := raft.NewFileSnapshotStore(t.TempDir(), 1, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if tc.servers >= 0 {
				var conf raft.Configuration
				for i := range tc.servers {
					id := raft.ServerID(string(rune('a' + i)))
					conf.Servers = append(conf.Servers, raft.Server{ID: id, Address: raft.ServerAddress(id)})
				}
				_, trans := raft.NewInmemTransport("")
				sink, err := snaps.Create(raft.SnapshotVersionMax, 10, 1, conf, 1, trans)
				if err != nil {
					t.Fatal(err)
				}
				if err := sink.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if got := soleServer(snaps); got != tc.want {
				t.Fatalf("soleServer = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSetGCPercentDuringRestore: a GOGC set while a restore holds the
// collector off or lowered does not undo them, and is the setting the
// process has once they end; otherwise it applies at once.
func TestSetGCPercentDuringRestore(t *testing.T) {
	waitStartCollections(t)
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	SetGCPercent(80)
	if p, _ := gcSetting(); p != 80 {
		t.Fatalf("with no restore GOGC = %d, want 80 at once", p)
	}

	pauseGC()
	SetGCPercent(70)
	if p, _ := gcSetting(); p != -1 {
		t.Fatalf("set during a pause: GOGC = %d, want -1 (still off)", p)
	}
	resumeGC()
	if p, _ := gcSetting(); p != 70 {
		t.Fatalf("after the pause GOGC = %d, want 70 (the one set during it)", p)
	}

	gen := loweringGen()
	lowerGCOnce(afterRestoreGCPercent)
	if loweringGen() == gen {
		t.Fatal("lowerGCOnce did not lower GOGC 70")
	}
	SetGCPercent(90)
	if p, lowered := gcSetting(); lowered && p != afterRestoreGCPercent {
		t.Fatalf("set while lowered: GOGC = %d, want %d until the cycle ends", p, afterRestoreGCPercent)
	}
	waitLoweringEnds(t)
	if p, lowered := gcSetting(); lowered || p != 90 {
		t.Fatalf("after the lowering GOGC = %d (lowered %v), want 90", p, lowered)
	}
}
