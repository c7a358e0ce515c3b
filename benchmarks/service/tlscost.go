package service

import (
	"fmt"
	"io"
	"strings"
)

// TLS labels of bench-service.sh: with TLS=on,off the cells without TLS
// carry noTLSSuffix after the plain label; with TLS=off,on the cells with
// TLS carry tlsSuffix.
const (
	noTLSSuffix = ", no TLS"
	tlsSuffix   = ", TLS"
)

// tlsPair is one cell measured with and without TLS in the same run.
type tlsPair struct {
	label   string // the label without the TLS suffix
	on, off *Result
}

// tlsPairs finds, in run order, every cell of rs that has its twin of the
// other TLS setting (same system, base label, client mode, mix and
// client count).
func tlsPairs(rs []*Result) []tlsPair {
	var out []tlsPair
	for _, r := range rs {
		var base string
		switch {
		case strings.HasSuffix(r.Label, noTLSSuffix):
			base = strings.TrimSuffix(r.Label, noTLSSuffix)
		case strings.HasSuffix(r.Label, tlsSuffix):
			base = strings.TrimSuffix(r.Label, tlsSuffix)
		default:
			continue
		}
		for _, o := range rs {
			if o.System != r.System || o.Label != base || o.Mix != r.Mix || o.Clients != r.Clients || o.Client != r.Client {
				continue
			}
			if strings.HasSuffix(r.Label, noTLSSuffix) {
				out = append(out, tlsPair{label: base, on: o, off: r})
			} else {
				out = append(out, tlsPair{label: base, on: r, off: o})
			}
			break
		}
	}
	return out
}

// ratio formats a/b, or "—" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// WriteTLSCost writes a Markdown table of what TLS costs each system: for
// every cell run with and without TLS in rs, operations/s, committed
// reservations/s, their p99, and CPU time per operation of every counted
// process, each with TLS, without, and as the ratio with ÷ without
// (below 1 for throughput and above 1 for latency and CPU is TLS's cost).
// CPU per operation moves least with a shared machine's load. It writes
// nothing when rs holds no such pair.
func WriteTLSCost(w io.Writer, rs []*Result) error {
	pairs := tlsPairs(rs)
	if len(pairs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "| system | mix | clients | ops/s TLS / none (ratio) | committed/s TLS / none (ratio) | committed p99 ms TLS / none (ratio) | CPU µs/op TLS / none (ratio) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, p := range pairs {
		name := p.on.System + " " + p.label + clientNote(p.on)
		cpuOn := p.on.CPUOwnPerOp + p.on.CPUServersPerOp
		cpuOff := p.off.CPUOwnPerOp + p.off.CPUServersPerOp
		fmt.Fprintf(w, "| %s | %s | %d | %.0f / %.0f (%s) | %.0f / %.0f (%s) | %.1f / %.1f (%s) | %.0f / %.0f (%s) |\n",
			name, p.on.Mix, p.on.Clients,
			p.on.OpsPerSecond, p.off.OpsPerSecond, ratio(p.on.OpsPerSecond, p.off.OpsPerSecond),
			p.on.Committed, p.off.Committed, ratio(p.on.Committed, p.off.Committed),
			p.on.CommittedP99, p.off.CommittedP99, ratio(p.on.CommittedP99, p.off.CommittedP99),
			cpuOn, cpuOff, ratio(cpuOn, cpuOff))
	}
	_, err := fmt.Fprintln(w)
	return err
}

// clientNote names the client mode of a ledgerd result, if recorded.
func clientNote(r *Result) string {
	if r.Client == "" {
		return ""
	}
	return ", " + r.Client + " client"
}
