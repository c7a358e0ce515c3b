package main

import (
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/agent/agenttest"
)

// TestCLIPolicies creates a move-variable resource, submits a variable job,
// books over it and sees the job moved, then changes the policy; usage
// and server errors exit as every other command does.
func TestCLIPolicies(t *testing.T) {
	cliSite(t)
	code, out, errOut := runCLI(t, "resource", "create", "batch", "--capacity", "10", "--policy", "move-variable", "--max-pushes", "2", "-token", agenttest.TokenOps)
	if code != exitOK || !strings.Contains(out, "move-variable max-pushes=2") {
		t.Fatalf("resource create: %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "job", "submit", "--resource", "batch", "--amount", "10", "--duration", "2h", "--not-before", "+1h", "--id", "j1", "-json")
	if code != exitOK {
		t.Fatalf("job submit: %d %s", code, errOut)
	}
	if j := reservation(t, out); j["kind"] != "RESERVATION_KIND_VARIABLE_JOB" || j["state"] != "RESERVATION_STATE_COMMITTED" || j["start"] != "2030-01-01T01:00:00Z" || j["not_before"] != "2030-01-01T01:00:00Z" {
		t.Fatalf("job submit = %v", j)
	}

	// Six nodes at 1h30 collide with the job only: booked, the job moves
	// behind them, and the command says so.
	code, out, errOut = runCLI(t, "reserve", "-res", "batch=6", "-dur", "1h", "-at", "+90m")
	if code != exitOK || !strings.Contains(out, "COMMITTED") || !strings.Contains(out, "moved job j1: 2030-01-01T01:00:00Z -> 2030-01-01T02:30:00Z") {
		t.Fatalf("reserve over the job: %d\n%s%s", code, out, errOut)
	}
	if code, out, _ = runCLI(t, "get", "j1"); code != exitOK || !strings.Contains(out, "job") || !strings.Contains(out, "moved later 1x") || !strings.Contains(out, "2030-01-01T02:30:00Z") {
		t.Fatalf("get j1: %d\n%s", code, out)
	}

	code, out, errOut = runCLI(t, "resources", "policy", "set", "batch", "--policy", "relaxed", "--vstar", "0.75", "-token", agenttest.TokenOps)
	if code != exitOK || !strings.Contains(out, "relaxed v*=0.750") {
		t.Fatalf("policy set: %d\n%s%s", code, out, errOut)
	}
	// The watch shows the job's submission and move and the policy change.
	code, out, errOut = runCLI(t, "watch", "-from-version", "1", "-for", "1s")
	for _, want := range []string{"job_submitted", "replanned", "policy_changed", "relaxed v*=0.750"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("watch lacks %q: %d\n%s%s", want, code, out, errOut)
		}
	}

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"relaxed refusal says why", []string{"reserve", "-res", "batch=10", "-dur", "1h", "-at", "+3h"}, exitRejected, "under its policy: probability of no violation"},
		{"v* without relaxed", []string{"resource", "create", "x", "-capacity", "1", "-vstar", "0.8"}, exitUsage, "-vstar applies to -policy relaxed only"},
		{"v* above 1", []string{"resource", "policy", "set", "batch", "-policy", "relaxed", "-vstar", "1.5"}, exitUsage, "must lie in (0, 1]"},
		{"v* too precise", []string{"resource", "policy", "set", "batch", "-policy", "relaxed", "-vstar", "0.8125"}, exitUsage, "more than three decimals"},
		{"unknown policy", []string{"resource", "policy", "set", "batch", "-policy", "lenient"}, exitUsage, "unknown policy"},
		{"policy required", []string{"resource", "policy", "set", "batch"}, exitUsage, "-policy is required"},
		{"policy without set", []string{"resource", "policy"}, exitUsage, "Usage: ledgerd resources policy set"},
		{"tenant sets a policy", []string{"resource", "policy", "set", "batch", "-policy", "reject"}, exitError, "permission_denied"},
		{"job without a resource", []string{"job", "submit", "-amount", "1", "-duration", "1h"}, exitUsage, "-resource is required"},
		{"job without a duration", []string{"job", "submit", "-resource", "batch", "-amount", "1"}, exitUsage, "-duration is required"},
		{"job without submit", []string{"job"}, exitUsage, "Usage: ledgerd job submit"},
		{"job on an unknown resource", []string{"job", "submit", "-resource", "tpu", "-amount", "1", "-duration", "1h"}, exitError, "not_found"},
		{"job with a bad id", []string{"job", "submit", "-resource", "batch", "-amount", "1", "-duration", "1h", "-id", "r-7"}, exitError, "invalid id"},
		{"job help", []string{"job", "submit", "-h"}, exitOK, "A variable job has no fixed start"},
		{"policy help", []string{"resource", "create", "-h"}, exitOK, "move-variable  a reservation that collides only"},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Fatalf("%s: exit %d (want %d), output lacks %q?\nstdout: %s\nstderr: %s", tc.name, code, tc.code, tc.want, out, errOut)
		}
	}
}
