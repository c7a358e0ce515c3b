package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/agent/agenttest"
)

// TestCLICoReserve books sub-requests over two resources, each on the
// first that fits, prints the mapping and probabilities, refuses what
// cannot all be placed with exit 3, and reports bad flags as usage
// errors.
func TestCLICoReserve(t *testing.T) {
	cliSite(t)
	for _, name := range []string{"a", "b"} {
		if code, _, errOut := runCLI(t, "resource", "create", name, "-capacity", "8", "-token", agenttest.TokenOps); code != exitOK {
			t.Fatalf("create %s: %s", name, errOut)
		}
	}
	code, out, errOut := runCLI(t, "coreserve", "-id", "co", "-sub", "6@+1h+2h", "-sub", "6@+1h+2h", "-sub", "2@+1h+1h", "-candidates", "a,b", "-min-joint", "0.5")
	if code != exitOK {
		t.Fatalf("coreserve: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"0    co/0  a         6       2030-01-01T01:00:00Z  2030-01-01T03:00:00Z  1.000        fits",
		"1    co/1  b         6",
		"2    co/2  a         2",
		"joint probability 1.000",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("coreserve output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ = runCLI(t, "get", "co/1"); code != exitOK || !strings.Contains(out, "b=6") || !strings.Contains(out, "COMMITTED") {
		t.Fatalf("get co/1: %d\n%s", code, out)
	}

	code, out, errOut = runCLI(t, "coreserve", "-sub", "1@+4h+1h", "-candidates", "b", "-json")
	var m struct {
		Placements []struct {
			Resource            string `json:"resource"`
			ProbabilityPermille int    `json:"probability_permille"`
		} `json:"placements"`
		JointPermille int `json:"joint_permille"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &m) != nil || len(m.Placements) != 1 || m.Placements[0].Resource != "b" ||
		m.Placements[0].ProbabilityPermille != 1000 || m.JointPermille != 1000 {
		t.Fatalf("coreserve -json: %d %+v\n%s%s", code, m, out, errOut)
	}

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing left fits", []string{"coreserve", "-sub", "1@+4h+1h", "-sub", "3@+90m+1h", "-candidates", "a,b"}, exitRejected, "sub-request 1 fits nowhere"},
		{"no sub", []string{"coreserve", "-candidates", "a"}, exitUsage, "at least one -sub"},
		{"no candidates", []string{"coreserve", "-sub", "1@+1h+1h"}, exitUsage, "-candidates is required"},
		{"sub without a duration", []string{"coreserve", "-sub", "1@now", "-candidates", "a"}, exitUsage, "want AMOUNT@START+DURATION"},
		{"sub with a bad amount", []string{"coreserve", "-sub", "x@+1h+1h", "-candidates", "a"}, exitUsage, "amount must be a number"},
		{"min joint above 1", []string{"coreserve", "-sub", "1@+1h+1h", "-candidates", "a", "-min-joint", "2"}, exitUsage, "-min-joint"},
		{"unknown candidate", []string{"coreserve", "-sub", "1@+1h+1h", "-candidates", "a,tpu"}, exitError, "candidates[1]"},
		{"help", []string{"coreserve", "-h"}, exitOK, "Each -sub is placed in order"},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Fatalf("%s: exit %d (want %d), output lacks %q?\nstdout: %s\nstderr: %s", tc.name, code, tc.code, tc.want, out, errOut)
		}
	}
}
