package main

import (
	"strings"
	"testing"
)

func TestCLIComplete(t *testing.T) {
	cliSite(t)
	code, out, errOut := runCLI(t, "reserve", "-res", "gpu=8", "-dur", "2h", "-json")
	if code != exitOK {
		t.Fatalf("reserve: %d %s", code, errOut)
	}
	r := reservation(t, out)
	id := r["id"].(string)
	if r["state"] != "RESERVATION_STATE_ACTIVE" {
		t.Fatalf("reserve = %v", r)
	}

	// Announce the end after 30 minutes (the ID may come before the flag).
	code, out, errOut = runCLI(t, "complete", id, "-at", "+30m", "-json")
	if code != exitOK {
		t.Fatalf("complete -at: %d %s", code, errOut)
	}
	r = reservation(t, out)
	if r["end"] != "2030-01-01T00:30:00Z" || r["actual_end"] != "2030-01-01T00:30:00Z" || r["requested_duration"] != "7200s" || r["state"] != "RESERVATION_STATE_ACTIVE" {
		t.Fatalf("complete -at = %v", r)
	}
	// The table marks the early end.
	if code, out, _ = runCLI(t, "get", id); code != exitOK || !strings.Contains(out, "2030-01-01T00:30:00Z (early; booked 2h0m0s)") {
		t.Fatalf("get: %d\n%s", code, out)
	}
	// The freed 90 minutes are bookable.
	if code, out, errOut = runCLI(t, "reserve", "-res", "gpu=8", "-dur", "90m", "-json"); code != exitOK || reservation(t, out)["start"] != "2030-01-01T00:30:00Z" {
		t.Fatalf("reserve after completion: %d %s %s", code, out, errOut)
	}

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"now: completed at once", []string{"complete", id}, exitOK, "COMPLETED"},
		{"again", []string{"complete", id}, exitError, "failed_precondition"},
		{"unknown id", []string{"complete", "nope"}, exitError, "not_found"},
		{"no id", []string{"complete"}, exitUsage, "want exactly one reservation ID"},
		{"bad time", []string{"complete", id, "-at", "tomorrow"}, exitUsage, "RFC 3339"},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Fatalf("%s: exit %d (want %d), output lacks %q?\nstdout: %s\nstderr: %s", tc.name, code, tc.code, tc.want, out, errOut)
		}
	}
}
