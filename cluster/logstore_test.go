package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/ledgerd/ledgerd/internal/testnet"
)

func TestResolveLogStore(t *testing.T) {
	for _, tc := range []struct {
		name       string
		marker     string // contents of raft-log-store, if set
		wal        bool   // wal/ exists
		raftDB     bool   // raft.db exists
		configured string
		want       string
		wantErr    string
		mismatch   bool
	}{
		{name: "new dir, default", want: DefaultLogStore},
		{name: "new dir, wal", configured: LogStoreWAL, want: LogStoreWAL},
		{name: "new dir, boltdb", configured: LogStoreBoltDB, want: LogStoreBoltDB},
		{name: "old dir without marker keeps boltdb", raftDB: true, want: LogStoreBoltDB},
		{name: "old dir without marker refuses wal", raftDB: true, configured: LogStoreWAL, mismatch: true},
		{name: "wal dir without marker", raftDB: true, wal: true, want: LogStoreWAL},
		{name: "marker wal, empty config", marker: "wal\n", raftDB: true, wal: true, want: LogStoreWAL},
		{name: "marker wal, boltdb configured", marker: "wal\n", raftDB: true, wal: true, configured: LogStoreBoltDB, mismatch: true},
		{name: "marker boltdb, wal configured", marker: "boltdb\n", raftDB: true, configured: LogStoreWAL, mismatch: true},
		{name: "marker boltdb, boltdb configured", marker: "boltdb", raftDB: true, configured: LogStoreBoltDB, want: LogStoreBoltDB},
		{name: "unknown marker", marker: "rocksdb\n", wantErr: `unknown log store "rocksdb"`},
		{name: "empty marker", marker: "\n", wantErr: `unknown log store ""`},
		{name: "unknown configured", configured: "sqlite", wantErr: `want "boltdb" or "wal", got "sqlite"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.marker != "" {
				if err := os.WriteFile(filepath.Join(dir, logStoreFile), []byte(tc.marker), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wal {
				if err := os.Mkdir(filepath.Join(dir, walDir), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tc.raftDB {
				if err := os.WriteFile(filepath.Join(dir, "raft.db"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ResolveLogStore(dir, tc.configured)
			switch {
			case tc.mismatch:
				if !errors.Is(err, ErrLogStoreMismatch) {
					t.Fatalf("ResolveLogStore = %q, %v; want ErrLogStoreMismatch", got, err)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ResolveLogStore = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
			case err != nil || got != tc.want:
				t.Fatalf("ResolveLogStore = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// Both log stores answer ErrLogNotFound for entries deleted from the head
// of the log, so that the leader sends a snapshot to a follower that needs
// them, and refuse a gap in the indexes only where the store says it does.
func TestLogStoreHeadDeletion(t *testing.T) {
	for _, kind := range logStores {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), BoltOptions: boltOptions()})
			if err != nil {
				t.Fatal(err)
			}
			defer bolt.Close()
			ls, err := openLogStore(dir, kind, bolt, testLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			var logs []*raft.Log
			for i := uint64(1); i <= 20; i++ {
				logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "e%d", i)})
			}
			if err := ls.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			if err := ls.DeleteRange(1, 12); err != nil {
				t.Fatal(err)
			}
			if first, err := ls.FirstIndex(); err != nil || first != 13 {
				t.Fatalf("FirstIndex after deleting 1..12 = %d, %v; want 13", first, err)
			}
			for _, i := range []uint64{1, 12} {
				var l raft.Log
				if err := ls.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
					t.Errorf("GetLog(%d) after deleting it = %v (%q), want ErrLogNotFound", i, err, l.Data)
				}
			}
			var l raft.Log
			if err := ls.GetLog(13, &l); err != nil || string(l.Data) != "e13" {
				t.Fatalf("GetLog(13) = %q, %v; want e13", l.Data, err)
			}
			if got, want := ls.IsMonotonic(), kind == LogStoreWAL; got != want {
				t.Errorf("IsMonotonic = %v, want %v", got, want)
			}
			cache, err := raft.NewLogCache(4, ls)
			if err != nil {
				t.Fatal(err)
			}
			if !cache.IsMonotonic() && kind == LogStoreWAL {
				t.Error("the log cache hides that raft-wal is monotonic")
			}
		})
	}
}

// A data directory keeps its log store: a restart asking for the other
// one is refused with the field named and nothing on disk changed; an
// empty setting keeps what is there.
func TestLogStoreCannotSwitchInPlace(t *testing.T) {
	for _, tc := range []struct{ first, other string }{
		{LogStoreWAL, LogStoreBoltDB},
		{LogStoreBoltDB, LogStoreWAL},
	} {
		t.Run(tc.first, func(t *testing.T) {
			c := &tcluster{t: t}
			kind := tc.first
			tn := c.add(1, func(cfg *Config) { cfg.LogStore = kind })
			t.Cleanup(c.stopAll)
			c.start(tn)
			waitFor(t, 5*time.Second, "the bootstrapped server to elect itself", tn.node.IsLeader)
			apply(t, tn, "a|one")
			c.shutdown(tn)

			cfg := testConfig(tn)
			cfg.LogStore = tc.other
			if n, err := New(cfg, newKVFSM()); !errors.Is(err, ErrLogStoreMismatch) || !strings.Contains(err.Error(), "Config.LogStore") {
				if n != nil {
					_ = n.stop()
				}
				t.Fatalf("New with LogStore %q on a %q data dir: %v; want ErrLogStoreMismatch naming Config.LogStore", tc.other, tc.first, err)
			}
			if got, err := DataDirLogStore(tn.dir); err != nil || got != tc.first {
				t.Fatalf("data dir log store after the refused start = %q, %v; want %q", got, err, tc.first)
			}

			kind = "" // keep what the data dir holds
			c.restart(tn)
			waitFor(t, 5*time.Second, "the restarted server to elect itself", tn.node.IsLeader)
			if got := readEntries(t, tn); len(got) != 1 || got[0] != "one" {
				t.Fatalf("entries after restart = %q, want [one]", got)
			}
			if tn.node.wal.kind != tc.first {
				t.Fatalf("restarted on %q, want %q", tn.node.wal.kind, tc.first)
			}
		})
	}
}

// Environment of the crash child (TestLogStoreCrashChild).
const (
	crashEnvDir   = "LEDGERD_CRASH_CHILD_DIR"
	crashEnvAddrs = "LEDGERD_CRASH_CHILD_ADDRS"
	crashEnvStore = "LEDGERD_CRASH_CHILD_STORE"
)

// crashConfig snapshots often, so a crash leaves state both in a
// snapshot and in the log after it.
func crashConfig(kind string) func(*Config) {
	return func(cfg *Config) {
		cfg.LogStore = kind
		cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.TrailingLogs = 64, 50*time.Millisecond, 16
	}
}

// TestLogStoreCrashChild is the process TestCrashKeepsAcknowledgedWrites
// kills: a one-server cluster writing without pause and printing "ack N"
// once write N is acknowledged. It does nothing unless run as that child.
func TestLogStoreCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("run by TestCrashKeepsAcknowledgedWrites")
	}
	c := &tcluster{t: t}
	tn := c.add(1, crashConfig(os.Getenv(crashEnvStore)))
	tn.dir = dir
	tn.setAddrs(strings.Split(os.Getenv(crashEnvAddrs), ","))
	tn.started = true // keep the addresses the parent restarts on
	c.start(tn)
	waitFor(t, 10*time.Second, "the bootstrapped server to elect itself", tn.node.IsLeader)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := tn.node.Apply(ctx, fmt.Appendf(nil, "k%d|v%d", i, i))
		cancel()
		if err != nil || string(res) != fmt.Sprintf("ok:%d", i+1) {
			fmt.Printf("error %d: %q %v\n", i, res, err)
			os.Exit(3)
		}
		fmt.Printf("ack %d\n", i)
		if i == 200 {
			// At least one snapshot, however fast the writes go, so
			// the restart restores it and replays the log after it.
			if err := tn.node.raft.Snapshot().Error(); err != nil {
				fmt.Printf("error snapshot: %v\n", err)
				os.Exit(3)
			}
		}
	}
}

// TestCrashKeepsAcknowledgedWrites kills (SIGKILL, no shutdown of any
// kind) a server process in the middle of a stream of writes, restarts a
// server on its data directory, and checks that every write the killed
// process acknowledged is there, in order, with nothing else before it.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	forEachLogStore(t, func(t *testing.T, store func(*Config)) {
		var probe Config
		store(&probe)
		kind := probe.LogStore
		dir := filepath.Join(t.TempDir(), "data")
		addrs := testnet.Addrs(t, 3)
		cmd := exec.Command(os.Args[0], "-test.run=^TestLogStoreCrashChild$", "-test.count=1")
		// The child is killed, so its own t.TempDir cleanup never runs:
		// its temporary directories go under one of ours instead.
		cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvAddrs+"="+strings.Join(addrs, ","), crashEnvStore+"="+kind,
			"TMPDIR="+t.TempDir())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A child that never gets going is killed so the test fails
		// rather than hangs.
		stuck := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
		defer stuck.Stop()
		const killAfter = 400
		acked := -1
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "ack "); ok {
				i, err := strconv.Atoi(n)
				if err != nil || i != acked+1 {
					t.Errorf("child printed %q after ack %d", line, acked)
					continue
				}
				acked = i
				if acked == killAfter {
					_ = cmd.Process.Kill() // writes are in flight
				}
			} else if strings.HasPrefix(line, "error ") {
				t.Errorf("child: %s", line)
			}
		}
		_ = cmd.Wait()
		if acked < killAfter {
			t.Fatalf("child stopped after ack %d, before it was killed at %d", acked, killAfter)
		}

		c := &tcluster{t: t}
		tn := c.add(1, crashConfig(kind))
		tn.dir = dir
		tn.setAddrs(addrs)
		tn.started = true
		t.Cleanup(c.stopAll)
		c.start(tn)
		waitFor(t, 10*time.Second, "the restarted server to elect itself", tn.node.IsLeader)
		got := readEntries(t, tn)
		if len(got) <= acked {
			t.Fatalf("%d entries after the crash, but the killed process acknowledged %d", len(got), acked+1)
		}
		for i, e := range got {
			if e != fmt.Sprint("v", i) {
				t.Fatalf("entry %d after the crash = %q, want v%d", i, e, i)
			}
		}
		if tn.node.fsm.restored.Load() == 0 {
			t.Errorf("the restart restored no snapshot; the test meant to cover snapshot + log")
		}
		t.Logf("%s: %d writes acknowledged before the kill, %d entries after the restart", kind, acked+1, len(got))
	})
}

// TestSecondNodeOnADataDirInUse: a second node on the data directory of a
// running one fails with an error that names the directory, instead of
// waiting for raft.db's lock without end.
func TestSecondNodeOnADataDirInUse(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.waitVoters(1)
	first := c.nodes[0]
	second := &tnode{name: "second", dir: first.dir, fsm: newKVFSM(), expect: 1}
	second.setAddrs(testnet.Addrs(t, 3))
	node, err := New(testConfig(second), second.fsm)
	if err == nil {
		_ = node.Shutdown(context.Background())
		t.Fatal("a second node opened a data directory in use")
	}
	if want := "is an agent already running on data_dir " + first.dir; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want one containing %q", err, want)
	}
	// The first node goes on.
	if got := apply(t, first, "k|v"); !strings.HasPrefix(got, "ok:") {
		t.Fatalf("apply on the first node after the refused second: %q", got)
	}
}

// TestLogStoreKindRecordedOnce: a start on a data directory that records
// its kind already leaves the file alone (rewriting it at every start
// would let a crash in the middle tear it), and a new one gets it.
func TestLogStoreKindRecordedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, logStoreFile)
	if _, err := openLogStore(dir, LogStoreBoltDB, nil, testLogger()); err != nil {
		t.Fatal(err)
	}
	// Date the file back: a rewrite, in place or by rename, moves it.
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatalf("kind not recorded: %v", err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openLogStore(dir, LogStoreBoltDB, nil, testLogger()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(old) {
		t.Fatalf("the kind file was rewritten on a start that found it right (modified %v, %v)", after.ModTime(), err)
	}
	if kind, err := DataDirLogStore(dir); err != nil || kind != LogStoreBoltDB {
		t.Fatalf("recorded kind %q, %v", kind, err)
	}
}
