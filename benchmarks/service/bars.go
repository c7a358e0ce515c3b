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

// unaryLabel labels the ledgerd cells run with one API call per operation
// beside the default (coalescing) ones.
const unaryLabel = "3 nodes, unary"

// noTLSLabel labels the ledgerd cells run with -insecure agents over plain
// http (bench-service.sh TLS=on,off) beside the default, secured ones.
const noTLSLabel = "3 nodes, no TLS"

// clientNote names the client mode of a ledgerd result, if recorded.
func clientNote(r *Result) string {
	if r.Client == "" {
		return ""
	}
	return ", " + r.Client + " client"
}

// WriteBars evaluates the throughput bars of the service benchmark on rs
// and writes one line per bar: ledgerd (3 nodes, 64 clients) against etcd
// (committed reservations/s and p99) and against raw raft Apply. The bars
// are judged on the "3 nodes" cells (the default, coalescing client, and
// secured agents); "3 nodes, unary" and "3 nodes, no TLS" cells of the
// same run are shown beside them.
func WriteBars(w io.Writer, rs []*Result) error {
	l := find(rs, "ledgerd", "3 nodes", "default", 64)
	e := find(rs, "etcd", "3 nodes", "default", 64)
	if l != nil && e != nil && e.Committed > 0 {
		ratio := l.Committed / e.Committed
		verdict := "met"
		if ratio < 3 || l.CommittedP99 >= e.CommittedP99 {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "- ledgerd vs etcd (3 nodes, 64 clients, default mix%s): %.0f vs %.0f committed/s = %.2f× (bar ≥ 3×); p99 %.1f vs %.1f ms (bar: lower) — %s\n",
			clientNote(l), l.Committed, e.Committed, ratio, l.CommittedP99, e.CommittedP99, verdict)
		if u := find(rs, "ledgerd", unaryLabel, "default", 64); u != nil {
			fmt.Fprintf(w, "  - unary client, same run: %.0f committed/s = %.2f×; p99 %.1f ms\n", u.Committed, u.Committed/e.Committed, u.CommittedP99)
		}
		if p := find(rs, "ledgerd", noTLSLabel, "default", 64); p != nil && p.Committed > 0 {
			fmt.Fprintf(w, "  - without TLS, same run: %.0f committed/s (TLS costs %.0f%%); p99 %.1f ms\n", p.Committed, 100*(1-l.Committed/p.Committed), p.CommittedP99)
		}
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
		fmt.Fprintf(w, "- ledgerd vs raw raft Apply (3 nodes, 64 clients, reserve mix%s; one Raft entry per operation on both): %.0f vs %.0f writes/s = %.0f%% (bar ≥ 50%%) — %s\n",
			clientNote(lr), lr.OpsPerSecond, rr.OpsPerSecond, 100*ratio, verdict)
		if lc, rc := lr.CPUOwnPerOp+lr.CPUServersPerOp, rr.CPUOwnPerOp+rr.CPUServersPerOp; lc > 0 && rc > 0 {
			// On shared cores throughput follows CPU per operation; this
			// ratio moves much less with the machine's load.
			fmt.Fprintf(w, "  - CPU per write, all processes: %.0f vs %.0f µs = raw raft needs %.0f%% of ledgerd's\n", lc, rc, 100*rc/lc)
		}
		if u := find(rs, "ledgerd", unaryLabel, "reserve", 64); u != nil {
			fmt.Fprintf(w, "  - unary client, same run: %.0f writes/s = %.0f%%, CPU per write %.0f µs\n",
				u.OpsPerSecond, 100*u.OpsPerSecond/rr.OpsPerSecond, u.CPUOwnPerOp+u.CPUServersPerOp)
		}
	} else {
		fmt.Fprintln(w, "- ledgerd vs raw raft: a cell is missing")
	}
	_, err := fmt.Fprintln(w)
	return err
}
