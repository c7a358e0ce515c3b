package jepsen

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of one campaign, written as report.json and
// summarised in report.txt.
type Report struct {
	Seed    uint64   `json:"seed"`
	Nodes   int      `json:"nodes"`
	Clients int      `json:"clients"`
	Nemeses []string `json:"nemeses"`
	// Client is the client mode (ClientUnary or ClientBatch).
	Client string `json:"client,omitempty"`
	// LogStore is the agents' raft_log_store (empty: the agent default).
	LogStore string        `json:"log_store,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Ops counts operations by kind and outcome code.
	Ops map[OpKind]map[Code]int `json:"ops"`
	// Latency per kind over definite outcomes, in milliseconds.
	Latency map[OpKind]LatencyStats `json:"latency_ms"`
	Faults  []Fault                 `json:"faults"`
	// Links counts connections per proxy and source node.
	Links []LinkStats `json:"links"`
	// Availability is the share of operations with a definite answer, and
	// the rate of successful operations, during faults and outside them.
	Availability Availability `json:"availability"`
	// FaultAvailability measures every fault: election time, time until
	// writes through every other node are acknowledged again, write
	// latency and OUTCOME_UNKNOWN answers during it (availability.go).
	FaultAvailability []FaultAvailability `json:"fault_availability,omitempty"`
	// PerNemesis aggregates FaultAvailability by nemesis.
	PerNemesis []NemesisAvailability `json:"availability_per_nemesis,omitempty"`
	// ProbeWrites and ProbeOK count the availability probe's writes.
	ProbeWrites int `json:"probe_writes,omitempty"`
	ProbeOK     int `json:"probe_ok,omitempty"`
	// Batches describes the Batch calls of a batch-mode run.
	Batches *BatchSummary `json:"batches,omitempty"`
	// Groups counts the log entries that carried several admissions
	// (group commit), read from the nodes' metrics.
	Groups *GroupStats `json:"groups,omitempty"`
	// TTLProbes counts acknowledged short-TTL probe holds, which the
	// holds-expire invariant requires to be gone by the end.
	TTLProbes int `json:"ttl_probes"`
	// Resolved counts indeterminate operations settled as "changed
	// nothing" from the final replica contents (History.Resolve).
	Resolved   int               `json:"resolved_creates"`
	Linear     []Verdict         `json:"linearizability"`
	Invariants []InvariantResult `json:"invariants"`
	// Errors lists harness-level problems (a node that did not come back,
	// a read that failed); a run with errors is not a pass.
	Errors []string `json:"errors,omitempty"`
	// Pass: every linearizability verdict Ok or Unknown (timeout), every
	// invariant holds, no harness errors.
	Pass bool `json:"pass"`
}

// LatencyStats summarises one operation kind's latencies.
type LatencyStats struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Availability compares the run inside and outside fault windows.
type Availability struct {
	FaultTime      time.Duration `json:"fault_time_ns"`
	QuietTime      time.Duration `json:"quiet_time_ns"`
	DefiniteFault  float64       `json:"definite_share_during_faults"`
	DefiniteQuiet  float64       `json:"definite_share_outside_faults"`
	OKPerSecFault  float64       `json:"ok_per_sec_during_faults"`
	OKPerSecQuiet  float64       `json:"ok_per_sec_outside_faults"`
	OpsDuringFault int           `json:"ops_during_faults"`
	OpsQuiet       int           `json:"ops_outside_faults"`
}

// Summarize fills the operation, latency and availability sections from a
// history and the fault windows; total is the length of the run in ns.
func Summarize(h History, faults []Fault, total int64) (map[OpKind]map[Code]int, map[OpKind]LatencyStats, Availability) {
	ops := map[OpKind]map[Code]int{}
	lat := map[OpKind][]float64{}
	inFault := func(t int64) bool {
		for _, f := range faults {
			end := f.End
			if end == 0 {
				end = total
			}
			if t >= f.Start && t <= end {
				return true
			}
		}
		return false
	}
	var av Availability
	var defF, defQ, okF, okQ int
	for _, op := range h.Ops {
		if ops[op.Input.Op] == nil {
			ops[op.Input.Op] = map[Code]int{}
		}
		ops[op.Input.Op][op.Output.Code]++
		definite := op.Output.Code != CodeUnknown && op.Output.Code != CodeFailed
		if definite {
			lat[op.Input.Op] = append(lat[op.Input.Op], float64(op.Return-op.Call)/1e6)
		}
		ok := op.Output.Code == CodeOK
		if inFault(op.Call) {
			av.OpsDuringFault++
			if definite {
				defF++
			}
			if ok {
				okF++
			}
		} else {
			av.OpsQuiet++
			if definite {
				defQ++
			}
			if ok {
				okQ++
			}
		}
	}
	// Fault time: union of the windows.
	var ws [][2]int64
	for _, f := range faults {
		end := f.End
		if end == 0 {
			end = total
		}
		ws = append(ws, [2]int64{f.Start, end})
	}
	slices.SortFunc(ws, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	var covered, curS, curE int64 = 0, -1, -1
	for _, w := range ws {
		if w[0] > curE {
			if curE > curS {
				covered += curE - curS
			}
			curS, curE = w[0], w[1]
		} else if w[1] > curE {
			curE = w[1]
		}
	}
	if curE > curS {
		covered += curE - curS
	}
	av.FaultTime = time.Duration(covered)
	av.QuietTime = time.Duration(max(0, total-covered))
	share := func(a, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(a) / float64(n)
	}
	rate := func(n int, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	av.DefiniteFault, av.DefiniteQuiet = share(defF, av.OpsDuringFault), share(defQ, av.OpsQuiet)
	av.OKPerSecFault, av.OKPerSecQuiet = rate(okF, av.FaultTime), rate(okQ, av.QuietTime)
	stats := map[OpKind]LatencyStats{}
	for k, xs := range lat {
		slices.Sort(xs)
		q := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
		stats[k] = LatencyStats{N: len(xs), P50: q(0.5), P99: q(0.99), Max: xs[len(xs)-1]}
	}
	return ops, stats, av
}

// Judge sets Pass from the verdicts, invariants and errors.
func (r *Report) Judge() {
	r.Pass = len(r.Errors) == 0 && Linearizable(r.Linear)
	for _, inv := range r.Invariants {
		if !inv.OK {
			r.Pass = false
		}
	}
}

// Text renders the short human summary.
func (r *Report) Text() string {
	var b strings.Builder
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	mode := r.Client
	if mode == "" {
		mode = ClientUnary
	}
	store := ""
	if r.LogStore != "" {
		store = ", log store " + r.LogStore
	}
	fmt.Fprintf(&b, "ledgerd chaos run: %s  (seed %d, %d nodes, %d %s clients, %v, nemeses %s%s)\n",
		verdict, r.Seed, r.Nodes, r.Clients, mode, r.Duration.Round(time.Second), strings.Join(r.Nemeses, ","), store)
	b.WriteString("\noperations (by outcome):\n")
	kinds := make([]string, 0, len(r.Ops))
	for k := range r.Ops {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	total := 0
	for _, k := range kinds {
		m := r.Ops[OpKind(k)]
		var parts []string
		n := 0
		for _, c := range sortedCodes(m) {
			parts = append(parts, fmt.Sprintf("%s=%d", c, m[c]))
			n += m[c]
		}
		total += n
		l := r.Latency[OpKind(k)]
		fmt.Fprintf(&b, "  %-8s %6d  %-52s p50 %6.1fms p99 %7.1fms max %7.1fms\n", k, n, strings.Join(parts, " "), l.P50, l.P99, l.Max)
	}
	fmt.Fprintf(&b, "  total    %6d\n", total)
	if r.Batches != nil {
		fmt.Fprintf(&b, "\nbatching: %s\n", r.Batches.Text())
	}
	if r.Groups != nil {
		fmt.Fprintf(&b, "\ngroup commit: %s\n", r.Groups.Text())
	}
	a := r.Availability
	fmt.Fprintf(&b, "\navailability: outside faults %.1f%% definite, %.1f ok/s over %v; during faults %.1f%% definite, %.1f ok/s over %v\n",
		100*a.DefiniteQuiet, a.OKPerSecQuiet, a.QuietTime.Round(time.Second), 100*a.DefiniteFault, a.OKPerSecFault, a.FaultTime.Round(time.Second))
	if len(r.PerNemesis) > 0 {
		b.WriteString(AvailabilityText(r.PerNemesis))
		fmt.Fprintf(&b, "  probe writes: %d, %d acknowledged\n", r.ProbeWrites, r.ProbeOK)
	}
	fmt.Fprintf(&b, "\nfaults (%d):\n", len(r.Faults))
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "  %6.1fs–%6.1fs  %-16s %v %s", float64(f.Start)/1e9, float64(f.End)/1e9, f.Kind, f.Targets, f.Detail)
		if f.Err != "" {
			fmt.Fprintf(&b, "  (error: %s)", f.Err)
		}
		b.WriteString("\n")
	}
	if len(r.Links) > 0 {
		b.WriteString("\nproxied node-to-node connections (accepted/black-holed, by destination proxy <- source):\n ")
		for i, l := range r.Links {
			src := l.Source
			if src == "" {
				src = "?"
			}
			fmt.Fprintf(&b, " %s<-%s %d/%d", l.Proxy, src, l.Accepted, l.Blackholed)
			if i%6 == 5 && i < len(r.Links)-1 {
				b.WriteString("\n ")
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nlinearizability (porcupine, per resource group; %d indeterminate ops resolved as no-ops from the final state):\n", r.Resolved)
	for _, v := range r.Linear {
		fmt.Fprintf(&b, "  group %d %v: %s  (%d ops, %d indeterminate, %v)", v.Group, v.Resources, v.Result, v.Ops, v.Unknown, v.Elapsed.Round(time.Millisecond))
		if v.Visual != "" {
			fmt.Fprintf(&b, "  see %s", v.Visual)
		}
		if v.Failure != "" {
			fmt.Fprintf(&b, "\n      %s", v.Failure)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\ninvariants (%d short-TTL probe holds):\n", r.TTLProbes)
	for _, inv := range r.Invariants {
		st := "ok"
		if !inv.OK {
			st = "VIOLATED"
		}
		if inv.Excused > 0 {
			fmt.Fprintf(&b, "  %-22s %-8s (%d checked, %d excused: %s)\n", inv.Name, st, inv.Checked, inv.Excused, inv.ExcusedWhy)
		} else {
			fmt.Fprintf(&b, "  %-22s %-8s (%d checked)\n", inv.Name, st, inv.Checked)
		}
		for _, v := range inv.Violations {
			fmt.Fprintf(&b, "      %s\n", v)
		}
	}
	if len(r.Errors) > 0 {
		b.WriteString("\nharness errors:\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	return b.String()
}

func sortedCodes(m map[Code]int) []Code {
	out := make([]Code, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Write saves report.json and report.txt into dir.
func (r *Report) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(dir+"/report.json", b, 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(dir+"/report.txt", []byte(r.Text()), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
