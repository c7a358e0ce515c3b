package jepsen

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// Availability per fault: how long after a fault starts writes through
// every node that is not itself the fault's target are acknowledged again,
// how long the cluster took to elect a new leader, how slow writes were
// during the fault and how many were answered OUTCOME_UNKNOWN.
//
// Two things feed it besides the workload's own operations:
//
//   - a Prober, one closed-loop writer per node: a Reserve of one unit on
//     a probe resource of its own (outside the checked history, like the
//     hold-expiry probe), each with ProbeTimeout, then ProbePause, then the
//     next; and, at the instant pause-leader stops the leader, one such
//     write through every follower at once (a burst), which is the request
//     that used to hang for the whole forward deadline;
//   - a LeaderWatch that asks every running node whom it follows every
//     WatchEvery and keeps the changes, from which each fault's election
//     time is measured.

// ProbeTimeout bounds one probe write: longer than the servers' forward
// deadline (10 s by default) so that a forward that hangs for its whole
// deadline is answered OUTCOME_UNKNOWN rather than cut short by the probe.
const ProbeTimeout = 12 * time.Second

// ProbePause is the pause between two probe writes through one node.
const ProbePause = 100 * time.Millisecond

// WatchEvery is how often LeaderWatch asks each node for its leader.
const WatchEvery = 50 * time.Millisecond

// ReasonOutcomeUnknown is the ErrorInfo reason of a server's
// outcome-unknown answer (rpc.ReasonOutcomeUnknown).
const ReasonOutcomeUnknown = "OUTCOME_UNKNOWN"

// ProbeOp is one probe write.
type ProbeOp struct {
	Node string `json:"node"`
	Key  string `json:"key"`
	// Call and Return are nanoseconds on the history's clock.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	OK     bool  `json:"ok"`
	// Reason is the ErrorInfo reason of a refusal (OUTCOME_UNKNOWN,
	// NO_LEADER, ...), "" when there is none (a timeout, a broken
	// connection).
	Reason string `json:"reason,omitempty"`
	Err    string `json:"err,omitempty"`
	// Indeterminate is set when the write got no definite answer
	// (OUTCOME_UNKNOWN, a timeout, a broken connection), as the workload
	// classifies its own writes.
	Indeterminate bool `json:"indeterminate,omitempty"`
	// Burst marks a write sent through a follower at the instant the
	// pause-leader nemesis stopped the leader.
	Burst bool `json:"burst,omitempty"`
}

// LeaderSample is what one node said about the leader, recorded when it
// changed.
type LeaderSample struct {
	At     int64  `json:"at"`
	Node   string `json:"node"`
	Leader string `json:"leader"`
}

// Prober writes through every node in a closed loop and records each
// write. Safe for concurrent use.
type Prober struct {
	cl       *Cluster
	resource string
	base     int64
	clock    func() int64

	mu  sync.Mutex
	ops []ProbeOp
	seq map[string]int
}

// NewProber returns a prober writing to resource (which must exist) with
// booking windows from base (Unix ms).
func NewProber(cl *Cluster, resource string, base int64, clock func() int64) *Prober {
	return &Prober{cl: cl, resource: resource, base: base, clock: clock, seq: map[string]int{}}
}

// Run probes every node until ctx ends. A node that is not running is
// skipped until it runs again.
func (p *Prober) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range p.cl.Names() {
		wg.Go(func() {
			for ctx.Err() == nil {
				if !p.cl.Running(n) {
					sleepCtx(ctx, ProbePause)
					continue
				}
				p.write(ctx, n, false)
				sleepCtx(ctx, ProbePause)
			}
		})
	}
	wg.Wait()
}

// Burst sends one write through every running node except skip, at once,
// without waiting for the answers.
func (p *Prober) Burst(ctx context.Context, skip string) {
	for _, n := range p.cl.Names() {
		if n != skip && p.cl.Running(n) {
			go p.write(ctx, n, true)
		}
	}
}

func (p *Prober) write(ctx context.Context, node string, burst bool) {
	p.mu.Lock()
	p.seq[node]++
	key := fmt.Sprintf("avail-%s-%d", node, p.seq[node])
	if burst {
		key = fmt.Sprintf("avail-%s-b%d", node, p.seq[node])
	}
	p.mu.Unlock()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProbeTimeout)
	defer cancel()
	in := Input{ID: key, Parts: []Part{{Resource: p.resource, Amount: 1}},
		Duration: 60_000, NotBefore: p.base, Deadline: p.base + 3_600_000}
	op := ProbeOp{Node: node, Key: key, Call: p.clock(), Burst: burst}
	err := p.cl.connect(node).ReserveProbe(wctx, in)
	op.Return = p.clock()
	op.OK = err == nil
	if err != nil {
		op.Err, op.Reason = err.Error(), reasonOf(err)
		op.Indeterminate = classify(err, true).Code == CodeUnknown
	}
	p.mu.Lock()
	p.ops = append(p.ops, op)
	p.mu.Unlock()
}

// Ops returns the probe writes recorded so far, by call time.
func (p *Prober) Ops() []ProbeOp {
	p.mu.Lock()
	out := slices.Clone(p.ops)
	p.mu.Unlock()
	slices.SortStableFunc(out, func(a, b ProbeOp) int { return cmpInt64(a.Call, b.Call) })
	return out
}

// ReserveProbe books a one-phase reservation outside the checked history
// (the availability probe), with in.ID as its idempotency key and label.
func (c *ConnectClient) ReserveProbe(ctx context.Context, in Input) error {
	_, err := c.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: toShape(in),
		Labels: map[string]string{labelKey: in.ID}, IdempotencyKey: in.ID}))
	if err != nil {
		return fmt.Errorf("probe reserve %s: %w", in.ID, err)
	}
	return nil
}

// reasonOf returns the ErrorInfo reason carried by a Connect error, or "".
func reasonOf(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return ""
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.GetReason()
			}
		}
	}
	return ""
}

// LeaderWatch records whom every node follows. Safe for concurrent use.
type LeaderWatch struct {
	cl    *Cluster
	clock func() int64

	mu      sync.Mutex
	samples []LeaderSample
}

// NewLeaderWatch returns a watch over cl's nodes on the history clock.
func NewLeaderWatch(cl *Cluster, clock func() int64) *LeaderWatch {
	return &LeaderWatch{cl: cl, clock: clock}
}

// Run asks every running node for its leader every WatchEvery until ctx
// ends; a node that does not answer within 250 ms keeps its last answer.
func (w *LeaderWatch) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range w.cl.Names() {
		wg.Go(func() {
			last := "\x00"
			for ctx.Err() == nil {
				if w.cl.Running(n) {
					actx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
					l, err := w.cl.connect(n).Leader(actx)
					cancel()
					if err == nil && l != last {
						last = l
						w.mu.Lock()
						w.samples = append(w.samples, LeaderSample{At: w.clock(), Node: n, Leader: l})
						w.mu.Unlock()
					}
				}
				sleepCtx(ctx, WatchEvery)
			}
		})
	}
	wg.Wait()
}

// Samples returns the changes recorded so far, by time.
func (w *LeaderWatch) Samples() []LeaderSample {
	w.mu.Lock()
	out := slices.Clone(w.samples)
	w.mu.Unlock()
	slices.SortStableFunc(out, func(a, b LeaderSample) int { return cmpInt64(a.At, b.At) })
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FaultAvailability is the availability of one fault.
type FaultAvailability struct {
	Kind    string   `json:"kind"`
	Targets []string `json:"targets,omitempty"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	// Election is how long after Start a node outside the targets first
	// named a leader outside the targets, in ms; 0 when the leader was not
	// a target (no election needed); -1 when none was seen before the
	// fault ended.
	ElectionMs float64 `json:"election_ms"`
	// FirstAckMs is, per node outside the targets, how long after Start
	// the first write sent through it at or after Start (workload or
	// probe) was acknowledged; -1 when none was before the next fault's
	// start (or the end of the run).
	FirstAckMs map[string]float64 `json:"first_ack_ms"`
	// RecoveryMs is the largest FirstAckMs (-1 when a node had none): the
	// time until writes through every node outside the targets were
	// acknowledged again.
	RecoveryMs float64 `json:"recovery_ms"`
	// Writes, and their latencies in ms, are every write (workload and
	// probe) called in [Start, End], indeterminate ones with the time the
	// client gave up.
	Writes     int     `json:"writes"`
	WriteP50Ms float64 `json:"write_p50_ms"`
	WriteP99Ms float64 `json:"write_p99_ms"`
	WriteMaxMs float64 `json:"write_max_ms"`
	// OutcomeUnknown counts writes called in the window that a server
	// answered OUTCOME_UNKNOWN; Indeterminate those without a definite
	// answer (OUTCOME_UNKNOWN, a timeout, a broken connection).
	OutcomeUnknown int `json:"outcome_unknown"`
	Indeterminate  int `json:"indeterminate"`
	// Burst is the pause-leader burst: writes through followers sent at
	// the instant of the pause, with their latency (ms) and outcome.
	Burst []BurstWrite `json:"burst,omitempty"`

	lat []float64 // the writes' latencies, pooled per nemesis
}

// BurstWrite is one write of a pause-leader burst.
type BurstWrite struct {
	Node      string  `json:"node"`
	LatencyMs float64 `json:"latency_ms"`
	OK        bool    `json:"ok"`
	Reason    string  `json:"reason,omitempty"`
}

// NemesisAvailability aggregates the faults of one nemesis.
type NemesisAvailability struct {
	Kind   string `json:"kind"`
	Faults int    `json:"faults"`
	// Election, Recovery and Slack (recovery minus election) over the
	// faults, in ms; faults without a measured election or recovery are
	// left out of these and counted in Unmeasured.
	Election   Quantiles `json:"election_ms"`
	Recovery   Quantiles `json:"recovery_ms"`
	Slack      Quantiles `json:"slack_ms"`
	Unmeasured int       `json:"unmeasured"`
	// WithinElectionPlus1s counts faults whose recovery was at most their
	// election time + 1 s.
	WithinElectionPlus1s int       `json:"within_election_plus_1s"`
	Writes               int       `json:"writes"`
	WriteLatency         Quantiles `json:"write_latency_ms"`
	OutcomeUnknown       int       `json:"outcome_unknown"`
	Indeterminate        int       `json:"indeterminate"`
	// BurstWrites, BurstOK and BurstLatency summarise the pause-leader
	// bursts.
	BurstWrites  int       `json:"burst_writes,omitempty"`
	BurstOK      int       `json:"burst_ok,omitempty"`
	BurstLatency Quantiles `json:"burst_latency_ms,omitzero"`
}

// Quantiles are p50, p99 and max of a sample (nearest rank).
type Quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func quantiles(xs []float64) Quantiles {
	if len(xs) == 0 {
		return Quantiles{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Quantiles{N: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}

// writeOp is a write of either source, for the per-fault figures.
type writeOp struct {
	node          string
	call, ret     int64
	ok            bool
	unknown       bool // answered OUTCOME_UNKNOWN
	indeterminate bool
}

func writesOf(h History, probes []ProbeOp) []writeOp {
	var out []writeOp
	for _, op := range h.Ops {
		if op.Input.Op == OpGet || op.Input.Op == OpFind {
			continue
		}
		out = append(out, writeOp{node: op.Node, call: op.Call, ret: op.Return, ok: op.Output.Code != CodeUnknown && op.Output.Code != CodeFailed,
			unknown: op.Reason == ReasonOutcomeUnknown, indeterminate: op.Output.Code == CodeUnknown})
	}
	for _, p := range probes {
		out = append(out, writeOp{node: p.Node, call: p.Call, ret: p.Return, ok: p.OK,
			unknown: p.Reason == ReasonOutcomeUnknown, indeterminate: p.Indeterminate})
	}
	slices.SortStableFunc(out, func(a, b writeOp) int { return cmpInt64(a.call, b.call) })
	return out
}

// FaultAvailabilities measures every fault from the history, the probe
// writes and the leader samples; nodes lists every node; total is the
// length of the run (ns). A fault's first acknowledgements are looked for
// until the next fault starts (or the run ends), so a recovery slower
// than the quiet time after the heal shows as -1.
func FaultAvailabilities(faults []Fault, nodes []string, h History, probes []ProbeOp, leaders []LeaderSample, total int64) []FaultAvailability {
	writes := writesOf(h, probes)
	var out []FaultAvailability
	for i, f := range faults {
		end := f.End
		if end == 0 {
			end = total
		}
		horizon := total
		for _, g := range faults[i+1:] {
			if g.Start > f.Start {
				horizon = g.Start
				break
			}
		}
		fa := FaultAvailability{Kind: f.Kind, Targets: f.Targets, Start: f.Start, End: end, FirstAckMs: map[string]float64{}}
		target := func(n string) bool { return slices.Contains(f.Targets, n) }
		fa.ElectionMs = electionMs(f, leaders, horizon)
		fa.RecoveryMs = 0
		for _, n := range nodes {
			if target(n) {
				continue
			}
			first := int64(-1)
			for _, w := range writes {
				if w.node == n && w.ok && w.call >= f.Start && w.ret <= horizon && (first < 0 || w.ret < first) {
					first = w.ret
				}
			}
			if first < 0 {
				fa.FirstAckMs[n] = -1
				fa.RecoveryMs = -1
				continue
			}
			ms := float64(first-f.Start) / 1e6
			fa.FirstAckMs[n] = ms
			if fa.RecoveryMs >= 0 {
				fa.RecoveryMs = max(fa.RecoveryMs, ms)
			}
		}
		var lat []float64
		for _, w := range writes {
			if w.call < f.Start || w.call > end {
				continue
			}
			lat = append(lat, float64(w.ret-w.call)/1e6)
			if w.unknown {
				fa.OutcomeUnknown++
			}
			if w.indeterminate {
				fa.Indeterminate++
			}
		}
		q := quantiles(lat)
		fa.lat = lat
		fa.Writes, fa.WriteP50Ms, fa.WriteP99Ms, fa.WriteMaxMs = q.N, q.P50, q.P99, q.Max
		for _, p := range probes {
			if p.Burst && p.Call >= f.Start && p.Call <= end {
				fa.Burst = append(fa.Burst, BurstWrite{Node: p.Node, LatencyMs: float64(p.Return-p.Call) / 1e6, OK: p.OK, Reason: p.Reason})
			}
		}
		out = append(out, fa)
	}
	return out
}

// electionMs is how long after f started a node outside its targets first
// named a leader outside its targets; 0 when the leader the nodes named
// just before f is not a target; -1 when no such leader was named before
// horizon.
func electionMs(f Fault, leaders []LeaderSample, horizon int64) float64 {
	target := func(n string) bool { return slices.Contains(f.Targets, n) }
	before := map[string]string{}
	for _, s := range leaders {
		if s.At >= f.Start {
			break
		}
		before[s.Node] = s.Leader
	}
	votes := map[string]int{}
	for _, l := range before {
		if l != "" {
			votes[l]++
		}
	}
	prev, best := "", 0
	for _, l := range slices.Sorted(maps.Keys(votes)) {
		if votes[l] > best {
			prev, best = l, votes[l]
		}
	}
	if prev != "" && !target(prev) {
		return 0
	}
	for _, s := range leaders {
		if s.At < f.Start || s.At > horizon {
			continue
		}
		if !target(s.Node) && s.Leader != "" && !target(s.Leader) {
			return float64(s.At-f.Start) / 1e6
		}
	}
	return -1
}

// SummarizeNemeses aggregates the per-fault figures by nemesis, in name
// order.
func SummarizeNemeses(fas []FaultAvailability) []NemesisAvailability {
	by := map[string][]FaultAvailability{}
	for _, fa := range fas {
		by[fa.Kind] = append(by[fa.Kind], fa)
	}
	var out []NemesisAvailability
	for _, k := range slices.Sorted(maps.Keys(by)) {
		na := NemesisAvailability{Kind: k, Faults: len(by[k])}
		var el, rec, slack, lat, burst []float64
		for _, fa := range by[k] {
			na.OutcomeUnknown += fa.OutcomeUnknown
			na.Indeterminate += fa.Indeterminate
			na.Writes += fa.Writes
			if fa.ElectionMs < 0 || fa.RecoveryMs < 0 {
				na.Unmeasured++
			} else {
				el, rec, slack = append(el, fa.ElectionMs), append(rec, fa.RecoveryMs), append(slack, fa.RecoveryMs-fa.ElectionMs)
				if fa.RecoveryMs <= fa.ElectionMs+1000 {
					na.WithinElectionPlus1s++
				}
			}
			for _, b := range fa.Burst {
				na.BurstWrites++
				if b.OK {
					na.BurstOK++
				}
				burst = append(burst, b.LatencyMs)
			}
		}
		for _, fa := range by[k] {
			lat = append(lat, fa.lat...)
		}
		na.Election, na.Recovery, na.Slack = quantiles(el), quantiles(rec), quantiles(slack)
		na.WriteLatency = quantiles(lat)
		na.BurstLatency = quantiles(burst)
		out = append(out, na)
	}
	return out
}

// AvailabilityText renders the per-nemesis availability section.
func AvailabilityText(nas []NemesisAvailability) string {
	var b strings.Builder
	b.WriteString("\navailability per nemesis (writes through every node outside the fault's targets; ms):\n")
	fmt.Fprintf(&b, "  %-16s %6s  %-22s %-22s %-22s %8s %9s %8s %8s\n", "nemesis", "faults", "election p50/p99/max", "recovery p50/p99/max", "recovery-election p99/max", "<=el+1s", "unmeasured", "unknown", "indeterm")
	for _, na := range nas {
		fmt.Fprintf(&b, "  %-16s %6d  %-22s %-22s %-22s %8s %9d %8d %8d\n", na.Kind, na.Faults,
			q3(na.Election), q3(na.Recovery), fmt.Sprintf("%.0f/%.0f", na.Slack.P99, na.Slack.Max),
			fmt.Sprintf("%d/%d", na.WithinElectionPlus1s, na.Faults-na.Unmeasured), na.Unmeasured, na.OutcomeUnknown, na.Indeterminate)
	}
	b.WriteString("  writes called during the faults (latency p50/p99/max, indeterminate ones until the client gave up), pause-leader bursts:\n")
	for _, na := range nas {
		fmt.Fprintf(&b, "  %-16s %d writes, latency %s", na.Kind, na.Writes, q3(na.WriteLatency))
		if na.BurstWrites > 0 {
			fmt.Fprintf(&b, "; burst %d/%d ok, latency %s", na.BurstOK, na.BurstWrites, q3(na.BurstLatency))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func q3(q Quantiles) string {
	if q.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f/%.0f/%.0f", q.P50, q.P99, q.Max)
}

// ProbesDurable checks that every acknowledged probe write is on every
// node at the end: the probes go through the re-routing paths the
// workload's writes share, so a re-routed write that was lost shows here
// (and one applied twice in the exactly-once invariant).
func ProbesDurable(probes []ProbeOp, lists map[string][]Reservation) InvariantResult {
	c := &invCollector{res: InvariantResult{Name: "probe-writes-durable", OK: true}, max: 10}
	for _, n := range slices.Sorted(maps.Keys(lists)) {
		have := map[string]bool{}
		for _, r := range lists[n] {
			have[r.ID] = true
		}
		for _, p := range probes {
			if p.OK {
				c.res.Checked++
				if !have[p.Key] {
					c.fail("%s: acknowledged probe write %s missing", n, p.Key)
				}
			}
		}
	}
	return c.done()
}
