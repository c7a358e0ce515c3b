package jepsen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fault is one injected fault with its time window, for the report.
type Fault struct {
	Kind    string   `json:"kind"`
	Targets []string `json:"targets,omitempty"`
	Detail  string   `json:"detail,omitempty"`
	// Start and End are nanoseconds since the run started (the history's
	// clock); End is when the fault was healed.
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Err   string `json:"error,omitempty"`
	// ClockOffset is the clock nemesis' jump of the leader's stamp clock.
	// Log time never runs backwards, so after a forward jump it stays
	// ahead of the wall clock until the wall clock catches up, about
	// ClockOffset after End.
	ClockOffset time.Duration `json:"clock_offset,omitempty"`
}

// Nemesis names, as accepted by -nemesis. "all" selects every one.
var NemesisNames = []string{
	"kill", "kill-minority", "kill-leader", "pause", "pause-leader",
	"partition-leader", "partition-halves", "partition-bridge",
	"slow", "lossy", "membership", "restart-all", "clock",
}

// ParseNemeses parses a comma-separated nemesis list.
func ParseNemeses(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "all":
			out = append(out, NemesisNames...)
		case f == "partition":
			out = append(out, "partition-leader", "partition-halves", "partition-bridge")
		case slices.Contains(NemesisNames, f):
			out = append(out, f)
		default:
			return nil, fmt.Errorf("nemesis %q: unknown (known: %s, partition, all)", f, strings.Join(NemesisNames, ", "))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Schedule injects faults from a set of nemeses: quiet for Quiet, then one
// fault (or two combined, with probability Combine) for Hold, heal, and
// again, until ctx is done. Every fault is healed before Run returns.
type Schedule struct {
	Cluster *Cluster
	Nemeses []string
	Quiet   time.Duration
	Hold    time.Duration
	Combine float64
	Seed    uint64
	Clock   func() int64 // the history clock
	Log     io.Writer
	// Burst, if set, is called right after pause-leader stopped the
	// leader, with its name: the prober then sends a write through every
	// follower at that instant.
	Burst func(paused string)

	mu     sync.Mutex
	faults []Fault
}

// Faults returns the faults injected so far.
func (s *Schedule) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fault(nil), s.faults...)
}

// Run injects faults until ctx is done.
func (s *Schedule) Run(ctx context.Context) {
	if len(s.Nemeses) == 0 {
		<-ctx.Done()
		return
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6e656d))
	// Walk the nemeses in a shuffled round robin so that a short run still
	// sees each of them once.
	order := slices.Clone(s.Nemeses)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for round := 0; ; round++ {
		if !sleepCtx(ctx, s.Quiet) {
			return
		}
		kinds := []string{order[round%len(order)]}
		if rng.Float64() < s.Combine && len(s.Nemeses) > 1 {
			other := s.Nemeses[rng.IntN(len(s.Nemeses))]
			if other != kinds[0] && combinable(kinds[0], other) {
				kinds = append(kinds, other)
			}
		}
		var heals []func()
		var idx []int
		for _, k := range kinds {
			f, heal := s.inject(ctx, rng, k)
			s.mu.Lock()
			s.faults = append(s.faults, f)
			idx = append(idx, len(s.faults)-1)
			s.mu.Unlock()
			s.logf("%7.1fs nemesis %s %v %s %s", float64(f.Start)/1e9, f.Kind, f.Targets, f.Detail, f.Err)
			heals = append(heals, heal)
		}
		sleepCtx(ctx, s.Hold)
		for i := len(heals) - 1; i >= 0; i-- {
			heals[i]()
			end := s.Clock()
			s.mu.Lock()
			s.faults[idx[i]].End = end
			s.mu.Unlock()
			s.logf("%7.1fs heal %s", float64(end)/1e9, kinds[i])
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// combinable rules out pairs that would mostly fight each other (two
// process faults can take down a majority of a 3-node cluster for good).
func combinable(a, b string) bool {
	proc := func(k string) bool {
		return strings.HasPrefix(k, "kill") || strings.HasPrefix(k, "pause") || k == "membership" || k == "restart-all"
	}
	return !(proc(a) && proc(b))
}

func (s *Schedule) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// inject starts one fault and returns its record and the function that
// heals it. Errors are recorded in the fault, not fatal: a nemesis that
// could not act (no leader known, say) is part of the story.
func (s *Schedule) inject(ctx context.Context, rng *rand.Rand, kind string) (Fault, func()) {
	c := s.Cluster
	names := c.Names()
	f := Fault{Kind: kind, Start: s.Clock()}
	noop := func() {}
	shuffled := slices.Clone(names)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	minority := shuffled[:(len(names)-1)/2]
	leader := func() string {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		l := c.Leader(lctx)
		if l == "" {
			f.Err = "no leader known; picked a random node"
			l = shuffled[0]
		}
		return l
	}
	restart := func(ns []string) func() {
		return func() {
			for _, n := range ns {
				if err := c.StartNode(n); err != nil {
					s.logf("restart %s: %v", n, err)
				}
			}
		}
	}
	setErr := func(err error) {
		if err != nil && f.Err == "" {
			f.Err = err.Error()
		}
	}
	switch kind {
	case "kill":
		f.Targets = shuffled[:1]
		setErr(c.Kill(f.Targets[0]))
		return f, restart(f.Targets)
	case "kill-minority":
		f.Targets = minority
		for _, n := range minority {
			setErr(c.Kill(n))
		}
		return f, restart(f.Targets)
	case "kill-leader":
		f.Targets = []string{leader()}
		setErr(c.Kill(f.Targets[0]))
		return f, restart(f.Targets)
	case "pause", "pause-leader":
		t := shuffled[0]
		if kind == "pause-leader" {
			t = leader()
		}
		f.Targets = []string{t}
		err := c.Pause(t)
		setErr(err)
		if kind == "pause-leader" && err == nil && s.Burst != nil {
			s.Burst(t)
		}
		return f, func() { setErr(c.Resume(t)) }
	case "partition-leader":
		l := leader()
		var rest []string
		for _, n := range names {
			if n != l {
				rest = append(rest, n)
			}
		}
		f.Targets, f.Detail = []string{l}, fmt.Sprintf("%v | %v", []string{l}, rest)
		c.Partition([]string{l}, rest)
		return f, c.Heal
	case "partition-halves":
		maj := shuffled[len(minority):]
		f.Targets, f.Detail = minority, fmt.Sprintf("%v | %v", minority, maj)
		c.Partition(minority, maj)
		return f, c.Heal
	case "partition-bridge":
		// Two halves that cannot see each other, joined by one node that
		// sees both: each half plus the bridge is a majority.
		if len(names) < 3 {
			f.Err = "bridge needs >= 3 nodes"
			return f, noop
		}
		bridge := shuffled[0]
		rest := shuffled[1:]
		a, b := rest[:len(rest)/2], rest[len(rest)/2:]
		f.Targets, f.Detail = []string{bridge}, fmt.Sprintf("%v | %s | %v", a, bridge, b)
		c.Partition(a, b)
		return f, c.Heal
	case "slow", "lossy":
		lf := LinkFaults{Delay: 30 * time.Millisecond, Jitter: 20 * time.Millisecond}
		if kind == "lossy" {
			lf = LinkFaults{Delay: 5 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.02}
		}
		f.Targets = names
		f.Detail = fmt.Sprintf("delay %v ± %v, loss %.0f%%", lf.Delay, lf.Jitter, lf.Loss*100)
		for _, a := range names {
			for _, b := range names {
				if a != b {
					c.SetLink(a, b, lf)
				}
			}
		}
		return f, c.Heal
	case "membership":
		// Remove a non-leader from the Raft configuration, wipe it, and
		// bring it back as a fresh server that must join and catch up.
		l := leader()
		t := shuffled[0]
		if t == l && len(shuffled) > 1 {
			t = shuffled[1]
		}
		f.Targets = []string{t}
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.RemoveServer(mctx, t)
		cancel()
		setErr(err)
		setErr(c.Wipe(t))
		f.Detail = "removed, wiped; re-added as a fresh server on heal"
		return f, restart(f.Targets)
	case "clock":
		// Jump the leader's stamp clock (see ClockOffsetFile). Log time
		// never runs backwards; a forward jump advances it.
		t := leader()
		d := clockJump(rng)
		f.Targets, f.Detail, f.ClockOffset = []string{t}, fmt.Sprintf("leader clock %+v", d), d
		setErr(c.SetClockOffset(t, d))
		return f, func() {
			if err := c.ClearClockOffset(t); err != nil {
				s.logf("clear clock offset of %s: %v", t, err)
			}
		}
	case "restart-all":
		f.Targets = names
		for _, n := range names {
			setErr(c.Kill(n))
		}
		f.Detail = "kill -9 every node; restart all on heal"
		return f, restart(names)
	}
	f.Err = "unknown nemesis"
	return f, noop
}
