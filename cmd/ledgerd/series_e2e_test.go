package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testwait"
)

// TestSeriesLeaderKilledBetweenExpansions runs the standing reservations
// end to end through the CLI on three secured agent processes: an endless
// hourly series with a 90-minute horizon, whose next occurrences the
// leader books as its clock moves on. The clocks are stepped an hour
// forward (the agents' clock-offset testing aid), the leader expands, is
// SIGKILLed, the clocks step again and the new leader expands from the
// replicated watermark. Every occurrence from the first to the last is
// then booked exactly once: one row each, one COMMITTED event each, none
// skipped. Waits poll the CLI under deadlines. It builds the binary, so
// it runs only with LEDGERD_E2E=1, like TestThreeAgentProcesses.
func TestSeriesLeaderKilledBetweenExpansions(t *testing.T) {
	bin := e2eBinary(t)
	start := time.Now()
	sec := makePKI(t, bin, []string{"head-1", "head-2", "head-3"})
	procs := startAgents(t, bin, sec)
	stopWithLogs(t, procs)
	dataDir := func(p *agentProc) string {
		for i, a := range p.args {
			if a == "-data-dir" {
				return p.args[i+1]
			}
		}
		t.Fatalf("%s has no -data-dir", p.name)
		return ""
	}
	addrs := func(ps []*agentProc) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.http)
		}
		return strings.Join(out, ",")
	}
	alive := procs
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		args = append(args, "-addr", addrs(alive), "-token", sec.token, "-ca-file", sec.ca, "-timeout", "10s")
		return runCLI(t, args...)
	}
	// retry runs a CLI command until it exits 0 (a leader change makes
	// single calls fail for a moment).
	retry := func(what string, args ...string) string {
		t.Helper()
		code, out, errOut := -1, "", ""
		defer func() {
			if code != 0 {
				t.Logf("%s: last exit %d: %s", what, code, errOut)
			}
		}()
		testwait.Every(t, 20*time.Second, 200*time.Millisecond, what, func() bool {
			code, out, errOut = cli(args...)
			return code == 0
		})
		return out
	}
	type seriesJSON struct {
		Booked         int    `json:"booked"`
		Skipped        int    `json:"skipped"`
		DecidedThrough string `json:"decided_through"`
	}
	get := func(id string) seriesJSON {
		t.Helper()
		var s seriesJSON
		out := retry("series get "+id, "series", "get", id, "-json")
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &s); err != nil {
			t.Fatalf("series get -json: %q: %v", out, err)
		}
		return s
	}
	// step moves the clock of every live agent to offset and waits until
	// the leader has expanded past through.
	step := func(offset time.Duration, through string) seriesJSON {
		t.Helper()
		for _, p := range alive {
			if err := os.WriteFile(filepath.Join(dataDir(p), "clock-offset"), []byte(fmt.Sprint(offset.Milliseconds())), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var s seriesJSON
		testwait.Every(t, 15*time.Second, 200*time.Millisecond,
			fmt.Sprintf("an expansion past %s after stepping the clocks to +%s", through, offset), func() bool {
				s = get("night")
				return s.DecidedThrough > through
			})
		return s
	}

	retry("create gpu", "resources", "create", "gpu", "-capacity", "8", "-unit", "GPUs")
	out := retry("reserve -repeat", "reserve", "-res", "gpu=8", "-dur", "30m", "-id", "night",
		"-repeat", "FREQ=HOURLY;BYMINUTE=0", "-tz", "UTC", "-horizon", "90m")
	t.Logf("created:\n%s", out)
	s0 := get("night")
	s1 := step(time.Hour, s0.DecidedThrough)
	t.Logf("after +1h: booked %d, decided through %s", s1.Booked, s1.DecidedThrough)

	leader := findLeader(t, sec, procs)
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	alive = nil
	for _, p := range procs {
		if p != leader {
			alive = append(alive, p)
		}
	}
	s2 := step(2*time.Hour, s1.DecidedThrough)
	t.Logf("leader %s killed; after +2h: booked %d, decided through %s", leader.name, s2.Booked, s2.DecidedThrough)

	// Exactly once: the rows of the series, and one COMMITTED event each.
	rows := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(retry("list -series", "list", "-series", "night", "-all", "-json")), "\n") {
		var r struct {
			ID       string `json:"id"`
			SeriesID string `json:"series_id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list -json line %q: %v", line, err)
		}
		if r.SeriesID != "night" {
			t.Errorf("%s: series id %q", r.ID, r.SeriesID)
		}
		rows[r.ID] = true
	}
	committed := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(retry("history", "history", "-json")), "\n") {
		var e struct {
			Action      string `json:"action"`
			Reservation struct {
				ID       string `json:"id"`
				SeriesID string `json:"series_id"`
			} `json:"reservation"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("history -json line %q: %v", line, err)
		}
		if e.Action == "committed" && e.Reservation.SeriesID == "night" {
			committed[e.Reservation.ID]++
		}
	}
	final := get("night")
	if final.Skipped != 0 || final.Booked != len(rows) || len(committed) != len(rows) {
		t.Fatalf("series %+v, %d rows, %d committed occurrences", final, len(rows), len(committed))
	}
	for id, n := range committed {
		if n != 1 || !rows[id] {
			t.Errorf("%s: %d COMMITTED events, row %v", id, n, rows[id])
		}
	}
	// No hour is missing between the first and the last occurrence.
	first, last := "", ""
	for id := range rows {
		if first == "" || id < first {
			first = id
		}
		if id > last {
			last = id
		}
	}
	const layout = "night@20060102T150405"
	a, errA := time.Parse(layout, first)
	b, errB := time.Parse(layout, last)
	if errA != nil || errB != nil || int(b.Sub(a)/time.Hour)+1 != len(rows) {
		t.Errorf("occurrences %s .. %s are not %d consecutive hours", first, last, len(rows))
	}
	if len(rows) < 3 {
		t.Errorf("only %d occurrences booked over three expansions", len(rows))
	}
	t.Logf("%d occurrences, each booked once, across a leader kill", len(rows))

	// A series asked of a follower whose clock is three hours behind the
	// leader's: the follower expands from its clock, the leader stamps the
	// entry three hours later, so every occurrence the follower proposed
	// is past at the log time. The leader expands the batch again from
	// the log time: all three booked, none skipped, and all or nothing
	// (the CLI's default) does not refuse the series.
	lead := findLeader(t, sec, alive)
	var follower *agentProc
	for _, p := range alive {
		if p != lead {
			follower = p
		}
	}
	if err := os.WriteFile(filepath.Join(dataDir(lead), "clock-offset"), []byte(fmt.Sprint((5 * time.Hour).Milliseconds())), 0o644); err != nil {
		t.Fatal(err)
	}
	before := get("night")
	testwait.Every(t, 15*time.Second, 200*time.Millisecond, "an expansion by the leader after its clock moved to +5h", func() bool {
		return get("night").DecidedThrough > before.DecidedThrough
	})
	asked := time.Now()
	code, out, errOut := -1, "", ""
	for attempt := 0; attempt < 5 && code != 0 && code != 3; attempt++ {
		code, out, errOut = runCLI(t, "reserve", "-res", "gpu=8", "-dur", "15m", "-id", "edge",
			"-repeat", "FREQ=HOURLY;BYMINUTE=40;COUNT=3", "-tz", "UTC", "-json",
			"-addr", follower.http, "-token", sec.token, "-ca-file", sec.ca, "-timeout", "10s")
	}
	if code != 0 {
		t.Fatalf("reserve -repeat through follower %s, leader's clock 3h ahead: exit %d\n%s%s", follower.name, code, out, errOut)
	}
	var starts []time.Time
	for _, line := range strings.Split(strings.TrimSpace(retry("list -series edge", "list", "-series", "edge", "-all", "-json")), "\n") {
		var r struct {
			Start time.Time `json:"start"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list -json line %q: %v", line, err)
		}
		starts = append(starts, r.Start)
	}
	edge := get("edge")
	if edge.Booked != 3 || edge.Skipped != 0 || len(starts) != 3 {
		t.Fatalf("series edge: booked %d, skipped %d, %d rows; want 3 booked, none skipped", edge.Booked, edge.Skipped, len(starts))
	}
	slices.SortFunc(starts, time.Time.Compare)
	if !starts[0].After(asked.Add(4 * time.Hour)) {
		t.Errorf("the first occurrence starts at %s, before the leader's clock (about %s)", starts[0], asked.Add(5*time.Hour).UTC())
	}
	t.Logf("through a follower 3h behind the leader: booked %v; %s in all", starts, time.Since(start).Round(time.Millisecond))
}
