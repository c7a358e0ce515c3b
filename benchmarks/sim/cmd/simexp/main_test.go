package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixture = "../../../workload/testdata/small.swf"

func TestHelpAndFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"-trace", "-kth", "-capacity", "-units", "MaxProcs"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-exp", "003"}, "-exp"},
		{[]string{"-units", "hours"}, "-units"},
		{[]string{"-capacity", "-3"}, "-capacity"},
		{[]string{"-trace", "/nonexistent.swf"}, "-trace"},
		{[]string{"-exp", "001", "-trace", "../../../workload/testdata/noheader.swf"}, "-capacity"},
		{[]string{"stray"}, "unexpected"},
	} {
		if err := run(tc.args, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want mention of %q", tc.args, err, tc.want)
		}
	}
}

// TestTraceEverywhere runs both experiments on the fixture trace: the
// header's 8 nodes are the capacity, the two larger jobs are counted as
// dropped, and every output names the trace and its settings.
func TestTraceEverywhere(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-quick", "-trace", fixture, "-out", dir}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, frag := range []string{
		"Experiment 001: trace small (file small.swf) on 8 nodes (capacity from header MaxNodes)",
		"2 larger than the capacity 8",
		"1 without a requested time (field 9): run time used as the estimate",
		"1 ran past their requested time",
		"Experiment 002 (seconds): the first 3 usable of the 8 jobs of trace small",
		"Experiment 002 (minutes)",
	} {
		if !strings.Contains(out, frag) {
			t.Errorf("output lacks %q:\n%s", frag, out)
		}
	}
	if !strings.Contains(stderr.String(), "ETA") {
		t.Errorf("no progress with an ETA on stderr: %q", stderr.String())
	}
	for _, f := range []string{"exp001.md", "exp001.svg", "exp002.md", "exp002.svg", "exp002-minutes.md", "exp002-minutes.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".csv") {
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
				if !strings.HasPrefix(line, "small,8,") {
					t.Errorf("%s row %q does not name the trace and its 8 nodes", f, line)
				}
			}
			continue
		}
		if !strings.Contains(string(b), "small") || strings.Contains(string(b), "KTH") {
			t.Errorf("%s does not name the trace (or names KTH)", f)
		}
	}
}

// TestCapacityOverride: -capacity replaces the header's value and says so.
func TestCapacityOverride(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-quick", "-exp", "001", "-kth", "../../../workload/testdata/noheader.swf", "-capacity", "4"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "on 4 nodes (capacity from -capacity)") || !strings.Contains(stdout.String(), "none dropped") {
		t.Errorf("output:\n%s", stdout.String())
	}
}
