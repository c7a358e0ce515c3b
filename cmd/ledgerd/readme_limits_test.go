package main

import (
	"strings"
	"testing"
)

// TestReadmeLimitsExample runs the README's limits and approval example
// against a dev agent: the large request waits for approval, the one over
// max_units is refused saying what fits, the approval commits it and the
// usage report counts both bookings of the tenant.
func TestReadmeLimitsExample(t *testing.T) {
	cmds := readmeCommands(t, "## Limits and approval")
	s, _ := startAgent(t, "-data-dir", t.TempDir())
	t.Setenv("LEDGERD_ADDR", s.Addr())
	want := []struct {
		ok   bool
		text string
	}{
		{true, "units<=96 unit-hours<=500/7d"},
		{true, "PENDING_APPROVAL"},
		{false, "refused: limit exceeded: tenant \"default\" on \"cpu\": max_units 96 units (entry default/cpu): usage 64 units + request 64 units; 32 units would fit"},
		{true, "40 units on \"cpu\" is above the approval threshold 32"},
		{true, "decision: ok-for-the-run"},
		{true, "default  cpu       168.00"},
	}
	if len(cmds) != len(want) {
		t.Fatalf("limits example has %d commands, want %d: %q", len(cmds), len(want), cmds)
	}
	for i, c := range cmds {
		code, stdout, stderr := runCLI(t, c...)
		if (code == exitOK) != want[i].ok || !strings.Contains(stdout+stderr, want[i].text) {
			t.Fatalf("ledgerd %s: exit %d, output lacks %q:\n%s%s", strings.Join(c, " "), code, want[i].text, stdout, stderr)
		}
		if !want[i].ok && code != exitRejected {
			t.Fatalf("ledgerd %s: exit %d, want %d (refused by a limit)", strings.Join(c, " "), code, exitRejected)
		}
	}
}
