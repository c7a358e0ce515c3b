package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// woken reports (and takes) a pending wake-up of v's trigger loop.
func woken(v *logVolume) bool {
	select {
	case <-v.due:
		return true
	default:
		return false
	}
}

// TestLogVolumeCounts: only command bytes count, the loop is woken once
// the count reaches the limit (one wake-up pending at most), a capture
// resets the count and a failed snapshot gives its bytes back.
func TestLogVolumeCounts(t *testing.T) {
	cmd := func(n int) *raft.Log { return &raft.Log{Type: raft.LogCommand, Data: make([]byte, n)} }
	conf := &raft.Log{Type: raft.LogConfiguration, Data: make([]byte, 500)}
	v := newLogVolume(100)
	v.applied(cmd(40), conf)
	if got := v.since.Load(); got != 40 {
		t.Fatalf("after a 40-byte command and a configuration entry: %d bytes, want 40", got)
	}
	if woken(v) {
		t.Fatal("woken below the limit")
	}
	v.applied(cmd(60))
	v.applied(cmd(1))
	if !woken(v) || woken(v) {
		t.Fatal("want exactly one pending wake-up after crossing the limit twice")
	}
	if got := v.captured(); got != 101 || v.since.Load() != 0 {
		t.Fatalf("captured %d (left %d), want 101 and 0", got, v.since.Load())
	}
	v.giveBack(101)
	if v.since.Load() != 101 || !woken(v) {
		t.Fatalf("after giving back a failed snapshot's bytes: %d, woken=false; want 101 and a wake-up", v.since.Load())
	}

	off := newLogVolume(0)
	off.applied(cmd(1 << 20))
	off.giveBack(1)
	if woken(off) {
		t.Fatal("a zero limit must never wake the loop")
	}
	if got := off.since.Load(); got != 1<<20+1 {
		t.Fatalf("with the trigger off the count is %d, want %d (the gauge still reports it)", got, 1<<20+1)
	}
	var none *logVolume // a node made by RecoverCluster has none
	none.applied(cmd(1))
	none.giveBack(1)
	if none.captured() != 0 {
		t.Fatal("nil volume captured bytes")
	}
}

// failingSink fails every write, as a full disk would.
type failingSink struct{ raft.SnapshotSink }

func (failingSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }
func (failingSink) Cancel() error             { return nil }

// TestFailedPersistGivesBackVolume: a snapshot captured but not written
// leaves the log it covered to be replayed, so the count must come back.
func TestFailedPersistGivesBackVolume(t *testing.T) {
	f := newTrackedFSM(newKVFSM())
	f.volume = newLogVolume(1 << 10)
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte("k|" + strings.Repeat("v", 98))})
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := f.volume.since.Load(); got != 0 {
		t.Fatalf("after the capture: %d bytes, want 0", got)
	}
	if err := s.Persist(failingSink{}); err == nil {
		t.Fatal("persist to a failing sink succeeded")
	}
	if got := f.volume.since.Load(); got != 100 {
		t.Fatalf("after the failed persist: %d bytes, want the 100 captured", got)
	}
}

// TestSnapshotByLogVolume: with raft's own trigger off, a node snapshots
// as its applied log reaches SnapshotLogBytes, so a crashed node replays
// less than that on restart, and nothing is lost.
func TestSnapshotByLogVolume(t *testing.T) { forEachLogStore(t, testSnapshotByLogVolume) }

func testSnapshotByLogVolume(t *testing.T, store func(*Config)) {
	const limit = 1 << 10
	c, tn := soloServer(t, chain(func(cfg *Config) { cfg.SnapshotLogBytes = limit }, store))
	var want []string
	for i := range 60 {
		v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 90))
		apply(t, tn, fmt.Sprintf("w%d|%s", i, v))
		want = append(want, v)
	}
	// About 6 KiB were applied, so the count crossed the limit and the
	// loop was woken: it catches up, with one snapshot or several
	// (how many depends on how far the applies ran ahead of it).
	waitFor(t, 20*time.Second, "snapshots to catch up with the log", func() bool {
		return tn.node.snapByVolume.Load() >= 1 && tn.node.fsm.volume.since.Load() < limit
	})
	last := tn.node.AppliedIndex()
	c.crash(tn)

	c.restart(tn)
	waitFor(t, 5*time.Second, "the sole voter to elect itself after a restart", tn.node.IsLeader)
	waitFor(t, 5*time.Second, "the log to be replayed", func() bool { return tn.node.AppliedIndex() >= last })
	if got := readEntries(t, tn); !slices.Equal(got, want) {
		t.Fatalf("entries after the crash = %q, want %q", got, want)
	}
	if restored := tn.node.fsm.restored.Load(); restored == 0 {
		t.Fatal("the restart restored no snapshot")
	}
	// The restart replayed only what came after the newest snapshot.
	if replayed := tn.node.fsm.volume.since.Load(); replayed >= limit {
		t.Fatalf("replayed %d command bytes after the crash, want fewer than %d", replayed, limit)
	}
}

// TestUnfinishedSnapshotRemoved: a snapshot directory left unfinished by a
// crash (raft's <id>.tmp, which raft itself never reaps) is removed when
// the node starts again; the complete snapshot beside it is restored.
func TestUnfinishedSnapshotRemoved(t *testing.T) {
	c, tn := soloServer(t, func(cfg *Config) { cfg.SnapshotOnShutdown = true })
	var want []string
	for i := range 5 {
		apply(t, tn, fmt.Sprintf("w%d|v%d", i, i))
		want = append(want, fmt.Sprint("v", i))
	}
	c.shutdown(tn)
	left := filepath.Join(tn.dir, "snapshots", "7-99-1795700000000.tmp")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "state.bin"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	c.restart(tn)
	waitFor(t, 5*time.Second, "the sole voter to elect itself after a restart", tn.node.IsLeader)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the unfinished snapshot is still there after a restart (stat: %v)", err)
	}
	if tn.node.fsm.restored.Load() == 0 {
		t.Fatal("the complete snapshot was not restored")
	}
	if got := readEntries(t, tn); !slices.Equal(got, want) {
		t.Fatalf("entries after restart = %q, want %q", got, want)
	}
}
