package main

import (
	"strings"
	"testing"
)

// TestCLISeries books a standing reservation with reserve -repeat, lists
// its occurrences, shows and cancels it, and refuses bad flags with a
// usage error.
func TestCLISeries(t *testing.T) {
	cliSite(t)
	code, out, errOut := runCLI(t, "reserve", "-res", "gpu=2", "-dur", "3h", "-id", "lab-gpus",
		"-repeat", "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=4", "-tz", "Europe/Berlin", "-at", "2030-01-01T00:00:00+01:00")
	if code != 0 {
		t.Fatalf("reserve -repeat: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"series  lab-gpus (live", "RRULE:FREQ=WEEKLY;COUNT=4;BYDAY=MO,WE;BYHOUR=9",
		"lab-gpus@20300102T090000", "2030-01-02T08:00:00Z", "lab-gpus@20300109T090000", "booked  4, could not book 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("reserve -repeat output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ = runCLI(t, "list", "-series", "lab-gpus"); code != 0 || strings.Count(out, "lab-gpus@") != 4 {
		t.Errorf("list -series: exit %d:\n%s", code, out)
	}
	// All or nothing: 8 GPUs on Wednesday 2 January collide.
	code, out, errOut = runCLI(t, "reserve", "-res", "gpu=8", "-dur", "1h", "-id", "all",
		"-repeat", "FREQ=DAILY;BYHOUR=9;COUNT=3", "-tz", "Europe/Berlin", "-at", "2030-01-01T00:00:00+01:00")
	if code != exitRejected || !strings.Contains(out, "all@20300102T090000") || !strings.Contains(out, "2030-01-02T11:00:00Z") {
		t.Errorf("all-or-nothing conflict: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "reserve", "-res", "gpu=8", "-dur", "1h", "-id", "all", "-skip-conflicts",
		"-repeat", "FREQ=DAILY;BYHOUR=9;COUNT=3", "-tz", "Europe/Berlin", "-at", "2030-01-01T00:00:00+01:00")
	if code != 0 || !strings.Contains(out, "booked  2, could not book 1") || !strings.Contains(out, "NOT BOOKED") {
		t.Errorf("skip conflicts: exit %d\n%s", code, out)
	}
	if code, out, _ = runCLI(t, "series", "cancel", "lab-gpus", "-from", "2030-01-05T00:00:00Z"); code != 0 || !strings.Contains(out, "cancelled 3 occurrences") {
		t.Errorf("series cancel: exit %d\n%s", code, out)
	}
	if code, out, _ = runCLI(t, "series", "get", "lab-gpus"); code != 0 || !strings.Contains(out, "(cancelled") {
		t.Errorf("series get: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"reserve", "-res", "gpu=1", "-dur", "1h", "-tz", "UTC"},
		{"reserve", "-res", "gpu=1", "-dur", "1h", "-repeat", "FREQ=DAILY", "-after", "+1h"},
		{"series", "frobnicate"},
		{"series", "modify", "lab-gpus", "-new-id", "x"},
	} {
		if code, _, _ := runCLI(t, bad...); code != exitUsage {
			t.Errorf("%q: exit %d, want usage", bad, code)
		}
	}
	if code, _, errOut := runCLI(t, "reserve", "-res", "gpu=1", "-dur", "1h", "-id", "x", "-repeat", "FREQ=DAILY;BYHOUR=25"); code == 0 || !strings.Contains(errOut, "repeat") {
		t.Errorf("bad rule: exit %d %s", code, errOut)
	}
}
