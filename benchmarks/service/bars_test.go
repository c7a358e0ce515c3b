package service

import (
	"math"
	"strings"
	"testing"
)

// TestBars judges the write-path goals on a small fixture run
// (testdata/bars.jsonl) for each TLS setting: ratios, bars and verdicts,
// including a bar met exactly at its bound, a bar without a peer cell and
// the 1-client standby row, which has no bar.
func TestBars(t *testing.T) {
	rs, err := ReadResults("testdata/bars.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		goal    string
		clients int
		ratio   float64
		verdict string
	}
	const (
		pg1   = "≥ PostgreSQL, 1 node"
		pgsb  = "≥ 2× PostgreSQL, primary + sync standby"
		etcd  = "≥ etcd, 3 members"
		etcd5 = "≥ 5× etcd, 3 members"
		raft  = "writes/s ≥ 100 % of raw raft Apply (reserve mix)"
		p50   = "one-phase reserve p50 ≤ 1.5× raw raft Apply p50 (reserve mix)"
	)
	for _, tc := range []struct {
		suffix string
		want   []row
	}{
		{"", []row{
			{pg1, 1, 150.0 / 700, VerdictNotMet},
			{pg1, 16, 800.0 / 2000, VerdictNotMet},
			{pg1, 64, 1900.0 / 1800, VerdictMet},
			{pg1, 256, 3000.0 / 200, VerdictMet},
			{pgsb, 1, 150.0 / 300, VerdictNoBar},
			{pgsb, 16, 2, VerdictMet}, // exactly at the bar
			{pgsb, 64, 1.9, VerdictNotMet},
			{pgsb, 256, 0, VerdictNotMeasured},
			{etcd, 1, 0.75, VerdictNotMet},
			{etcd, 16, 800.0 / 450, VerdictMet},
			{etcd5, 64, 5, VerdictMet},
			{etcd, 256, 6, VerdictMet},
			{raft, 64, 0.8, VerdictNotMet},
			{p50, 1, 1.5, VerdictMet}, // at the bound: ≤ meets it
		}},
		{noTLSSuffix, []row{
			{pg1, 1, 0, VerdictNotMeasured},
			{pg1, 16, 0, VerdictNotMeasured},
			{pg1, 64, 0, VerdictNotMeasured},
			{pg1, 256, 0, VerdictNotMeasured},
			{pgsb, 1, 0, VerdictNotMeasured},
			{pgsb, 16, 0, VerdictNotMeasured},
			{pgsb, 64, 0, VerdictNotMeasured},
			{pgsb, 256, 0, VerdictNotMeasured},
			{etcd, 1, 0, VerdictNotMeasured},
			{etcd, 16, 0, VerdictNotMeasured},
			{etcd5, 64, 5.25, VerdictMet},
			{etcd, 256, 0, VerdictNotMeasured},
			{raft, 64, 13000.0 / 12000, VerdictMet},
			{p50, 1, 0, VerdictNotMeasured},
		}},
	} {
		t.Run("suffix="+tc.suffix, func(t *testing.T) {
			got := Bars(rs, tc.suffix)
			if len(got) != len(tc.want) {
				t.Fatalf("%d bars, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Goal != w.goal || g.Clients != w.clients || g.Verdict != w.verdict || math.Abs(g.Ratio-w.ratio) > 1e-9 {
					t.Errorf("bar %d: got %q %d clients ratio %.4f %s; want %q %d clients ratio %.4f %s",
						i, g.Goal, g.Clients, g.Ratio, g.Verdict, w.goal, w.clients, w.ratio, w.verdict)
				}
			}
		})
	}
}

// TestBarsEdges: a peer at zero throughput is beaten by any ledgerd
// figure; a ledgerd cell at zero misses; a missing p50 is not measured.
func TestBarsEdges(t *testing.T) {
	cell := func(system, label, mix string, n int, committed float64) *Result {
		return &Result{System: system, Label: label, Mix: mix, Clients: n, Committed: committed, OpsPerSecond: committed}
	}
	for _, tc := range []struct {
		name    string
		rs      []*Result
		goal    int // index into Bars
		ratio   float64
		verdict string
	}{
		{"peer at zero", []*Result{cell("ledgerd", "3 nodes", "default", 1, 10), cell("postgresql", "1 nodes", "default", 1, 0)}, 0, math.Inf(1), VerdictMet},
		{"both at zero", []*Result{cell("ledgerd", "3 nodes", "default", 1, 0), cell("postgresql", "1 nodes", "default", 1, 0)}, 0, 0, VerdictNotMet},
		{"no reserve op in either cell", []*Result{cell("ledgerd", "3 nodes", "reserve", 1, 10), cell("raw raft", "3 nodes", "reserve", 1, 10)}, 13, 0, VerdictNotMeasured},
		{"other system's label", []*Result{cell("ledgerd", "3 nodes", "default", 64, 10), cell("etcd", "3 nodes, no TLS", "default", 64, 1)}, 10, 0, VerdictNotMeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Bars(tc.rs, "")[tc.goal]
			if b.Verdict != tc.verdict || b.Ratio != tc.ratio {
				t.Fatalf("got ratio %v %s, want %v %s (%+v)", b.Ratio, b.Verdict, tc.ratio, tc.verdict, b)
			}
		})
	}
}

// TestWriteBars renders the fixture: both TLS settings' tables, with the
// figures, ratios, bars, verdicts, p99 and CPU per operation in the rows
// the goals name, and the unary client's cell beside them.
func TestWriteBars(t *testing.T) {
	rs, err := ReadResults("testdata/bars.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteBars(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Ledgerd 3 nodes against each peer, with TLS on for ledgerd and its peers alike",
		"| ≥ PostgreSQL, 1 node | 64 | 1900 committed/s | 1800 committed/s | 1.06× | ≥ 1× | **met** | 40.0 / 10.0 | 1000 / 450 |",
		"| ≥ 2× PostgreSQL, primary + sync standby | 1 | 150 committed/s | 300 committed/s | 0.50× | — | no bar | 6.5 / 30.0 | 1000 / 650 |",
		"| ≥ 2× PostgreSQL, primary + sync standby | 256 | — | — | — | ≥ 2× | not measured | — | — |",
		"| ≥ 5× etcd, 3 members | 64 | 1900 committed/s | 380 committed/s | 5.00× | ≥ 5× | **met** | 40.0 / 200.0 | 1000 / 850 |",
		"| writes/s ≥ 100 % of raw raft Apply (reserve mix) | 64 | 8000 writes/s | 10000 writes/s | 80 % | ≥ 100 % | **not met** | 30.0 / 20.0 | 300 / 100 |",
		"| one-phase reserve p50 ≤ 1.5× raw raft Apply p50 (reserve mix) | 1 | 1.50 ms | 1.00 ms | 1.50× | ≤ 1.5× | **met** | 3.0 / 2.0 | 1700 / 700 |",
		"The same bars with TLS off (cells labelled \"…, no TLS\")",
		"| ≥ 5× etcd, 3 members | 64 | 2100 committed/s | 400 committed/s | 5.25× | ≥ 5× | **met** | 35.0 / 150.0 | 890 / 600 |",
		"- unary client, same run, default mix, 64 clients: 900 committed/s, 2000 ops/s (53 % of the coalescing client's), CPU 800 µs/op",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bars lack\n%s\nin:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "| goal |"); n != 2 {
		t.Errorf("%d tables, want 2 (one per TLS setting):\n%s", n, out)
	}
}
