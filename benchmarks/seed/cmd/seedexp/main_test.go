package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestQuickRun runs the command's -quick sweep end to end and checks the
// files it writes: every success rate is a fraction, the list and indexed
// timelines accept the same requests, and the slotted timeline with one
// slot per second (slotLen = 1) accepts exactly as many as they do while the
// coarse slotted timeline accepts no more.
func TestQuickRun(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	// The default trace path is relative to the repository root; from the
	// package directory it is three levels further up.
	args := []string{"-quick", "-out", dir, "-kth", "../../../../../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz"}
	if _, err := os.Stat(args[len(args)-1]); err != nil {
		args[len(args)-1] = ""
	}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ns/request") {
		t.Errorf("no progress lines on stderr: %q", stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, stdout.Bytes()) {
		t.Error("results.md differs from stdout")
	}
	if _, err := os.Stat(filepath.Join(dir, "results.svg")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ workload, ia string }
	accepted := map[key]map[string]int{}
	for _, r := range rows[1:] {
		rate, err := strconv.ParseFloat(r[6], 64)
		if err != nil || rate < 0 || rate > 1 {
			t.Errorf("row %v: success rate %q not in [0,1]", r, r[6])
		}
		n, _ := strconv.Atoi(r[5])
		k := key{r[0], r[1]}
		if accepted[k] == nil {
			accepted[k] = map[string]int{}
		}
		accepted[k][r[4]] = n
	}
	if len(accepted) < 2 {
		t.Fatalf("only %d sweep points", len(accepted))
	}
	for k, a := range accepted {
		if a["list"] != a["indexed"] || a["list"] != a["slotted-exact"] {
			t.Errorf("%v: list %d, indexed %d, slotted-exact %d must agree", k, a["list"], a["indexed"], a["slotted-exact"])
		}
		if a["slotted-90"] > a["slotted-exact"] {
			t.Errorf("%v: 90 slots accepted %d > exact %d", k, a["slotted-90"], a["slotted-exact"])
		}
	}
}

func TestFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"-interarrivals", "-slots", "-quick", "-min-replay", "median", "-trace", "-synth", "-capacity", "MaxNodes"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-interarrivals", "100,abc"}, "abc"},
		{[]string{"-slots", "90,x"}, "x"},
		{[]string{"-quick", "-slots", "7", "-kth", ""}, "slots"},
		{[]string{"-quick", "-kth", "/nonexistent/trace.swf"}, "-trace"},
		{[]string{"-quick", "-trace", "/nonexistent/trace.swf"}, "-trace"},
		{[]string{"-quick", "-synth=false", "-trace", ""}, "nothing to run"},
		{[]string{"-quick", "-synth=false", "-trace", "../../../workload/testdata/noheader.swf"}, "-capacity"},
		{[]string{"extra"}, "unexpected"},
	}
	for _, tc := range tests {
		stderr.Reset()
		err := run(tc.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("%v: err = %v, want mention of %q", tc.args, err, tc.want)
		}
	}
}

// TestTraceFixture replays a small trace written for the tests: capacity
// from its header (MaxNodes 8), the synthetic sweep off, and every dropped
// or adjusted job reported with the trace's name in every output.
func TestTraceFixture(t *testing.T) {
	for _, tc := range []struct {
		name     string
		trace    string
		args     []string
		capacity string
		notes    []string
	}{
		{"header", "small", []string{"-trace", "../../../workload/testdata/small.swf"}, "8",
			[]string{"on 8 CPUs (capacity from header MaxNodes)", "2 larger than the capacity 8", "1 without a requested time (field 9)", "1 with run time 0"}},
		{"override", "small-gz", []string{"-kth", "../../../workload/testdata/small-gz.swf.gz", "-capacity", "12"}, "12",
			[]string{"on 12 CPUs (capacity from -capacity)", "1 larger than the capacity 12"}},
		{"no header", "noheader", []string{"-trace", "../../../workload/testdata/noheader.swf", "-capacity", "4"}, "4",
			[]string{"on 4 CPUs (capacity from -capacity)", "none dropped", "1 without a requested time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			args := append([]string{"-quick", "-synth=false", "-trace-scales", "1", "-out", dir}, tc.args...)
			if err := run(args, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			name := tc.trace
			md := stdout.String()
			if strings.Contains(md, "lublin") || strings.Contains(md, "kth") {
				t.Errorf("synthetic sweep or a KTH label in the output:\n%s", md)
			}
			for _, frag := range append([]string{"Synthetic sweep: off", "### " + name + ", " + tc.capacity + " CPUs"}, tc.notes...) {
				if !strings.Contains(md, frag) {
					t.Errorf("results.md lacks %q:\n%s", frag, md)
				}
			}
			if !strings.Contains(stderr.String(), "ETA") || !strings.Contains(stderr.String(), name) {
				t.Errorf("progress lacks an ETA or the trace name: %q", stderr.String())
			}
			svg, err := os.ReadFile(filepath.Join(dir, "results.svg"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(svg), name+", "+tc.capacity+" CPUs") {
				t.Error("plot titles do not name the trace and capacity")
			}
			f, err := os.Open(filepath.Join(dir, "results.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows[1:] {
				if r[0] != name || r[13] != tc.capacity {
					t.Errorf("csv row %v: want workload %s on %s CPUs", r, name, tc.capacity)
				}
			}
		})
	}
}
