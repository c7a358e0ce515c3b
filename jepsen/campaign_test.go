package jepsen

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShortCampaign is the default-suite chaos run: a 3-node cluster of real
// `ledgerd agent` processes (built without -race), 6 clients, and a few
// faults — kill the leader, isolate the leader, pause a node, a bridge
// partition — for about 25 seconds, then the full check. Its agents keep
// the Raft log in raft.db (LogStore "boltdb"), the store of data dirs
// created before raft-wal became the default. It is skipped
// with -short and when the agent cannot be built or does not start.
func TestShortCampaign(t *testing.T) {
	rep := shortCampaign(t, &Config{
		Nodes: 3, Clients: 6, Groups: 2, Duration: 25 * time.Second,
		Nemeses:   []string{"kill-leader", "partition-leader", "pause", "partition-bridge"},
		Recurring: true, LogStore: "boltdb",
	})
	n := 0
	for _, m := range rep.Ops {
		n += m[CodeOK]
	}
	if n == 0 {
		t.Error("no operation succeeded")
	}
}

// TestShortBatchCampaign is the same kind of run with the coalescing
// client (Config.Client = ClientBatch): the workers' concurrent operations
// on a node share Batch calls, which a follower forwards to the leader as
// a whole and the leader writes back to back, while nodes are killed and
// partitioned. Besides the verdict it requires that Batch calls really
// carried several operations and that the leaders wrote some of them as
// shared log entries (group commit). Its agents keep the Raft log in raft-wal
// (LogStore "wal", the default for new data dirs), while TestShortCampaign
// covers raft.db. They also snapshot every 16 KiB of log
// (snapshot_log_bytes), so that snapshots are taken, restored after kills
// and sent to lagging followers throughout the faults; the run must show
// several.
func TestShortBatchCampaign(t *testing.T) {
	cfg := Config{
		Nodes: 3, Clients: 6, Groups: 2, Duration: 20 * time.Second, Client: ClientBatch, LogStore: "wal",
		Nemeses:   []string{"kill", "partition-leader", "kill-leader", "partition-halves"},
		ExtraArgs: []string{"-snapshot-log-bytes", "16KiB"},
	}
	rep := shortCampaign(t, &cfg)
	n := countInLogs(t, cfg.Dir, "snapshot by log volume taken")
	t.Logf("%d snapshots by log volume, %d restores of a snapshot", n, countInLogs(t, cfg.Dir, `msg="restored snapshot"`))
	if n < 3 {
		t.Errorf("%d snapshots by log volume in the nodes' logs, want at least 3", n)
	}
	b := rep.Batches
	if b == nil {
		t.Fatal("batch mode reported no batch statistics")
	}
	if b.Multi == 0 || b.Undecodable != 0 {
		t.Errorf("batching: %s (%d undecodable): want calls with more than one operation", b.Text(), b.Undecodable)
	}
	// Batches of several admissions reach the leader as a whole (a
	// follower forwards them), so its log must hold shared entries.
	g := rep.Groups
	if g == nil || g.Entries == 0 || g.Commands < 2*g.Entries {
		t.Errorf("group commit: %+v: want group entries of at least two commands each", g)
	}
	batched := 0
	for kind, m := range rep.Ops {
		if kind != OpFind {
			for _, n := range m {
				batched += n
			}
		}
	}
	// Every batched operation is one attempt, and each goes out in a Batch
	// call unless its caller gave up while it queued.
	if b.Ops == 0 || b.Ops > batched {
		t.Errorf("%d operations in Batch calls for %d batchable operations in the history", b.Ops, batched)
	}
}

// TestShortDropsCampaign runs with ended_max (Config.EndedMax): the
// leader puts the limit into the log, ended reservations past it are
// dropped while leaders are killed and isolated, and clients, which
// sometimes address old reservations, must meet dropped ones. The checker
// reads those not-found answers as drops; replicas must have dropped the
// same reservations.
func TestShortDropsCampaign(t *testing.T) {
	cfg := Config{
		Nodes: 3, Clients: 6, Groups: 2, Duration: 20 * time.Second, Client: ClientBatch, EndedMax: 100,
		Nemeses:   []string{"kill-leader", "partition-leader"},
		ExtraArgs: []string{"-snapshot-log-bytes", "16KiB"},
	}
	rep := shortCampaign(t, &cfg)
	notFound := 0
	for _, m := range rep.Ops {
		notFound += m[CodeNotFound]
	}
	t.Logf("%d not-found answers about dropped reservations", notFound)
	if notFound == 0 {
		t.Error("no client met a dropped reservation: the run did not test drops")
	}
}

// shortCampaign runs one default-suite campaign with cfg (Bin, Dir, Seed,
// timings and Progress filled in, in cfg) and fails t unless faults were injected
// and the run passed. It skips with -short and when the agent cannot be
// built or does not start. Set LEDGERD_JEPSEN_KEEP=1 to keep the output
// directory (logs, history, report, visualizations) and print its path.
func shortCampaign(t *testing.T, cfg *Config) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos campaign skipped in -short mode")
	}
	dir := t.TempDir()
	if os.Getenv("LEDGERD_JEPSEN_KEEP") != "" {
		d, err := os.MkdirTemp("", "ledgerd-jepsen-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Logf("output kept in %s", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := BuildAgent(ctx, dir)
	if err != nil {
		t.Skipf("ledgerd agent not buildable here: %v", err)
	}
	if out, _ := exec.CommandContext(ctx, bin, "agent", "-help").CombinedOutput(); !strings.Contains(string(out), "-data-dir") {
		t.Skipf("this ledgerd has no agent command with -data-dir yet:\n%s", out)
	}
	cfg.Bin, cfg.Dir, cfg.Seed = bin, dir, uint64(time.Now().UnixNano())
	cfg.Quiet, cfg.Hold, cfg.CheckTimeout, cfg.Settle = 3*time.Second, 4*time.Second, 30*time.Second, 30*time.Second
	cfg.Progress = testWriter{t}
	rep, err := Run(ctx, *cfg)
	if err != nil {
		t.Fatalf("campaign could not run: %v", err)
	}
	t.Logf("\n%s", rep.Text())
	if len(rep.Faults) == 0 {
		t.Error("no fault was injected")
	}
	if !rep.Pass {
		t.Errorf("campaign failed (seed %d); output in %s", rep.Seed, dir)
	}
	if cfg.LogStore != "" {
		checkLogStore(t, dir, cfg.LogStore)
	}
	return rep
}

// checkLogStore fails t unless every node data dir under dir records the
// log store kind (the raft-log-store file) and at least one does.
func checkLogStore(t *testing.T, dir, kind string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "raft-log-store" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(string(b)); got != kind {
			t.Errorf("%s says %q, want %q", path, got, kind)
		}
		n++
		return nil
	})
	if err != nil {
		t.Errorf("look for the nodes' log stores: %v", err)
	}
	if n == 0 {
		t.Errorf("no node data dir under %s records a log store; want %q", dir, kind)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// countInLogs counts the lines of the nodes' logs in dir that contain s.
func countInLogs(t *testing.T, dir, s string) int {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), s)
	}
	return n
}
