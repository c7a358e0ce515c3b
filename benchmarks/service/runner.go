package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Op names an operation type of the mix.
type Op int

// The operations of the mix.
const (
	OpReserve Op = iota
	OpHoldCommit
	OpModify
	OpCancel
	OpRead
	numOps
)

var opNames = [numOps]string{"reserve", "hold+commit", "modify", "cancel", "read"}

// String returns the name used in reports.
func (o Op) String() string {
	if o < 0 || o >= numOps {
		return fmt.Sprintf("op(%d)", int(o))
	}
	return opNames[o]
}

// Mix weighs the operations; the runner also steers between adding and
// cancelling to keep the live count near its target.
type Mix struct {
	Reserve, HoldCommit, Modify, Cancel, Read int
}

// DefaultMix is the booking mix of the reports: a third of the work adds
// bookings, a quarter cancels, the rest modifies and reads.
var DefaultMix = Mix{Reserve: 20, HoldCommit: 15, Modify: 10, Cancel: 30, Read: 25}

// ReserveOnlyMix sends one-phase reserves only (with cancels when the live
// count is over target): the committed-reservations ceiling of a system.
var ReserveOnlyMix = Mix{Reserve: 1}

// ParseMix returns a named mix: "default" or "reserve".
func ParseMix(name string) (Mix, error) {
	switch name {
	case "default", "":
		return DefaultMix, nil
	case "reserve":
		return ReserveOnlyMix, nil
	}
	return Mix{}, fmt.Errorf("mix %q: want default or reserve", name)
}

func (m Mix) weights() [numOps]int {
	return [numOps]int{m.Reserve, m.HoldCommit, m.Modify, m.Cancel, m.Read}
}

// Config configures a run.
type Config struct {
	Clients   int           // closed-loop clients
	Live      int           // live reservations to reach before measuring and to hold during it
	Duration  time.Duration // measured phase
	Resources int           // number of resources
	Capacity  int64         // capacity of each resource
	Horizon   time.Duration // booking horizon
	Slack     float64       // window slack as a multiple of the duration
	Mix       Mix
	Seed      uint64
	OpTimeout time.Duration // per operation; 0 = 10s
	Prefill   int           // workers that build the live set; 0 = max(Clients, 32)
	Progress  io.Writer     // a progress line per second; nil = none
	Base      time.Time     // start of the booking horizon; zero = now + 1h
	// Existing are live bookings left by an earlier run on the same system
	// (Result.Bookings); the prefill only tops them up to Live.
	Existing []Booking
	// CPUPids are the system's server processes (ledgerd agents,
	// PostgreSQL postmasters) whose CPU time over the measured phase, with
	// that of all their descendants (a postmaster's backends), is reported
	// with the load generator's own; a system run inside this process
	// (raw raft, embedded etcd) needs none.
	CPUPids []int
}

func (c *Config) check() error {
	switch {
	case c.Clients <= 0:
		return fmt.Errorf("clients = %d: must be > 0", c.Clients)
	case c.Live < 0:
		return fmt.Errorf("live = %d: must be >= 0", c.Live)
	case c.Duration <= 0:
		return fmt.Errorf("duration = %s: must be > 0", c.Duration)
	case c.Resources <= 0:
		return fmt.Errorf("resources = %d: must be > 0", c.Resources)
	case c.Capacity < 2:
		return fmt.Errorf("capacity = %d: must be >= 2", c.Capacity)
	case c.Horizon <= 0:
		return fmt.Errorf("horizon = %s: must be > 0", c.Horizon)
	}
	w := c.Mix.weights()
	total := 0
	for i, x := range w {
		if x < 0 {
			return fmt.Errorf("mix: %s weight = %d: must be >= 0", Op(i), x)
		}
		total += x
	}
	if total == 0 {
		return errors.New("mix: all weights are zero")
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 10 * time.Second
	}
	if c.Prefill <= 0 {
		c.Prefill = max(c.Clients, 32)
	}
	if c.Base.IsZero() {
		c.Base = time.Now().Add(time.Hour)
	}
	return nil
}

// ResourceNames returns the resource names a run uses.
func ResourceNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%05d", i)
	}
	return out
}

// counters is one operation type's tally during a run.
type counters struct {
	ok, rejected, errs atomic.Int64
}

// clientState is what one client records; only its goroutine touches it.
type clientState struct {
	live  []Booking
	lat   [numOps][]int64 // ns
	codes map[string]int
	first map[string]string // first message per code
}

// Run sets the system up, fills it to cfg.Live bookings, then runs
// cfg.Clients closed-loop clients for cfg.Duration and returns the result.
func Run(ctx context.Context, sys System, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("run config: %w", err)
	}
	names := ResourceNames(cfg.Resources)
	if err := sys.Setup(ctx, names, cfg.Capacity); err != nil {
		return nil, fmt.Errorf("setup %s: %w", sys.Name(), err)
	}
	shaper := func(seed uint64) (*Shaper, error) {
		return NewShaper(ShaperConfig{
			Resources: names, Capacity: cfg.Capacity, Base: cfg.Base.UnixMilli(),
			Horizon: cfg.Horizon.Milliseconds(), Slack: cfg.Slack, Seed: seed,
		})
	}
	res := &Result{System: sys.Name(), Clients: cfg.Clients, TargetLive: cfg.Live, Resources: cfg.Resources, Capacity: cfg.Capacity}
	if cm, ok := sys.(interface{ ClientMode() string }); ok {
		res.Client = cm.ClientMode()
	}

	// Prefill: one-phase reserves until Live bookings stand.
	t0 := time.Now()
	var live atomic.Int64
	live.Store(int64(len(cfg.Existing)))
	var attempts, prefillErrs atomic.Int64
	pools := make([][]Booking, cfg.Prefill)
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go progress(cfg.Progress, "prefill", stop, func() string {
		return fmt.Sprintf("live %d/%d attempts %d errors %d", live.Load(), cfg.Live, attempts.Load(), prefillErrs.Load())
	})
	for w := range cfg.Prefill {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh, err := shaper(cfg.Seed*1_000_003 + uint64(w) + 1<<32)
			if err != nil {
				once.Do(func() { firstErr = err })
				return
			}
			for live.Load() < int64(cfg.Live) && ctx.Err() == nil {
				if attempts.Add(1) > int64(cfg.Live)*20+1000 {
					once.Do(func() {
						firstErr = fmt.Errorf("prefill: %d live after %d attempts: too many refusals", live.Load(), attempts.Load())
					})
					return
				}
				octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
				b, err := sys.Reserve(octx, sh.Next())
				cancel()
				switch {
				case err == nil:
					if live.Add(1) > int64(cfg.Live) {
						_ = sys.Cancel(ctx, b)
						live.Add(-1)
						return
					}
					pools[w] = append(pools[w], b)
				case errors.Is(err, ErrRejected):
				default:
					if prefillErrs.Add(1) > 100 {
						once.Do(func() { firstErr = fmt.Errorf("prefill: %w", err) })
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	res.PrefillSeconds = time.Since(t0).Seconds()

	// Hand the live set to the clients round-robin.
	states := make([]*clientState, cfg.Clients)
	for i := range states {
		states[i] = &clientState{codes: map[string]int{}, first: map[string]string{}}
	}
	i := 0
	for _, p := range append(pools, cfg.Existing) {
		for _, b := range p {
			states[i%cfg.Clients].live = append(states[i%cfg.Clients].live, b)
			i++
		}
	}

	// Measured phase.
	var ctr [numOps]counters
	var opsDone atomic.Int64
	weights := cfg.Mix.weights()
	total := 0
	for _, x := range weights {
		total += x
	}
	perClient := (cfg.Live + cfg.Clients - 1) / cfg.Clients
	mctx, mcancel := context.WithTimeout(ctx, cfg.Duration)
	runEnd, _ := mctx.Deadline()
	defer mcancel()
	stop = make(chan struct{})
	res.LoadStart = loadAvg1()
	cpu0, cpuErr := readCPU(cfg.CPUPids)
	start := time.Now()
	go progress(cfg.Progress, "run", stop, func() string {
		el := time.Since(start).Seconds()
		n := opsDone.Load()
		var errs int64
		for k := range ctr {
			errs += ctr[k].errs.Load()
		}
		return fmt.Sprintf("%.0fs ops %d (%.0f/s) live %d errors %d", el, n, float64(n)/el, live.Load(), errs)
	})
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := states[c]
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c)+7))
			sh, err := shaper(cfg.Seed*1_000_003 + uint64(c) + 1<<40)
			if err != nil {
				once.Do(func() { firstErr = err })
				return
			}
			for mctx.Err() == nil {
				op := pick(rng, weights, total)
				// Steer the live count: add when below target, cancel when above.
				switch {
				case len(st.live) == 0 && (op == OpCancel || op == OpModify || op == OpRead):
					op = OpReserve
					if weights[OpHoldCommit] > 0 && rng.IntN(2) == 0 {
						op = OpHoldCommit
					}
				case op == OpCancel && len(st.live) < perClient:
					op = OpReserve
					if weights[OpHoldCommit] > 0 && rng.IntN(2) == 0 {
						op = OpHoldCommit
					}
				case (op == OpReserve || op == OpHoldCommit) && len(st.live) > perClient:
					op = OpCancel
				}
				octx, cancel := context.WithTimeout(mctx, cfg.OpTimeout)
				t := time.Now()
				var err error
				idx := -1
				switch op {
				case OpReserve, OpHoldCommit:
					var b Booking
					if op == OpReserve {
						b, err = sys.Reserve(octx, sh.Next())
					} else {
						b, err = sys.HoldCommit(octx, sh.Next())
					}
					if err == nil {
						st.live = append(st.live, b)
						live.Add(1)
					}
				case OpModify:
					idx = rng.IntN(len(st.live))
					var b Booking
					b, err = sys.Modify(octx, st.live[idx], sh.Resize(st.live[idx].Shape))
					if err == nil {
						st.live[idx] = b
					}
				case OpCancel:
					idx = rng.IntN(len(st.live))
					err = sys.Cancel(octx, st.live[idx])
					if err == nil {
						st.live[idx] = st.live[len(st.live)-1]
						st.live = st.live[:len(st.live)-1]
						live.Add(-1)
					}
				case OpRead:
					idx = rng.IntN(len(st.live))
					err = sys.Read(octx, st.live[idx])
				}
				d := time.Since(t)
				cancel()
				if err != nil && !errors.Is(err, ErrRejected) && (op == OpCancel || op == OpModify) {
					// The outcome is unknown (it may have been applied before
					// the error): stop tracking the booking so that a later
					// run does not act on a state it cannot know.
					st.live[idx] = st.live[len(st.live)-1]
					st.live = st.live[:len(st.live)-1]
					live.Add(-1)
				}
				// Cut off by the end of the run: not counted. A system's own
				// timer derived from the deadline (raft's Apply timeout) can
				// fire a moment before mctx reports it, so compare clocks too.
				if err != nil && (mctx.Err() != nil || !time.Now().Before(runEnd)) {
					break
				}
				opsDone.Add(1)
				switch {
				case err == nil:
					ctr[op].ok.Add(1)
					st.lat[op] = append(st.lat[op], int64(d))
				case errors.Is(err, ErrRejected):
					ctr[op].rejected.Add(1)
					st.lat[op] = append(st.lat[op], int64(d))
				default:
					ctr[op].errs.Add(1)
					k := op.String() + ": " + sys.ErrorCode(err)
					if st.codes[k] == 0 {
						st.first[k] = err.Error()
					}
					st.codes[k]++
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := readCPU(cfg.CPUPids)
	res.LoadEnd = loadAvg1()
	close(stop)
	if firstErr != nil {
		return nil, firstErr
	}
	if cpuErr = errors.Join(cpuErr, err); cpuErr != nil {
		return nil, fmt.Errorf("measure CPU: %w", cpuErr)
	}
	res.Seconds = elapsed.Seconds()
	res.Live = int(live.Load())
	res.Errors = map[string]int{}
	res.ErrorSamples = map[string]string{}
	for o := range numOps {
		var all []int64
		for _, st := range states {
			all = append(all, st.lat[o]...)
		}
		slices.Sort(all)
		s := OpStats{
			Op: Op(o).String(), OK: ctr[o].ok.Load(), Rejected: ctr[o].rejected.Load(), Errors: ctr[o].errs.Load(),
		}
		s.PerSecond = float64(s.OK+s.Rejected) / res.Seconds
		s.P50, s.P90, s.P99, s.Max = ms(quantile(all, 0.50)), ms(quantile(all, 0.90)), ms(quantile(all, 0.99)), ms(quantile(all, 1))
		for q := 1; q <= 100; q++ {
			s.CDF = append(s.CDF, ms(quantile(all, float64(q)/100)))
		}
		res.Ops = append(res.Ops, s)
	}
	for _, st := range states {
		for k, v := range st.codes {
			res.Errors[k] += v
			if _, ok := res.ErrorSamples[k]; !ok {
				res.ErrorSamples[k] = st.first[k]
			}
		}
	}
	res.summarise()
	if n := float64(opsDone.Load()); n > 0 {
		res.CPUOwnPerOp = (cpu1.own - cpu0.own) * 1e6 / n
		res.CPUServersPerOp = (cpu1.others - cpu0.others) * 1e6 / n
	}
	for _, st := range states {
		res.Bookings = append(res.Bookings, st.live...)
	}
	if v, ok := sys.(Verifier); ok {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		n, err := v.Verify(vctx)
		cancel()
		res.Verified = n
		if err != nil {
			res.VerifyError = err.Error()
		}
	}
	return res, nil
}

func pick(rng *rand.Rand, w [numOps]int, total int) Op {
	x := rng.IntN(total)
	for i, v := range w {
		if x < v {
			return Op(i)
		}
		x -= v
	}
	return OpRead
}

// quantile returns the q-quantile of sorted samples (nearest rank); 0 for none.
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// progress prints a line every second until stop closes.
func progress(w io.Writer, phase string, stop <-chan struct{}, line func() string) {
	if w == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fmt.Fprintf(w, "%s: %s\n", phase, line())
		}
	}
}
