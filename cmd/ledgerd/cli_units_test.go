package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/agent/agenttest"
)

// TestReadmeUnitsExample runs the README's units example against a dev
// agent: the resource lists its units, the reservation names two, and the
// down window over one of them moves the reservation, with an event.
func TestReadmeUnitsExample(t *testing.T) {
	cmds := readmeCommands(t, "## Concrete units")
	s, _ := startAgent(t, "-data-dir", t.TempDir())
	t.Setenv("LEDGERD_ADDR", s.Addr())
	want := []string{"n[1-4]", "n[1-2]", "[psu-swap]", "units_remapped"}
	if len(cmds) != len(want) {
		t.Fatalf("units example has %d commands, want %d: %q", len(cmds), len(want), cmds)
	}
	for i, c := range cmds {
		for j := range c {
			// The shell's quotes around a hostlist.
			c[j] = strings.Trim(c[j], "'")
		}
		code, stdout, stderr := runCLI(t, c...)
		if code != exitOK || !strings.Contains(stdout, want[i]) {
			t.Fatalf("ledgerd %s: exit %d, output lacks %q:\n%s%s", strings.Join(c, " "), code, want[i], stdout, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "get", "-json", "r-00000000000000000009")
	var r struct{ Units []string }
	if code != exitOK || json.Unmarshal([]byte(stdout), &r) != nil || len(r.Units) != 2 || slices.Contains(r.Units, "n1") {
		t.Fatalf("get -json after the down window: %d %s%s", code, stdout, stderr)
	}
}

// TestCLIUnits: the unit flags and subcommands refuse bad input with
// usage errors or the server's field errors, and REFUSE exits 3 with the
// earliest start that maps.
func TestCLIUnits(t *testing.T) {
	cliSite(t)
	ops := []string{"-token", agenttest.TokenOps}
	if code, out, errOut := runCLI(t, append([]string{"resource", "create", "pair", "-nodes", "a,b", "-unit-policy", "refuse"}, ops...)...); code != exitOK || !strings.Contains(out, "a,b (refuse)") {
		t.Fatalf("create pair: %d\n%s%s", code, out, errOut)
	}
	// X and then B over [3h,4h) take a and b; A over [1h,2h) takes a;
	// X leaves. One unit is free in sum over [1h,3h30m), none for all of it.
	code, out, errOut := runCLI(t, "reserve", "-res", "pair=1", "-dur", "1h", "-at", "+3h", "-json")
	if code != exitOK {
		t.Fatalf("reserve X: %d %s", code, errOut)
	}
	x := reservation(t, out)
	for _, at := range []string{"+3h", "+1h"} {
		if code, out, errOut := runCLI(t, "reserve", "-res", "pair=1", "-dur", "1h", "-at", at); code != exitOK {
			t.Fatalf("reserve at %s: %d\n%s%s", at, code, out, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "cancel", x["id"].(string)); code != exitOK {
		t.Fatalf("cancel X: %d\n%s%s", code, out, errOut)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad hostlist", append([]string{"resource", "create", "x", "-nodes", "n[1-"}, ops...), exitError, "nodes"},
		{"duplicate names", append([]string{"resource", "create", "x", "-nodes", "n[1-3],n2"}, ops...), exitError, `"n2" appears twice`},
		{"unit policy without nodes", []string{"resource", "create", "x", "-capacity", "2", "-unit-policy", "refuse"}, exitUsage, "-unit-policy applies to a resource with -nodes only"},
		{"unknown unit policy", []string{"resource", "create", "x", "-nodes", "a", "-unit-policy", "shuffle"}, exitUsage, "unknown policy"},
		{"unit-down without -to", []string{"resource", "unit-down", "pair", "a"}, exitUsage, "-to is required"},
		{"unit-down without unit", []string{"resource", "unit-down", "pair", "-to", "+1h"}, exitUsage, "want a resource name and a unit"},
		{"unit-up without id", []string{"resource", "unit-up", "pair"}, exitUsage, "want a resource name and a down window's id"},
		{"units without a change", []string{"resource", "units", "pair"}, exitUsage, "give -add, -remove or both"},
		{"units without a name", []string{"resource", "units", "-add", "c"}, exitUsage, "want a resource name"},
		{"units bad hostlist", append([]string{"resource", "units", "pair", "-add", "c[1-"}, ops...), exitError, "add"},
		{"units removes a booked unit", append([]string{"resource", "units", "pair", "-remove", "a,b"}, ops...), exitError, "remove"},
		{"more than the units", []string{"reserve", "-res", "pair=3", "-dur", "1h"}, exitError, `resource "pair" has 2`},
		{"unmappable", []string{"reserve", "-res", "pair=1", "-dur", "150m", "-after", "+1h", "-before", "+210m"}, exitRejected, "no set of units is free"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, code, c.code, c.want, out, errOut)
		}
	}
	// A REFUSE resource keeps its booked units; a new one joins.
	if code, out, errOut := runCLI(t, append([]string{"resource", "units", "pair", "-add", "c"}, ops...)...); code != exitOK || !strings.Contains(out, "a,b,c (refuse)") {
		t.Fatalf("units -add c: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, append([]string{"resource", "units", "pair", "-remove", "a"}, ops...)...); code == exitOK || !strings.Contains(out+errOut, "REFUSE") {
		t.Fatalf("units -remove a booked unit under REFUSE: %d\n%s%s", code, out, errOut)
	}
}
