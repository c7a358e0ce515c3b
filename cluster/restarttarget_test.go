package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestVolumeLimit: the limit is what the target leaves after the overhead
// and the restore planned a fifth slower, divided by the replay cost,
// within its bounds; a target the restore alone uses up gives the
// smallest limit and says so; an unmeasured replay cost sets no limit.
func TestVolumeLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		target  time.Duration
		restore time.Duration
		perByte float64
		want    uint64
		met     bool
	}{
		{"not measured yet", 3 * time.Second, 2 * time.Second, 0, 0, true},
		{"a second left at 100 ns per byte", 3 * time.Second, 1700 * time.Millisecond * 5 / 6, 100, 10_000_000, true},
		{"half a second left at 90 ns per byte", 3 * time.Second, 2200 * time.Millisecond * 5 / 6, 90, 5_555_555, true},
		{"the restore planned a fifth slower", 3 * time.Second, 1500 * time.Millisecond, 100, 9_000_000, true},
		{"small budget clamps to the minimum", 3 * time.Second, 2240 * time.Millisecond, 100, minVolumeLimit, true},
		{"cheap replay clamps to the maximum", 3 * time.Second, 0, 0.001, maxVolumeLimit, true},
		{"restore uses the target up", 3 * time.Second, 2250 * time.Millisecond, 100, minVolumeLimit, false},
		{"restore as long as the target less the overhead", 3 * time.Second, 2700 * time.Millisecond, 100, minVolumeLimit, false},
		{"restore longer than the target", 3 * time.Second, 5 * time.Second, 100, minVolumeLimit, false},
	} {
		got, met := volumeLimit(tc.target, tc.restore, tc.perByte)
		if got != tc.want || met != tc.met {
			t.Errorf("%s: volumeLimit(%v, %v, %v) = %d, %v; want %d, %v", tc.name, tc.target, tc.restore, tc.perByte, got, met, tc.want, tc.met)
		}
	}
}

// TestRestoreEstimate: the default cost per byte until a restore large
// enough to measure, then that restore's cost, applied to the newest
// snapshot's size (persisted later or restored).
func TestRestoreEstimate(t *testing.T) {
	m := newRestartModel(3 * time.Second)
	if m.restoreEstimate() != 0 {
		t.Fatalf("no snapshot yet: estimate %v, want 0", m.restoreEstimate())
	}
	m.persisted(100 << 20)
	if got, want := m.restoreEstimate(), time.Duration(defaultRestoreNsPerByte*float64(100<<20)); got != want {
		t.Fatalf("100 MiB snapshot, nothing restored: %v, want %v (the default cost)", got, want)
	}
	m.restored(minRestoreSample/2, time.Second) // too small to trust: 2000 ns per byte
	if got, want := m.restoreEstimate(), time.Duration(defaultRestoreNsPerByte*float64(minRestoreSample/2)); got != want {
		t.Fatalf("after a tiny restore: %v, want %v (still the default cost, on the restored size)", got, want)
	}
	m.restored(200<<20, 1400*time.Millisecond) // 6.68 ns per byte
	m.persisted(300 << 20)
	if got, want := m.restoreEstimate(), 2100*time.Millisecond; got != want {
		t.Fatalf("300 MiB snapshot after a 200 MiB restore in 1.4 s: %v, want %v", got, want)
	}
	var off *restartModel
	off.applied(1, 1)
	off.restored(1, 1)
	off.persisted(1)
	if off.estimate(1<<20) != 0 {
		t.Fatal("no target: the estimate must be 0")
	}
}

// TestReplayAverage: nothing until minApplySample bytes were applied, then
// their mean; later each update with enough new bytes weighs a quarter,
// and updates with too few leave the average alone.
func TestReplayAverage(t *testing.T) {
	m := newRestartModel(time.Second)
	var a replayAverage
	m.applied(minApplySample-1, time.Duration(minApplySample-1)*50)
	if got := a.update(m); got != 0 || m.replayCost() != 0 {
		t.Fatalf("below the sample: %v (gauge %v), want 0", got, m.replayCost())
	}
	m.applied(1, 50)
	if got := a.update(m); got != 50 {
		t.Fatalf("first estimate %v, want 50 ns per byte", got)
	}
	m.applied(minApplySample/32, time.Duration(minApplySample/32)*1000)
	if got := a.update(m); got != 50 {
		t.Fatalf("too few new bytes moved the average to %v", got)
	}
	m.applied(minApplySample/32, time.Duration(minApplySample/32)*1000)
	want := 0.75*50 + 0.25*1000
	if got := a.update(m); math.Abs(got-want) > 1e-9 || m.replayCost() != got {
		t.Fatalf("after enough new bytes at 1000 ns: %v (gauge %v), want %v", got, m.replayCost(), want)
	}
	m.restored(100<<20, 700*time.Millisecond)
	est := m.estimate(1 << 20)
	wantEst := restartOverhead + 700*time.Millisecond + time.Duration(want*float64(1<<20))
	if est != wantEst {
		t.Fatalf("estimate %v, want %v", est, wantEst)
	}
}

// TestLogVolumeSetLimit: a derived limit lowers the fixed one, never
// raises it, none leaves the fixed one, and putting a limit the count has
// already reached in force wakes the loop.
func TestLogVolumeSetLimit(t *testing.T) {
	for _, tc := range []struct {
		fixed, derived, want uint64
	}{
		{0, 0, 0},
		{0, 5 << 20, 5 << 20},
		{8 << 20, 5 << 20, 5 << 20},
		{4 << 20, 5 << 20, 4 << 20},
		{4 << 20, 0, 4 << 20},
	} {
		v := newLogVolume(tc.fixed)
		v.setLimit(tc.derived)
		if got := v.limit.Load(); got != tc.want {
			t.Errorf("fixed %d, derived %d: limit %d, want %d", tc.fixed, tc.derived, got, tc.want)
		}
	}
	v := newLogVolume(0)
	v.add(3 << 20)
	if woken(v) {
		t.Fatal("woken without a limit")
	}
	v.setLimit(4 << 20)
	if woken(v) {
		t.Fatal("woken below the new limit")
	}
	v.setLimit(2 << 20)
	if !woken(v) {
		t.Fatal("a limit below the count must wake the loop")
	}
}

// TestRestartTargetSnapshots: a node whose restore alone would take longer
// than its restart target (a restore measured at 10 s) puts the smallest
// volume limit in force once it has measured its apply cost, snapshots by
// volume when its log reaches it, and its estimate then counts only the
// log applied since.
func TestRestartTargetSnapshots(t *testing.T) {
	_, tn := soloServer(t, func(cfg *Config) { cfg.RestartTarget = 3 * time.Second })
	m := tn.node.fsm.restart
	m.restored(minRestoreSample, 10*time.Second)
	value := strings.Repeat("x", 100<<10)
	for i := range 12 {
		apply(t, tn, fmt.Sprintf("w%d|%s", i, value))
	}
	waitFor(t, 20*time.Second, "a snapshot by log volume under the derived limit", func() bool {
		return tn.node.snapByVolume.Load() >= 1
	})
	if got := tn.node.fsm.volume.limit.Load(); got != minVolumeLimit {
		t.Fatalf("limit in force %d, want the minimum %d (the restore alone exceeds the target)", got, minVolumeLimit)
	}
	if m.replayCost() <= 0 {
		t.Fatal("no replay cost measured after 1.2 MiB of applies")
	}
	since := tn.node.fsm.volume.since.Load()
	if since >= minVolumeLimit {
		t.Fatalf("%d bytes since the last snapshot, want fewer than the limit %d", since, minVolumeLimit)
	}
	if est := m.estimate(since); est < 10*time.Second {
		t.Fatalf("estimate %v, want at least the measured 10 s restore", est)
	}
}

// volumeSnapshots records the "snapshot by log volume taken" lines a node
// logs: when each was logged and how long that snapshot took.
type volumeSnapshots struct {
	mu   sync.Mutex
	at   []time.Time
	took []time.Duration
}

func (h *volumeSnapshots) Enabled(context.Context, slog.Level) bool { return true }
func (h *volumeSnapshots) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *volumeSnapshots) WithGroup(string) slog.Handler            { return h }
func (h *volumeSnapshots) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "snapshot by log volume taken" {
		return nil
	}
	var took time.Duration
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "took" {
			took = a.Value.Duration()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at, h.took = append(h.at, r.Time), append(h.took, took)
	return nil
}

func (h *volumeSnapshots) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.at)
}

// persistGatedFSM holds the Persist of its snapshots until gate is closed.
type persistGatedFSM struct {
	*kvFSM
	gate chan struct{}
}

func (f *persistGatedFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := f.kvFSM.Snapshot()
	if err != nil {
		return nil, err
	}
	return gatedSnapshot{s, f.gate}, nil
}

type gatedSnapshot struct {
	raft.FSMSnapshot
	gate chan struct{}
}

func (s gatedSnapshot) Persist(sink raft.SnapshotSink) error {
	<-s.gate
	return s.FSMSnapshot.Persist(sink)
}

// TestRestartTargetDutyCycle: with a target it cannot meet, a node whose
// log reached the limit again while a snapshot by volume was being
// written waits, once that snapshot ends, as long as it took before it
// starts the next.
func TestRestartTargetDutyCycle(t *testing.T) {
	rec := &volumeSnapshots{}
	c := &tcluster{t: t}
	tn := c.add(1, func(cfg *Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = 20*time.Second, 20*time.Second
		cfg.SnapshotThreshold, cfg.SnapshotInterval = 1<<40, time.Hour
		cfg.RestartTarget = 3 * time.Second
		cfg.Logger = slog.New(rec)
	})
	gate := make(chan struct{})
	tn.wrap = func(f *kvFSM) raft.FSM { return &persistGatedFSM{kvFSM: f, gate: gate} }
	t.Cleanup(c.stopAll)
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	c.start(tn)
	waitFor(t, 5*time.Second, "the bootstrapped server to elect itself", tn.node.IsLeader)
	v := tn.node.fsm.volume
	tn.node.fsm.restart.restored(minRestoreSample, 10*time.Second)
	value := strings.Repeat("y", 100<<10)
	for i := range 12 {
		apply(t, tn, fmt.Sprintf("a%d|%s", i, value))
	}
	// The first snapshot by volume captures those and waits at the gate;
	// meanwhile the log reaches the limit again.
	waitFor(t, 20*time.Second, "the first snapshot by volume to capture the log", func() bool {
		return v.limit.Load() == minVolumeLimit && v.since.Load() == 0
	})
	for i := range 12 {
		apply(t, tn, fmt.Sprintf("b%d|%s", i, value))
	}
	close(gate)
	waitFor(t, 20*time.Second, "a second snapshot by volume", func() bool { return rec.len() >= 2 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// took is logged rounded to the millisecond.
	const slack = time.Millisecond
	firstEnd := rec.at[0]
	secondStart := rec.at[1].Add(-rec.took[1])
	if gap := secondStart.Sub(firstEnd); gap < rec.took[0]-slack {
		t.Fatalf("the second snapshot by volume started %v after the first ended, which took %v: want a wait at least that long", gap, rec.took[0])
	}
}

// BenchmarkApplyClock: what timing one apply batch for the restart
// model adds to the FSM goroutine (startApply and stopApply around no
// work).
func BenchmarkApplyClock(b *testing.B) {
	m := newRestartModel(3 * time.Second)
	var total time.Duration
	for b.Loop() {
		total += m.stopApply(m.startApply())
	}
	if total < 0 {
		b.Fatal("negative apply time")
	}
}
