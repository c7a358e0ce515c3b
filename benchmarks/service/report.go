package service

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// OpStats is the outcome of one operation type. Latencies are in ms.
type OpStats struct {
	Op        string    `json:"op"`
	OK        int64     `json:"ok"`
	Rejected  int64     `json:"rejected"`
	Errors    int64     `json:"errors"`
	PerSecond float64   `json:"per_second"`
	P50       float64   `json:"p50_ms"`
	P90       float64   `json:"p90_ms"`
	P99       float64   `json:"p99_ms"`
	Max       float64   `json:"max_ms"`
	CDF       []float64 `json:"cdf_ms"` // latency at percentiles 1..100
}

// Result is one run of one system.
type Result struct {
	System string `json:"system"`
	Label  string `json:"label,omitempty"` // e.g. "3 nodes"
	Nodes  int    `json:"nodes,omitempty"`
	Mix    string `json:"mix,omitempty"`
	// Client is how the load generator called the system when it has a
	// choice: "coalesced" (ledgerd's Go client batching concurrent calls,
	// the default) or "unary" (one API call per operation).
	Client     string `json:"client,omitempty"`
	Clients    int    `json:"clients"`
	TargetLive int    `json:"target_live"`
	Live       int    `json:"live"`
	Resources  int    `json:"resources"`
	Capacity   int64  `json:"capacity"`

	PrefillSeconds float64 `json:"prefill_seconds"`
	Seconds        float64 `json:"seconds"`

	Ops            []OpStats      `json:"ops"`
	OpsPerSecond   float64        `json:"ops_per_second"`
	Committed      float64        `json:"committed_per_second"` // admitted reserve + hold+commit
	CommittedP99   float64        `json:"committed_p99_ms"`     // p99 of the admitting operations
	AcceptanceRate float64        `json:"acceptance_rate"`      // admitted / decided, over reserve, hold+commit, modify
	Errors         map[string]int `json:"errors"`
	// ErrorSamples holds one error message per key of Errors.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	Verified     int               `json:"verified,omitempty"`
	// CPUOwnPerOp is the load generator's CPU time per operation of the
	// measured phase, in microseconds (the whole system's for one run in
	// this process: raw raft, embedded etcd); CPUServersPerOp is that of
	// the server processes named by Config.CPUPids and their descendants.
	// Their sum is the CPU of every process of the system per operation.
	CPUOwnPerOp     float64 `json:"cpu_own_us_per_op,omitempty"`
	CPUServersPerOp float64 `json:"cpu_servers_us_per_op,omitempty"`
	VerifyError     string  `json:"verify_error,omitempty"`
	// LoadStart and LoadEnd are the machine's one-minute load average when
	// the measured phase began and ended (0: not read).
	LoadStart float64 `json:"loadavg_start,omitempty"`
	LoadEnd   float64 `json:"loadavg_end,omitempty"`

	// Bookings are the live bookings at the end, to carry into the next run.
	Bookings []Booking `json:"-"`
}

func (r *Result) summarise() {
	var ops, adm, dec int64
	var committed int64
	for _, s := range r.Ops {
		ops += s.OK + s.Rejected
		switch s.Op {
		case OpReserve.String(), OpHoldCommit.String():
			committed += s.OK
			fallthrough
		case OpModify.String():
			adm += s.OK
			dec += s.OK + s.Rejected
		}
	}
	r.OpsPerSecond = float64(ops) / r.Seconds
	r.Committed = float64(committed) / r.Seconds
	if dec > 0 {
		r.AcceptanceRate = float64(adm) / float64(dec)
	}
	for _, s := range r.Ops {
		if s.Op == OpReserve.String() && s.OK+s.Rejected > 0 {
			r.CommittedP99 = max(r.CommittedP99, s.P99)
		}
		if s.Op == OpHoldCommit.String() && s.OK+s.Rejected > 0 {
			r.CommittedP99 = max(r.CommittedP99, s.P99)
		}
	}
}

// WriteTable prints the per-operation table and the summary of r.
func (r *Result) WriteTable(w io.Writer) error {
	name := r.System
	if r.Label != "" {
		name += " (" + r.Label + ")"
	}
	if r.Client != "" {
		name += ", " + r.Client + " client"
	}
	fmt.Fprintf(w, "%s: %d clients, %d live (target %d) on %d resources of %d, mix %s, %.1fs measured after %.1fs prefill\n",
		name, r.Clients, r.Live, r.TargetLive, r.Resources, r.Capacity, r.Mix, r.Seconds, r.PrefillSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tops/s\tok\trejected\terrors\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, s := range r.Ops {
		if s.OK+s.Rejected+s.Errors == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", s.Op, s.PerSecond, s.OK, s.Rejected, s.Errors, s.P50, s.P90, s.P99, s.Max)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	fmt.Fprintf(w, "total %.0f ops/s, committed reservations %.0f/s (p99 %.2f ms), acceptance %.1f%%\n",
		r.OpsPerSecond, r.Committed, r.CommittedP99, 100*r.AcceptanceRate)
	fmt.Fprintf(w, "CPU per operation: %.0f us (load generator process %.0f us, server processes %.0f us); load average %.2f → %.2f\n",
		r.CPUOwnPerOp+r.CPUServersPerOp, r.CPUOwnPerOp, r.CPUServersPerOp, r.LoadStart, r.LoadEnd)
	if len(r.Errors) > 0 {
		keys := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%d", k, r.Errors[k]))
		}
		fmt.Fprintf(w, "errors by code: %s\n", strings.Join(parts, ", "))
		for _, k := range keys {
			if m := r.ErrorSamples[k]; m != "" {
				fmt.Fprintf(w, "  e.g. %s: %s\n", k, m)
			}
		}
	}
	if r.Verified > 0 || r.VerifyError != "" {
		if r.VerifyError != "" {
			fmt.Fprintf(w, "read-back check FAILED after %d bookings: %s\n", r.Verified, r.VerifyError)
		} else {
			fmt.Fprintf(w, "read-back check: %d bookings, no resource over capacity\n", r.Verified)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
