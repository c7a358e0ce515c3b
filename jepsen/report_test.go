package jepsen

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	s := time.Second.Nanoseconds()
	h := History{Ops: []Op{
		{Input: Input{Op: OpHold}, Output: Output{Code: CodeOK}, Call: 0, Return: s / 100},              // quiet, ok, 10ms
		{Input: Input{Op: OpHold}, Output: Output{Code: CodeRejected}, Call: s / 2, Return: s/2 + s/50}, // quiet, 20ms
		{Input: Input{Op: OpCommit}, Output: Output{Code: CodeUnknown}, Call: 2 * s, Return: 5 * s},     // fault
		{Input: Input{Op: OpGet}, Output: Output{Code: CodeOK}, Call: 3 * s, Return: 3*s + s/1000},      // fault, ok
	}}
	faults := []Fault{{Kind: "kill", Start: 2 * s, End: 4 * s}, {Kind: "slow", Start: 3 * s, End: 5 * s}}
	ops, lat, av := Summarize(h, faults, 10*s)
	if ops[OpHold][CodeOK] != 1 || ops[OpHold][CodeRejected] != 1 || ops[OpCommit][CodeUnknown] != 1 {
		t.Fatalf("ops = %v", ops)
	}
	if l := lat[OpHold]; l.N != 2 || l.P50 != 20 || l.Max != 20 {
		t.Fatalf("hold latency = %+v", l)
	}
	if _, ok := lat[OpCommit]; ok {
		t.Fatal("indeterminate operations must not count in latency")
	}
	if av.FaultTime != 3*time.Second || av.QuietTime != 7*time.Second {
		t.Fatalf("fault/quiet time = %v/%v, want 3s/7s (union of overlapping windows)", av.FaultTime, av.QuietTime)
	}
	if av.OpsDuringFault != 2 || av.OpsQuiet != 2 || av.DefiniteFault != 0.5 || av.DefiniteQuiet != 1 {
		t.Fatalf("availability = %+v", av)
	}
	r := &Report{Ops: ops, Latency: lat, Availability: av, Faults: faults,
		Linear:     []Verdict{{Result: "Ok"}},
		Invariants: []InvariantResult{{Name: "no-overbooking", OK: true}}}
	r.Judge()
	if !r.Pass {
		t.Fatal("clean report judged failing")
	}
	r.Invariants[0].OK = false
	r.Judge()
	if r.Pass || !strings.Contains(r.Text(), "VIOLATED") {
		t.Fatalf("violated invariant not reported:\n%s", r.Text())
	}
}

func TestParseNemeses(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", "", ""},
		{"none", "", ""},
		{"kill,pause", "kill,pause", ""},
		{"partition", "partition-bridge,partition-halves,partition-leader", ""},
		{"kill, kill", "kill", ""},
		{"clock", "clock", ""},
		{"meteor", "", "unknown"},
	}
	for _, tt := range tests {
		got, err := ParseNemeses(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseNemeses(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("ParseNemeses(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	all, _ := ParseNemeses("all")
	if len(all) != len(NemesisNames) {
		t.Errorf("all = %v", all)
	}
}
