package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/rpc"
)

var cliT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// cliSite starts an API server and points the CLI at it through the
// environment, with the clock at cliT0.
func cliSite(t *testing.T) *agenttest.Site {
	t.Helper()
	s := agenttest.NewSite(t, agenttest.Options{API: rpc.Options{Auth: agenttest.NewAuth(t)}})
	t.Setenv("LEDGERD_ADDR", s.Addrs[0])
	t.Setenv("LEDGERD_TOKEN", agenttest.TokenAcme)
	old := cliNow
	cliNow = func() time.Time { return cliT0 }
	t.Cleanup(func() { cliNow = old })
	if code, _, errOut := runCLI(t, "resources", "create", "gpu", "-capacity", "8", "-unit", "GPUs", "-token", agenttest.TokenOps); code != 0 {
		t.Fatalf("resources create: %d %s", code, errOut)
	}
	return s
}

// runCLI runs one subcommand and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	oldOut, oldErr := cliOut, cliErr
	cliOut, cliErr = &out, &errOut
	defer func() { cliOut, cliErr = oldOut, oldErr }()
	cmd, ok := commands[args[0]]
	if !ok {
		t.Fatalf("no command %q", args[0])
	}
	code := cmd.run(args[1:])
	return code, out.String(), errOut.String()
}

// reservation decodes the single -json line of a command.
func reservation(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", out, err)
	}
	return m
}

func TestCLIExitCodes(t *testing.T) {
	cliSite(t)
	cases := []struct {
		name string
		args []string
		code int
		want string // substring of stdout+stderr
	}{
		{"reserve ok", []string{"reserve", "-res", "gpu=8", "-dur", "2h", "-after", "+1h"}, exitOK, "COMMITTED"},
		{"rejected", []string{"reserve", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-before", "+3h"}, exitRejected, "earliest start that would fit: 2030-01-01T03:00:00Z"},
		{"find no fit", []string{"find", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-before", "+3h"}, exitRejected, "2030-01-01T03:00:00Z"},
		{"find fits", []string{"find", "-res", "gpu=1", "-dur", "1h", "-after", "+1h"}, exitOK, "fits at 2030-01-01T03:00:00Z"},
		{"missing -res", []string{"reserve", "-dur", "1h"}, exitUsage, "-res is required"},
		{"bad time", []string{"reserve", "-res", "gpu=1", "-dur", "1h", "-after", "tomorrow"}, exitUsage, "RFC 3339"},
		{"bad flag", []string{"list", "-bogus"}, exitUsage, "flag provided but not defined"},
		{"negative amount", []string{"reserve", "-res", "gpu=-1", "-dur", "1h"}, exitError, "shape.parts[0].amount"},
		{"unknown id", []string{"get", "nope"}, exitError, "not_found"},
		{"bad token", []string{"list", "-token", "wrong-token"}, exitError, "unauthenticated"},
		{"tenant creates resource", []string{"resources", "create", "x", "-capacity", "1"}, exitError, "permission_denied"},
		{"help", []string{"list", "-h"}, exitOK, "Usage: ledgerd list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("output lacks %q\nstdout: %s\nstderr: %s", tc.want, out, errOut)
			}
		})
	}
}

func TestCLITwoPhaseAndModify(t *testing.T) {
	cliSite(t)
	code, out, errOut := runCLI(t, "hold", "-res", "gpu=2", "-dur", "1h", "-at", "2030-01-01T05:00:00Z", "-ttl", "5m", "-json")
	if code != exitOK {
		t.Fatalf("hold: %d %s", code, errOut)
	}
	r := reservation(t, out)
	id := r["id"].(string)
	if r["state"] != "RESERVATION_STATE_HELD" {
		t.Fatalf("hold = %v", r)
	}
	if code, out, _ = runCLI(t, "commit", id, "-json"); code != exitOK || reservation(t, out)["state"] != "RESERVATION_STATE_COMMITTED" {
		t.Fatalf("commit: %d %s", code, out)
	}
	// Modify to a later slot, abort it (original kept), modify again, commit.
	if code, out, _ = runCLI(t, "modify", id, "-res", "gpu=4", "-dur", "2h", "-after", "+10h", "-json"); code != exitOK || reservation(t, out)["pending"] == nil {
		t.Fatalf("modify: %d %s", code, out)
	}
	if code, out, _ = runCLI(t, "abort", id, "-json"); code != exitOK || reservation(t, out)["start"] != "2030-01-01T05:00:00Z" {
		t.Fatalf("abort modification: %d %s", code, out)
	}
	runCLI(t, "modify", id, "-res", "gpu=4", "-dur", "2h", "-after", "+10h")
	if code, out, _ = runCLI(t, "commit", id, "-json"); code != exitOK || reservation(t, out)["start"] != "2030-01-01T10:00:00Z" {
		t.Fatalf("commit modification: %d %s", code, out)
	}
	if code, out, _ = runCLI(t, "cancel", id); code != exitOK || !strings.Contains(out, "CANCELLED") {
		t.Fatalf("cancel: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "list", "-state", "cancelled")
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.Contains(out, id) {
		t.Fatalf("list: %d\n%s", code, out)
	}
}

func TestCLIAvailabilityChartAndOffers(t *testing.T) {
	cliSite(t)
	runCLI(t, "reserve", "-res", "gpu=6", "-dur", "6h", "-at", "+6h")
	code, out, errOut := runCLI(t, "availability", "gpu", "-from", "now", "-to", "+24h", "-width", "24", "-height", "4")
	if code != exitOK {
		t.Fatalf("availability: %d %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	// Top row (8 free) is full except during hours 6..12, where only 2 are free.
	top := lines[1]
	if want := "8 |######      ############"; top != want {
		t.Fatalf("top row\n got %q\nwant %q\n%s", top, want, out)
	}
	bottom := lines[4]
	if want := "2 |########################"; bottom != want {
		t.Fatalf("bottom row\n got %q\nwant %q\n%s", bottom, want, out)
	}
	if !strings.Contains(out, "2030-01-01T06:00:00Z .. 2030-01-01T12:00:00Z  free 2") {
		t.Fatalf("step list missing:\n%s", out)
	}
	code, out, _ = runCLI(t, "offers", "-res", "gpu=4", "-dur", "3h", "-n", "2")
	if code != exitOK || !strings.Contains(out, "2030-01-01T00:00:00Z") {
		t.Fatalf("offers: %d\n%s", code, out)
	}
}

func TestCLIWatchPrintsEvents(t *testing.T) {
	cliSite(t)
	runCLI(t, "reserve", "-res", "gpu=1", "-dur", "1h", "-after", "+1h")
	code, out, errOut := runCLI(t, "watch", "-from-version", "1", "-for", "2s", "-json", "-token", agenttest.TokenOps)
	if code != exitOK {
		t.Fatalf("watch: %d %s", code, errOut)
	}
	if n := strings.Count(out, "\n"); n < 2 || !strings.Contains(out, `"resource_created"`) || !strings.Contains(out, `"committed"`) {
		t.Fatalf("watch printed %d lines:\n%s", n, out)
	}
}

func TestParseTime(t *testing.T) {
	old := cliNow
	cliNow = func() time.Time { return cliT0 }
	defer func() { cliNow = old }()
	for in, want := range map[string]time.Time{
		"now":                  cliT0,
		"+2h":                  cliT0.Add(2 * time.Hour),
		"-30m":                 cliT0.Add(-30 * time.Minute),
		"+1d":                  cliT0.Add(24 * time.Hour),
		"2030-02-03T04:05:06Z": time.Date(2030, 2, 3, 4, 5, 6, 0, time.UTC),
	} {
		got, err := parseTime(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "+", "+2x", "yesterday", "2030-02-03"} {
		if _, err := parseTime(bad); err == nil {
			t.Errorf("parseTime(%q) accepted", bad)
		}
	}
}

func TestCLIResources(t *testing.T) {
	cliSite(t)
	ops := []string{"-token", agenttest.TokenOps}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{append([]string{"resources", "create", "cpu", "-capacity", "128", "-unit", "cores", "-label", "site=a"}, ops...), exitOK, "site=a"},
		{append([]string{"resources", "update", "cpu", "-capacity", "64", "-from", "+1h", "-to", "+2h"}, ops...), exitOK, "cpu"},
		{[]string{"reserve", "-res", "cpu=100", "-dur", "1h", "-after", "+30m", "-before", "+2h30m"}, exitRejected, "2030-01-01T02:00:00Z"},
		{append([]string{"resources", "update", "cpu", "-capacity", "-5"}, ops...), exitUsage, "-capacity"},
		{append([]string{"resources", "delete", "cpu"}, ops...), exitOK, "deleted cpu"},
		{append([]string{"resources", "delete", "cpu"}, ops...), exitError, "not_found"},
		{append([]string{"resources", "bogus"}, ops...), exitUsage, "unknown subcommand"},
		{[]string{"resources"}, exitOK, "gpu"},
		{[]string{"members"}, exitError, "permission_denied"},
		{append([]string{"members"}, ops...), exitError, "unimplemented"},
	}
	for _, s := range steps {
		code, out, errOut := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(out+errOut, s.want) {
			t.Fatalf("%v: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant %q", s.args, code, s.code, out, errOut, s.want)
		}
	}
}

func TestCLICoalloc(t *testing.T) {
	a := cliSite(t)
	b := agenttest.NewSite(t, agenttest.Options{API: rpc.Options{Auth: agenttest.NewAuth(t)}})
	if code, _, errOut := runCLI(t, "resources", "create", "cpu", "-capacity", "64", "-addr", b.Addrs[0], "-token", agenttest.TokenOps); code != 0 {
		t.Fatal(errOut)
	}
	// Site b is busy for the first two hours: the common start is +2h.
	if code, _, errOut := runCLI(t, "reserve", "-res", "cpu=60", "-dur", "2h", "-addr", b.Addrs[0]); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "coalloc", "-site", "a="+a.Addrs[0], "-site", "b="+b.Addrs[0], "-res", "a:gpu=4", "-res", "b:cpu=16", "-dur", "1h", "-ttl", "1m")
	if code != exitOK || !strings.Contains(out, "co-allocated 2030-01-01T02:00:00Z .. 2030-01-01T03:00:00Z on 2 sites") || strings.Count(out, "COMMITTED") != 2 {
		t.Fatalf("coalloc: %d\n%s\n%s", code, out, errOut)
	}
	// No room in the window at b: exit 3, nothing left held at a.
	code, _, errOut = runCLI(t, "coalloc", "-site", "a="+a.Addrs[0], "-site", "b="+b.Addrs[0], "-res", "a:gpu=4", "-res", "b:cpu=60", "-dur", "1h", "-before", "+2h")
	if code != exitRejected {
		t.Fatalf("coalloc without room: %d %s", code, errOut)
	}
	if code, out, _ := runCLI(t, "list", "-state", "held"); code != exitOK || strings.Count(out, "\n") != 1 {
		t.Fatalf("holds left at a:\n%s", out)
	}
	if code, _, _ := runCLI(t, "coalloc", "-site", "a="+a.Addrs[0], "-res", "c:gpu=1", "-dur", "1h"); code != exitUsage {
		t.Fatalf("unknown site: exit %d", code)
	}
}
