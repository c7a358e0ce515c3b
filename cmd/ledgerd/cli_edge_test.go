package main

import (
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/agent/agenttest"
)

// The small command-line fixes of "what is accepted can be stored, read
// back and retried", one test each.

func TestDispatchUsageExitsTwo(t *testing.T) {
	if code := dispatch([]string{"no-such"}, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("unknown command: exit %d, want %d", code, exitUsage)
	}
	if code := dispatch(nil, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("no command: exit %d, want %d", code, exitUsage)
	}
}

func TestCLIDurationsAndTTL(t *testing.T) {
	cliSite(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"negative ttl", []string{"hold", "-res", "gpu=1", "-dur", "1h", "-ttl", "-5m"}, "-ttl must be > 0"},
		{"zero ttl", []string{"hold", "-res", "gpu=1", "-dur", "1h", "-ttl", "0s"}, "-ttl must be > 0"},
		{"negative modify ttl", []string{"modify", "x", "-res", "gpu=1", "-dur", "1h", "-ttl", "-1s"}, "-ttl must be > 0"},
		{"a million days", []string{"reserve", "-res", "gpu=1", "-dur", "1000000d"}, "out of range (at most 106751d)"},
		{"negative duration", []string{"reserve", "-res", "gpu=1", "-dur", "-1h"}, "-dur must be > 0"},
		{"no duration", []string{"reserve", "-res", "gpu=1"}, "-dur is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q (stdout %q); want %d and %q", code, errOut, out, exitUsage, tc.want)
			}
		})
	}
	// A long but representable duration reaches the ledger, which names
	// the end of time.
	code, _, errOut := runCLI(t, "reserve", "-res", "gpu=1", "-dur", "100000d", "-after", "9900-01-01T00:00:00Z")
	if code != exitError || !strings.Contains(errOut, "shape.duration") || !strings.Contains(errOut, "9999-12-31T23:59:59.999Z") {
		t.Fatalf("a window past 9999: exit %d, %q", code, errOut)
	}
}

func TestCLIJSONErrors(t *testing.T) {
	cliSite(t)
	for _, tc := range []struct {
		name  string
		args  []string
		exit  int
		code  string
		field string
	}{
		{"bad field", []string{"reserve", "-res", "gpu=0", "-dur", "1h", "-json"}, exitError, "invalid_argument", "shape.parts[0].amount"},
		{"not found", []string{"get", "nope", "-json"}, exitError, "not_found", ""},
		{"rejected", []string{"reserve", "-res", "gpu=9", "-dur", "1h", "-json"}, exitError, "invalid_argument", "shape.parts[0].amount"},
		{"usage", []string{"reserve", "-res", "gpu=1", "-json"}, exitUsage, "usage", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			var got struct {
				Error cliError `json:"error"`
			}
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &got) != nil {
				t.Fatalf("stderr is not one JSON object: %q", errOut)
			}
			if code != tc.exit || got.Error.Exit != tc.exit || got.Error.Code != tc.code || got.Error.Field != tc.field {
				t.Fatalf("exit %d, %+v; want exit %d, code %s, field %q", code, got.Error, tc.exit, tc.code, tc.field)
			}
		})
	}
	// A rejection for capacity carries the earliest start in RFC 3339.
	if code, _, errOut := runCLI(t, "reserve", "-res", "gpu=8", "-dur", "2h", "-after", "+1h"); code != exitOK {
		t.Fatal(errOut)
	}
	code, _, errOut := runCLI(t, "reserve", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-before", "+3h", "-json")
	var got struct {
		Error cliError `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(errOut)), &got); err != nil || code != exitRejected || got.Error.EarliestStart != "2030-01-01T03:00:00Z" {
		t.Fatalf("rejection: exit %d, %q", code, errOut)
	}
}

func TestCLIMessagesForPeople(t *testing.T) {
	cliSite(t)
	// An exact start in the past, as the ledger's log time sees it: the
	// message says when, in RFC 3339, not in Unix milliseconds.
	if got := humanize("invalid shape.exact_start: must not be before the log time 1893456000000"); got != "invalid shape.exact_start: must not be before the log time 2030-01-01T00:00:00Z" {
		t.Errorf("humanize: %q", got)
	}
	if got := humanize(`cannot commit reservation "x" in state STATE_ABORTED`); got != `cannot commit reservation "x" in state ABORTED` {
		t.Errorf("humanize: %q", got)
	}
	if got := humanize("RESERVATION_STATE_EXPIRED and version 42 and 12345"); got != "EXPIRED and version 42 and 12345" {
		t.Errorf("humanize: %q", got)
	}
	// One spelling of a state: the table's.
	code, out, errOut := runCLI(t, "hold", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-json")
	if code != exitOK {
		t.Fatal(errOut)
	}
	id := reservation(t, out)["id"].(string)
	if code, _, errOut := runCLI(t, "abort", id); code != exitOK {
		t.Fatal(errOut)
	}
	code, _, errOut = runCLI(t, "commit", id)
	if code != exitError || !strings.Contains(errOut, "in state ABORTED") || strings.Contains(errOut, "STATE_") {
		t.Fatalf("commit of an aborted hold: %d %q", code, errOut)
	}
	// "not found" once.
	_, _, errOut = runCLI(t, "get", "nope")
	if strings.Count(errOut, "not found") != 1 {
		t.Fatalf("get nope: %q", errOut)
	}
}

func TestCLIOffersSayWhy(t *testing.T) {
	cliSite(t)
	// Only one start fits before the deadline.
	code, out, errOut := runCLI(t, "offers", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-before", "+2h", "-n", "5")
	if code != exitOK || !strings.Contains(errOut, "only 1 of the 5 starts") || strings.Count(out, "\n") != 2 {
		t.Fatalf("offers: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "reserve", "-res", "gpu=8", "-dur", "1h", "-after", "+1h"); code != exitOK {
		t.Fatal(errOut)
	}
	code, _, errOut = runCLI(t, "offers", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-before", "+2h")
	if code != exitRejected || !strings.Contains(errOut, "no start fits in the window") {
		t.Fatalf("no offer: exit %d, %q", code, errOut)
	}
}

func TestCLIHistoryOfOneReservation(t *testing.T) {
	cliSite(t)
	var ids []string
	for range 2 {
		code, out, errOut := runCLI(t, "hold", "-res", "gpu=1", "-dur", "1h", "-after", "+1h", "-json")
		if code != exitOK {
			t.Fatal(errOut)
		}
		ids = append(ids, reservation(t, out)["id"].(string))
	}
	if code, _, errOut := runCLI(t, "commit", ids[0]); code != exitOK {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "history", ids[0])
	if code != exitOK {
		t.Fatal(errOut)
	}
	if strings.Contains(out, ids[1]) || strings.Count(out, ids[0]) != 2 || !strings.Contains(out, "held") || !strings.Contains(out, "committed") {
		t.Fatalf("history %s:\n%s", ids[0], out)
	}
	code, out, _ = runCLI(t, "history", "-json")
	if code != exitOK || !strings.Contains(out, ids[1]) || !strings.Contains(out, "resource_created") {
		t.Fatalf("history of everything: %d\n%s", code, out)
	}
	// A mistyped ID gets a word, not only an empty table.
	code, out, errOut = runCLI(t, "history", "r-nope")
	if code != exitOK || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(errOut, `no events recorded for "r-nope" from version 1 on`) {
		t.Fatalf("history of an unknown ID: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, _, errOut = runCLI(t, "history", ids[0]); strings.Contains(errOut, "no events") {
		t.Fatalf("history of a known ID says it has none: %s", errOut)
	}
}

func TestCLIResourcesShowWindows(t *testing.T) {
	cliSite(t)
	code, out, errOut := runCLI(t, "resources", "-token", agenttest.TokenOps)
	if code != exitOK || strings.Contains(out, "WINDOWS") {
		t.Fatalf("no windows: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "resources", "update", "gpu", "-capacity", "4", "-from", "+1h", "-to", "+3h", "-token", agenttest.TokenOps); code != exitOK {
		t.Fatal(errOut)
	}
	code, out, errOut = runCLI(t, "resources", "-token", agenttest.TokenOps)
	if code != exitOK || !strings.Contains(out, "WINDOWS") || !strings.Contains(out, "4 from 2030-01-01T01:00:00Z to 2030-01-01T03:00:00Z") {
		t.Fatalf("a maintenance window: %d\n%s%s", code, out, errOut)
	}
}

// TestUsageHoursMarksSaturatedFigures: only the figure a saturated sum
// gives, in a row that says it saturated, carries the "+".
func TestUsageHoursMarksSaturatedFigures(t *testing.T) {
	const top = math.MaxInt64 / 1000
	for _, tc := range []struct {
		s         int64
		saturated bool
		want      string
	}{
		{5400, false, "1.50"},
		{5400, true, "1.50"},
		{top, false, "2562047788015.21"},
		{top, true, "2562047788015.21+"},
	} {
		if got := usageHours(tc.s, tc.saturated); got != tc.want {
			t.Errorf("usageHours(%d, %v) = %q, want %q", tc.s, tc.saturated, got, tc.want)
		}
	}
}

// TestCellQuotesControlCharacters: free text with a control character is
// printed quoted, so that it can neither break a table's columns nor drive
// the reader's terminal; other text, Unicode included, is printed as is.
func TestCellQuotesControlCharacters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cores", "cores"},
		{"Grüße", "Grüße"},
		{"", ""},
		{"a\tb", `"a\tb"`},
		{"x\x1b[2Jboom", `"x\x1b[2Jboom"`},
		{"line\nbreak", `"line\nbreak"`},
		{"del\x7f", `"del\x7f"`},
	} {
		if got := cell(tc.in); got != tc.want {
			t.Errorf("cell(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
