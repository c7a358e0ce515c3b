package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/bridge/slurm/slurmtest"
)

// TestImportSlurmPartition: `resources import slurm -partition` reads a
// real Slurm's partition and creates a resource whose units are its nodes;
// bad invocations are usage errors.
func TestImportSlurmPartition(t *testing.T) {
	for _, args := range [][]string{
		{"resources", "import"},
		{"resources", "import", "pbs", "-partition", "p"},
		{"resources", "import", "slurm"},
		{"resources", "import", "slurm", "-partition", "p", "-unit-policy", "sometimes"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage {
			t.Errorf("ledgerd %s: exit %d (%s), want a usage error", strings.Join(args, " "), code, stderr)
		}
	}
	c := slurmtest.Start(t, slurmtest.Options{})
	c.Run(t, "scontrol", "update", "NodeName=n3", "State=DRAIN", "Reason=disk")
	s, _ := startAgent(t, "-data-dir", t.TempDir())
	t.Setenv("LEDGERD_ADDR", s.Addr())
	code, stdout, stderr := runCLI(t, "resources", "import", "slurm", "-partition", c.Partition, "-name", "batch",
		"-slurm-conf", c.Conf, "-sinfo", slurmtest.Bin("sinfo"), "-json")
	if code != exitOK {
		t.Fatalf("import: exit %d: %s%s", code, stdout, stderr)
	}
	var r struct {
		Name   string
		Units  []string
		Labels map[string]string
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("import printed %q: %v", stdout, err)
	}
	if r.Name != "batch" || !slices.Equal(r.Units, c.NodeNames) || r.Labels["slurm-partition"] != c.Partition {
		t.Fatalf("imported %+v, want the nodes %v", r, c.NodeNames)
	}
	if code, _, stderr := runCLI(t, "resources", "import", "slurm", "-partition", "nosuch", "-slurm-conf", c.Conf, "-sinfo", slurmtest.Bin("sinfo")); code == exitOK || !strings.Contains(stderr, "nosuch") {
		t.Errorf("unknown partition: exit %d: %s", code, stderr)
	}
}
