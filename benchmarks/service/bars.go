package service

import (
	"fmt"
	"io"
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

// WriteBars evaluates the throughput bars of the service benchmark on rs
// and writes one line per bar: ledgerd (3 nodes, 64 clients) against etcd
// (committed reservations/s and p99) and against raw raft Apply.
func WriteBars(w io.Writer, rs []*Result) error {
	l := find(rs, "ledgerd", "3 nodes", "default", 64)
	e := find(rs, "etcd", "3 nodes", "default", 64)
	if l != nil && e != nil && e.Committed > 0 {
		ratio := l.Committed / e.Committed
		verdict := "met"
		if ratio < 3 || l.CommittedP99 >= e.CommittedP99 {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "- ledgerd vs etcd (3 nodes, 64 clients, default mix): %.0f vs %.0f committed/s = %.2f× (bar ≥ 3×); p99 %.1f vs %.1f ms (bar: lower) — %s\n",
			l.Committed, e.Committed, ratio, l.CommittedP99, e.CommittedP99, verdict)
	} else {
		fmt.Fprintln(w, "- ledgerd vs etcd: a cell is missing")
	}
	lr := find(rs, "ledgerd", "3 nodes", "reserve", 64)
	rr := find(rs, "raw raft", "3 nodes", "reserve", 64)
	if lr != nil && rr != nil && rr.OpsPerSecond > 0 {
		// Every raw raft operation of the reserve mix is one Apply.
		ratio := lr.OpsPerSecond / rr.OpsPerSecond
		verdict := "met"
		if ratio < 0.5 {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "- ledgerd vs raw raft Apply (3 nodes, 64 clients, reserve mix; one Raft entry per operation on both): %.0f vs %.0f writes/s = %.0f%% (bar ≥ 50%%) — %s\n",
			lr.OpsPerSecond, rr.OpsPerSecond, 100*ratio, verdict)
		if lc, rc := lr.CPUOwnPerOp+lr.CPUServersPerOp, rr.CPUOwnPerOp+rr.CPUServersPerOp; lc > 0 && rc > 0 {
			// On shared cores throughput follows CPU per operation; this
			// ratio moves much less with the machine's load.
			fmt.Fprintf(w, "  - CPU per write, all processes: %.0f vs %.0f µs = raw raft needs %.0f%% of ledgerd's\n", lc, rc, 100*rc/lc)
		}
	} else {
		fmt.Fprintln(w, "- ledgerd vs raw raft: a cell is missing")
	}
	_, err := fmt.Fprintln(w)
	return err
}
