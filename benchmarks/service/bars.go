package service

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// find returns the first result of system/label/mix with n clients.
func find(rs []*Result, system, label, mix string, n int) *Result {
	for _, r := range rs {
		if r.System == system && r.Label == label && r.Mix == mix && r.Clients == n {
			return r
		}
	}
	return nil
}

// Labels of the cells the bars compare (scripts/bench-service.sh).
const (
	// ledgerdLabel labels ledgerd's 3-node cells, raw raft's and etcd's.
	ledgerdLabel = "3 nodes"
	// unaryLabel labels the ledgerd cells run with one API call per
	// operation beside the default (coalescing) ones.
	unaryLabel = "3 nodes, unary"
	// pgOneLabel labels the one-node PostgreSQL cells.
	pgOneLabel = "1 nodes"
	// PGStandbyLabel labels the cells of a PostgreSQL primary with a
	// synchronous streaming standby.
	PGStandbyLabel = "primary + sync standby"
)

// System names as the Systems report them.
const (
	sysLedgerd  = "ledgerd"
	sysEtcd     = "etcd"
	sysPostgres = "postgresql"
	sysRawRaft  = "raw raft"
)

// barCounts are the client counts the throughput bars are judged at.
var barCounts = []int{1, 16, 64, 256}

// Verdicts of a Bar.
const (
	VerdictMet         = "met"
	VerdictNotMet      = "not met"
	VerdictNoBar       = "no bar" // shown for context, nothing to meet
	VerdictNotMeasured = "not measured"
)

// Bar is one goal of the write-path issue judged on one run: ledgerd's
// figure against a peer's, their ratio and whether it meets the bar.
type Bar struct {
	Goal    string // e.g. "≥ PostgreSQL, 1 node"
	Clients int
	Metric  string // what Ledgerd and Peer measure: "committed/s", "writes/s" or "p50 ms"
	// Ledgerd and Peer are the two figures, Ratio is Ledgerd ÷ Peer (0 when
	// a cell is missing, +Inf when the peer's figure is 0).
	Ledgerd, Peer, Ratio float64
	// Min is the least Ratio that meets the bar, Max the most (0: none).
	Min, Max float64
	Verdict  string
	// P99 of the admitting operations (ms) and CPU of all processes per
	// operation (µs), of ledgerd's cell and the peer's.
	LedgerdP99, PeerP99, LedgerdCPU, PeerCPU float64
}

// bar builds the Bar of a throughput goal (ratio ≥ min; min 0: no bar)
// from ledgerd's cell l and the peer's p, either of which may be nil.
func bar(goal, metric string, n int, l, p *Result, value func(*Result) float64, min float64) Bar {
	b := Bar{Goal: goal, Clients: n, Metric: metric, Min: min, Verdict: VerdictNotMeasured}
	if l == nil || p == nil {
		return b
	}
	b.Ledgerd, b.Peer = value(l), value(p)
	b.LedgerdP99, b.PeerP99 = l.CommittedP99, p.CommittedP99
	b.LedgerdCPU, b.PeerCPU = l.CPUOwnPerOp+l.CPUServersPerOp, p.CPUOwnPerOp+p.CPUServersPerOp
	switch {
	case b.Peer > 0:
		b.Ratio = b.Ledgerd / b.Peer
	case b.Ledgerd > 0:
		b.Ratio = math.Inf(1)
	}
	switch {
	case min == 0:
		b.Verdict = VerdictNoBar
	case b.Ratio >= min:
		b.Verdict = VerdictMet
	default:
		b.Verdict = VerdictNotMet
	}
	return b
}

// opP50 is the p50 latency (ms) of op in r, 0 when r ran none.
func opP50(r *Result, op Op) float64 {
	for _, s := range r.Ops {
		if s.Op == op.String() && s.OK+s.Rejected > 0 {
			return s.P50
		}
	}
	return 0
}

// Bars judges the goals of the write-path issue on the cells of rs whose
// labels end in suffix ("" for the run's first TLS setting, ", no TLS" or
// ", TLS" for the other), in this order:
//
//   - ledgerd 3 nodes ≥ PostgreSQL 1 node, committed reservations/s of the
//     default mix, at 1, 16, 64 and 256 clients;
//   - ≥ 2× PostgreSQL primary + synchronous standby from 16 clients on (1
//     client shown, no bar);
//   - ≥ etcd 3 members at every count, ≥ 5× at 64;
//   - ledgerd's reserve-mix writes/s ≥ 100 % of raw hashicorp/raft Apply
//     (3 nodes, 64 clients, one write per entry on the raw side);
//   - ledgerd's one-client p50 of a one-phase reserve (reserve mix) ≤ 1.5×
//     raw raft's one-client Apply p50, both on the run's first log store.
func Bars(rs []*Result, suffix string) []Bar {
	committed := func(r *Result) float64 { return r.Committed }
	ops := func(r *Result) float64 { return r.OpsPerSecond }
	ld := ledgerdLabel + suffix
	var out []Bar
	for _, n := range barCounts {
		out = append(out, bar("≥ PostgreSQL, 1 node", "committed/s", n,
			find(rs, sysLedgerd, ld, "default", n), find(rs, sysPostgres, pgOneLabel+suffix, "default", n), committed, 1))
	}
	for _, n := range barCounts {
		min := 2.0
		if n < 16 {
			min = 0
		}
		out = append(out, bar("≥ 2× PostgreSQL, primary + sync standby", "committed/s", n,
			find(rs, sysLedgerd, ld, "default", n), find(rs, sysPostgres, PGStandbyLabel+suffix, "default", n), committed, min))
	}
	for _, n := range barCounts {
		goal, min := "≥ etcd, 3 members", 1.0
		if n == 64 {
			goal, min = "≥ 5× etcd, 3 members", 5
		}
		out = append(out, bar(goal, "committed/s", n,
			find(rs, sysLedgerd, ld, "default", n), find(rs, sysEtcd, ld, "default", n), committed, min))
	}
	out = append(out, bar("writes/s ≥ 100 % of raw raft Apply (reserve mix)", "writes/s", 64,
		find(rs, sysLedgerd, ld, "reserve", 64), find(rs, sysRawRaft, ld, "reserve", 64), ops, 1))

	// Latency: ledgerd over raw raft, lower is better.
	lat := Bar{Goal: "one-phase reserve p50 ≤ 1.5× raw raft Apply p50 (reserve mix)", Clients: 1, Metric: "p50 ms", Max: 1.5, Verdict: VerdictNotMeasured}
	l, p := find(rs, sysLedgerd, ld, "reserve", 1), find(rs, sysRawRaft, ld, "reserve", 1)
	if l != nil && p != nil {
		lat.Ledgerd, lat.Peer = opP50(l, OpReserve), opP50(p, OpReserve)
		lat.LedgerdP99, lat.PeerP99 = l.CommittedP99, p.CommittedP99
		lat.LedgerdCPU, lat.PeerCPU = l.CPUOwnPerOp+l.CPUServersPerOp, p.CPUOwnPerOp+p.CPUServersPerOp
		if lat.Ledgerd > 0 && lat.Peer > 0 {
			lat.Ratio = lat.Ledgerd / lat.Peer
			lat.Verdict = VerdictMet
			if lat.Ratio > lat.Max {
				lat.Verdict = VerdictNotMet
			}
		}
	}
	return append(out, lat)
}

// WriteBarsTable writes bs as a Markdown table.
func WriteBarsTable(w io.Writer, bs []Bar) error {
	fmt.Fprintln(w, "| goal | clients | ledgerd 3 nodes | peer | ratio | bar | verdict | p99 ms ledgerd / peer | CPU µs/op ledgerd / peer |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---:|---:|")
	for _, b := range bs {
		if b.Verdict == VerdictNotMeasured {
			fmt.Fprintf(w, "| %s | %d | — | — | — | %s | %s | — | — |\n", b.Goal, b.Clients, b.want(), b.Verdict)
			continue
		}
		verdict := b.Verdict
		if verdict == VerdictMet || verdict == VerdictNotMet {
			verdict = "**" + verdict + "**"
		}
		if _, err := fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %.1f / %.1f | %.0f / %.0f |\n",
			b.Goal, b.Clients, b.figure(b.Ledgerd), b.figure(b.Peer), b.ratio(), b.want(), verdict,
			b.LedgerdP99, b.PeerP99, b.LedgerdCPU, b.PeerCPU); err != nil {
			return fmt.Errorf("write bars: %w", err)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// figure formats one side's figure with its metric.
func (b Bar) figure(v float64) string {
	if b.Metric == "p50 ms" {
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.0f %s", v, b.Metric)
}

func (b Bar) ratio() string {
	switch {
	case math.IsInf(b.Ratio, 1):
		return "∞"
	case b.Metric == "writes/s":
		return fmt.Sprintf("%.0f %%", 100*b.Ratio)
	}
	return fmt.Sprintf("%.2f×", b.Ratio)
}

func (b Bar) want() string {
	switch {
	case b.Max > 0:
		return fmt.Sprintf("≤ %g×", b.Max)
	case b.Min == 0:
		return "—"
	case b.Metric == "writes/s":
		return fmt.Sprintf("≥ %g %%", 100*b.Min)
	}
	return fmt.Sprintf("≥ %g×", b.Min)
}

// WriteBars writes the bars of the write-path issue (Bars) as a table for
// the run's first TLS setting (the cells with plain labels), and a second
// table for the other setting when rs has its cells, then the ledgerd
// cells run with one API call per operation beside the default
// (coalescing) ones. Throughput is committed reservations/s unless the
// row says writes/s; every figure is from the same run and machine.
func WriteBars(w io.Writer, rs []*Result) error {
	other := ""
	for _, r := range rs {
		for _, s := range []string{noTLSSuffix, tlsSuffix} {
			if other == "" && strings.HasSuffix(r.Label, s) {
				other = s
			}
		}
	}
	first := "in the run's TLS setting (env.txt)"
	switch other {
	case noTLSSuffix:
		first = "with TLS on"
	case tlsSuffix:
		first = "with TLS off"
	}
	fmt.Fprintf(w, "Ledgerd 3 nodes against each peer, %s for ledgerd and its peers alike, default mix unless the goal says otherwise:\n\n", first)
	if err := WriteBarsTable(w, Bars(rs, "")); err != nil {
		return err
	}
	if other != "" {
		setting := "TLS off"
		if other == tlsSuffix {
			setting = "TLS on"
		}
		fmt.Fprintf(w, "The same bars with %s (cells labelled \"…%s\"):\n\n", setting, other)
		if err := WriteBarsTable(w, Bars(rs, other)); err != nil {
			return err
		}
	}
	for _, mix := range []string{"default", "reserve"} {
		l, u := find(rs, sysLedgerd, ledgerdLabel, mix, 64), find(rs, sysLedgerd, unaryLabel, mix, 64)
		if l == nil || u == nil || l.OpsPerSecond == 0 {
			continue
		}
		fmt.Fprintf(w, "- unary client, same run, %s mix, 64 clients: %.0f committed/s, %.0f ops/s (%.0f %% of the coalescing client's), CPU %.0f µs/op\n",
			mix, u.Committed, u.OpsPerSecond, 100*u.OpsPerSecond/l.OpsPerSecond, u.CPUOwnPerOp+u.CPUServersPerOp)
	}
	_, err := fmt.Fprintln(w)
	return err
}
