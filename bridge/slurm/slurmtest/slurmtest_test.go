package slurmtest

import (
	"strings"
	"testing"
	"time"
)

// TestStartStop starts a two-node cluster, checks that both nodes are in
// the partition and idle, and that a controller restart keeps them.
func TestStartStop(t *testing.T) {
	t0 := time.Now()
	c := Start(t, Options{Nodes: 2})
	t.Logf("started in %v", time.Since(t0))
	defer func() { t.Logf("test body %v", time.Since(t0)) }()
	out := c.Run(t, "sinfo", "-h", "-N", "-p", c.Partition, "-o", "%N %t")
	if got, want := strings.Fields(out), []string{"n1", "idle", "n2", "idle"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("sinfo = %q, want %q", got, want)
	}
	t1 := time.Now()
	c.StopController(t)
	t.Logf("stopped ctld in %v", time.Since(t1))
	if _, err := c.Try("scontrol", "ping"); err == nil {
		t.Fatal("scontrol ping succeeded with slurmctld stopped")
	}
	c.StartController(t)
	c.WaitNodesIdle(t, 2)
}
