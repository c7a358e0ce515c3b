package jepsen

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestShortCampaign is the default-suite chaos run: a 3-node cluster of real
// `ledgerd agent` processes (built without -race), 6 clients, and a few
// faults — kill the leader, isolate the leader, pause a node, a bridge
// partition — for about 25 seconds, then the full check. It is skipped
// with -short and when the agent cannot be built or does not start.
//
// Set LEDGERD_JEPSEN_KEEP=1 to keep the output directory (logs, history,
// report, visualizations) and print its path.
func TestShortCampaign(t *testing.T) {
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
	rep, err := Run(ctx, Config{
		Bin: bin, Dir: dir, Nodes: 3, Clients: 6, Groups: 2,
		Duration: 25 * time.Second, Quiet: 3 * time.Second, Hold: 4 * time.Second,
		Nemeses: []string{"kill-leader", "partition-leader", "pause", "partition-bridge"},
		Seed:    uint64(time.Now().UnixNano()), CheckTimeout: 30 * time.Second, Settle: 30 * time.Second,
		Progress: testWriter{t},
	})
	if err != nil {
		t.Fatalf("campaign could not run: %v", err)
	}
	t.Logf("\n%s", rep.Text())
	if len(rep.Faults) == 0 {
		t.Error("no fault was injected")
	}
	n := 0
	for _, m := range rep.Ops {
		n += m[CodeOK]
	}
	if n == 0 {
		t.Error("no operation succeeded")
	}
	if !rep.Pass {
		t.Errorf("campaign failed (seed %d); output in %s", rep.Seed, dir)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
