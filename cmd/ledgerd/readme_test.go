package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// quickStart returns the client commands of the README's quick start.
func quickStart(t *testing.T) [][]string { return readmeCommands(t, "") }

// readmeCommands returns the client commands of the README's first block
// of ledgerd commands after the line heading (from the top when heading
// is empty): the lines that start with "ledgerd", with comments removed
// and ";"-separated commands split.
func readmeCommands(t *testing.T, heading string) [][]string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds [][]string
	in, found := false, heading == ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !found:
			found = line == heading
		case strings.HasPrefix(line, "```"):
			if in && len(cmds) > 0 {
				return cmds
			}
			in = !in
		case in && strings.HasPrefix(line, "ledgerd "):
			line, _, _ = strings.Cut(line, "#")
			for _, c := range strings.Split(line, ";") {
				if fs := strings.Fields(c); len(fs) > 1 && fs[0] == "ledgerd" {
					cmds = append(cmds, fs[1:])
				}
			}
		}
	}
	t.Fatalf("README has no shell block of ledgerd commands after %q", heading)
	return nil
}

// TestReadmeQuickStart runs the README's quick start, command by command,
// against a dev agent: each must succeed and show what the README says.
func TestReadmeQuickStart(t *testing.T) {
	cmds := quickStart(t)
	if len(cmds) < 6 {
		t.Fatalf("quick start has %d commands, want the resources/reserve/hold/find/availability/list/watch tour", len(cmds))
	}
	s, _ := startAgent(t, "-data-dir", t.TempDir())
	t.Setenv("LEDGERD_ADDR", s.Addr())

	// What each command must show, beyond exiting 0.
	want := map[string]string{
		"resources":    "licenses",
		"reserve":      "COMMITTED",
		"hold":         "HELD",
		"find":         "fits at",
		"availability": "capacity 128",
		"watch":        "committed",
	}
	for _, c := range cmds {
		code, stdout, stderr := runCLI(t, c...)
		if code != exitOK {
			t.Fatalf("ledgerd %s: exit %d: %s", strings.Join(c, " "), code, stderr)
		}
		if w, ok := want[c[0]]; ok && !strings.Contains(stdout, w) {
			t.Errorf("ledgerd %s: output lacks %q:\n%s", strings.Join(c, " "), w, stdout)
		}
		if c[0] == "list" { // -json: one reservation per line
			ids := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				var r struct{ ID string }
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("ledgerd list -json: line not JSON (%v): %s", err, line)
				}
				ids[r.ID] = true
			}
			if len(ids) != 3 || !ids["sample"] {
				t.Errorf("ledgerd list -json: want the sample and the two new reservations, got %v", ids)
			}
		}
	}
}

// TestReadmePolicyExample runs the README's admission-policy example
// against a dev agent: the reservation inside the job's slot is admitted
// and moves the job, as the README shows.
func TestReadmePolicyExample(t *testing.T) {
	cmds := readmeCommands(t, "## Admission policies")
	s, _ := startAgent(t, "-data-dir", t.TempDir())
	t.Setenv("LEDGERD_ADDR", s.Addr())
	want := []string{"move-variable max-pushes=4", "not before", "moved job nightly-build: ", "moved later 1x"}
	if len(cmds) != len(want) {
		t.Fatalf("policy example has %d commands, want %d: %q", len(cmds), len(want), cmds)
	}
	for i, c := range cmds {
		code, stdout, stderr := runCLI(t, c...)
		if code != exitOK || !strings.Contains(stdout, want[i]) {
			t.Fatalf("ledgerd %s: exit %d, output lacks %q:\n%s%s", strings.Join(c, " "), code, want[i], stdout, stderr)
		}
	}
}
