package seed

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	"github.com/ledgerd/ledgerd/internal/threadcpu"
	"github.com/ledgerd/ledgerd/planner"
)

// Config describes one run of the experiment. Times given in seconds are
// converted to timeline units with TimeScale.
type Config struct {
	// Capacity is the CPUs of the single resource of the synthetic sweep
	// (the papers use 128).
	Capacity int64
	// Horizon is the maximum book-ahead time in seconds: every planner
	// refuses starts that would end more than Horizon after the request's
	// arrival, and the slotted timelines divide it into their slots.
	Horizon   int64
	TimeScale int64   // timeline units per second (1000: milliseconds)
	Slots     []int64 // slotted configurations: slots over the horizon
	// ExactSlotted adds a slotted timeline with one slot per time unit,
	// which must decide exactly like the free-list timelines (only
	// affordable with small Horizon*TimeScale).
	ExactSlotted bool

	// Synthetic runs the Lublin–Feitelson sweep; false replays only the
	// trace.
	Synthetic     bool
	Jobs          int       // synthetic jobs per sweep point
	Interarrivals []float64 // mean interarrival times (s) of the sweep
	StartFactor   float64   // start delay = rand[0,1]*duration*StartFactor
	Slack         float64   // deadline = start+duration*(1+rand[0,1]*Slack)
	Seed          uint64

	// TracePath is the SWF trace (gzip or plain) replayed with requested
	// times as durations (the run time where the log has none, counted in
	// the report); empty skips the replay. TraceJobs > 0 keeps only the
	// first jobs.
	TracePath   string
	TraceJobs   int
	TraceScales []float64 // submit times are multiplied by each scale
	// TraceCapacity is the CPUs of the resource the trace is replayed on;
	// 0 takes the header's MaxProcs (or MaxNodes). Jobs larger than it are
	// dropped and counted.
	TraceCapacity int64

	Reps int // timed repetitions per planner and point
	// MinReplay is the least replay time per repetition: a fast
	// contender's replay is repeated until it is reached, so that short
	// replays are not dominated by scheduler noise.
	MinReplay time.Duration
}

// DefaultConfig is the full experiment committed under results/.
func DefaultConfig() Config {
	return Config{
		Capacity:      128,
		Synthetic:     true,
		Horizon:       7 * 86400,
		TimeScale:     1000,
		Slots:         []int64{90, 9000, 900000},
		Jobs:          30000,
		Interarrivals: []float64{100, 150, 200, 300, 400, 500, 600},
		StartFactor:   1,
		Slack:         1,
		Seed:          1,
		TracePath:     "../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz",
		TraceScales:   []float64{1, 0.5, 0.35, 0.25},
		Reps:          5,
		MinReplay:     200 * time.Millisecond,
	}
}

// QuickConfig is a tiny sweep for tests: whole seconds, a 50-hour horizon
// and an exact (one slot per second) slotted timeline as a cross-check.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Horizon = 180000 // about two days, divisible by every slot count
	c.TimeScale = 1
	c.Slots = []int64{90, 9000}
	c.ExactSlotted = true
	c.Jobs = 300
	c.Interarrivals = []float64{150, 600}
	c.TraceJobs = 400
	c.TraceScales = []float64{0.25}
	c.Reps = 1
	c.MinReplay = 0
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	bad := func(field, reason string) error { return fmt.Errorf("seed config: %s %s", field, reason) }
	switch {
	case c.Capacity <= 0:
		return bad("capacity", "must be > 0")
	case c.Horizon <= 0:
		return bad("horizon", "must be > 0")
	case c.TimeScale <= 0:
		return bad("timescale", "must be > 0")
	case c.Horizon > math.MaxInt64/4/c.TimeScale:
		return bad("horizon", "times timescale overflows")
	case !c.Synthetic && c.TracePath == "":
		return bad("synthetic/trace", "nothing to run: the synthetic sweep is off and no trace is given")
	case c.Synthetic && c.Jobs <= 0:
		return bad("jobs", "must be > 0")
	case c.Synthetic && len(c.Interarrivals) == 0:
		return bad("interarrivals", "must list at least one value")
	case c.TraceCapacity < 0:
		return bad("capacity", "must be >= 0 (0: from the trace header)")
	case c.TracePath != "" && len(c.TraceScales) == 0:
		return bad("trace-scales", "must list at least one value")
	case c.Reps <= 0:
		return bad("reps", "must be > 0")
	case c.MinReplay < 0:
		return bad("min-replay", "must be >= 0")
	case c.StartFactor < 0 || c.Slack < 0:
		return bad("start-factor/slack", "must be >= 0")
	}
	for _, ia := range c.Interarrivals {
		if !(ia > 0) {
			return bad("interarrivals", fmt.Sprintf("value %g must be > 0", ia))
		}
	}
	for _, s := range c.TraceScales {
		if !(s > 0) {
			return bad("trace-scales", fmt.Sprintf("value %g must be > 0", s))
		}
	}
	h := c.Horizon * c.TimeScale
	for _, n := range c.Slots {
		if n <= 0 || h%n != 0 {
			return bad("slots", fmt.Sprintf("%d must be > 0 and divide the horizon (%d units)", n, h))
		}
		if _, err := planner.NewSlottedTimeline(c.Capacity, 0, h/n, n); err != nil {
			return bad("slots", fmt.Sprintf("%d: %v", n, err))
		}
	}
	if c.ExactSlotted {
		if _, err := planner.NewSlottedTimeline(c.Capacity, 0, 1, h); err != nil {
			return bad("horizon", fmt.Sprintf("too long for an exact slotted timeline: %v", err))
		}
	}
	return nil
}

// Contender is one timeline implementation under test.
type Contender struct {
	Name    string
	Factory planner.TimelineFactory
	Exact   bool  // decides without discretisation
	SlotLen int64 // 0 for the free-list timelines
}

// FrozenSuffix marks the contenders running code frozen at the baseline
// commit (frozen_indexed.go, frozen_slotted.go).
const FrozenSuffix = "@ee65182"

// Contenders returns the timelines compared by c: the list walk, the
// indexed timeline (the one the ledger uses) and its baseline version, one
// slotted timeline per slot count, and the coarsest slotting once more on
// the slotted code as of the baseline commit, so that a run shows what the
// indexed timeline gained and that the slotted baseline was not slowed
// down.
func (c Config) Contenders() []Contender {
	h := c.Horizon * c.TimeScale
	cs := []Contender{
		{Name: "list", Factory: planner.NewList, Exact: true},
		{Name: "indexed", Factory: planner.NewIndexed, Exact: true},
		{Name: "indexed" + FrozenSuffix, Factory: newFrozenIndexed, Exact: true},
	}
	for _, n := range c.Slots {
		cs = append(cs, Contender{Name: "slotted-" + strconv.FormatInt(n, 10), Factory: planner.SlottedFactory(h/n, n), SlotLen: h / n})
	}
	if len(c.Slots) > 0 {
		n := slices.Min(c.Slots)
		cs = append(cs, Contender{Name: "slotted-" + strconv.FormatInt(n, 10) + FrozenSuffix, Factory: frozenFactory(h/n, n), SlotLen: h / n})
	}
	if c.ExactSlotted {
		cs = append(cs, Contender{Name: "slotted-exact", Factory: planner.SlottedFactory(1, h), SlotLen: 1})
	}
	return cs
}

// Result is one contender's outcome at one sweep point.
type Result struct {
	Planner     string
	Accepted    int
	SuccessRate float64
	// NsPerRequest is the median over all timed replays of (CPU time of
	// the replaying thread) / (number of requests); where no thread CPU
	// clock exists it is wall time.
	NsPerRequest float64
	// WallNsPerRequest is the same median measured with the wall clock,
	// which includes time the process spent descheduled.
	WallNsPerRequest float64
	Replays          int // timed replays behind the medians
	nsAll, wallAll   []float64
	// Decisions hashes the sequence of (accepted, start) decisions, so that
	// two planners with equal hashes made identical decisions.
	Decisions uint64
	MaxLen    int     // largest Len() of the timeline during the replay
	MeanLen   float64 // mean Len() after each request
}

// Point is one sweep point: a request stream and every contender's result.
type Point struct {
	// Workload names the request stream: SyntheticName for the sweep, the
	// trace's name (its file name without .swf.gz) for a replay.
	Workload         string
	Capacity         int64   // CPUs of the resource
	Scale            float64 // factor applied to the trace's submit times (0 for the sweep)
	MeanInterarrival float64 // seconds
	OfferedLoad      float64 // requested CPU-seconds / (capacity * span)
	Requests         int
	Results          []Result
}

// SyntheticName labels the points of the Lublin–Feitelson sweep.
const SyntheticName = "lublin-synthetic"

// TraceInfo says which trace was replayed, on what capacity, and what the
// conversion into reservations did to its jobs.
type TraceInfo struct {
	Name           string
	Path           string
	Capacity       int64
	CapacitySource string // "header MaxProcs", "header MaxNodes" or "-capacity"
	Tally          workload.Tally
}

// Report is the outcome of Run.
type Report struct {
	Config Config
	Points []Point
	// Trace describes the replayed trace; nil when none was replayed.
	Trace *TraceInfo
	// SyntheticDropped counts the generated jobs the sweep's conversion
	// dropped (no size or no run time, or larger than the capacity, which
	// the generator, sized for the capacity, never produces), summed over
	// the sweep points.
	SyntheticDropped int
}

// Run executes the experiment, writing one progress line per replay to
// progress (which may be io.Discard), with the time spent and an estimate
// of the time left.
func Run(cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg}
	contenders := cfg.Contenders()

	var trace *workload.Trace
	if cfg.TracePath != "" {
		var err error
		trace, err = workload.LoadTrace(cfg.TracePath, cfg.TraceJobs)
		if err != nil {
			return nil, fmt.Errorf("seed: trace: %w", err)
		}
		capacity, source, err := trace.Capacity(cfg.TraceCapacity)
		if err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		rep.Trace = &TraceInfo{Name: trace.Name, Path: trace.Path, Capacity: capacity, CapacitySource: source}
	}
	points := 0
	if cfg.Synthetic {
		points += len(cfg.Interarrivals)
	}
	if trace != nil {
		points += len(cfg.TraceScales)
	}
	prog := newProgress(progress, points*cfg.Reps*len(contenders))

	if cfg.Synthetic {
		gen, err := workload.NewLublin(workload.LublinConfig{MaxNodes: cfg.Capacity, Seed: cfg.Seed})
		if err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		base := gen.Generate(cfg.Jobs)
		natural := base[len(base)-1].Submit / float64(max(len(base)-1, 1))
		for _, ia := range cfg.Interarrivals {
			jobs := slices.Clone(base)
			for i := range jobs {
				jobs[i].Submit *= ia / natural
			}
			rs, skipped, err := workload.FromSynth(jobs, cfg.reservationConfig(false, cfg.Capacity))
			if err != nil {
				return nil, fmt.Errorf("seed: %w", err)
			}
			rep.SyntheticDropped += skipped
			p, err := cfg.runPoint(SyntheticName, cfg.Capacity, 0, rs, contenders, prog)
			if err != nil {
				return nil, err
			}
			rep.Points = append(rep.Points, p)
		}
	}

	if trace != nil {
		jobs := trace.Jobs
		t0 := jobs[0].Submit
		for _, scale := range cfg.TraceScales {
			scaled := slices.Clone(jobs)
			for i := range scaled {
				if scaled[i].Submit >= 0 {
					scaled[i].Submit = int64(math.Round(float64(scaled[i].Submit-t0) * scale))
				}
			}
			rs, tally, err := workload.FromTally(scaled, cfg.reservationConfig(true, rep.Trace.Capacity))
			if err != nil {
				return nil, fmt.Errorf("seed: %w", err)
			}
			rep.Trace.Tally = tally
			if len(rs) == 0 {
				return nil, fmt.Errorf("seed: trace %s: no job left to replay (%s)", trace.Name, tally)
			}
			if scale == cfg.TraceScales[0] {
				prog.note("trace %s on %d CPUs (%s): %s", trace.Name, rep.Trace.Capacity, rep.Trace.CapacitySource, tally)
			}
			p, err := cfg.runPoint(trace.Name, rep.Trace.Capacity, scale, rs, contenders, prog)
			if err != nil {
				return nil, err
			}
			rep.Points = append(rep.Points, p)
		}
	}
	return rep, nil
}

func (c Config) reservationConfig(requested bool, capacity int64) workload.ReservationConfig {
	return workload.ReservationConfig{
		StartFactor:  c.StartFactor,
		Slack:        c.Slack,
		TimeScale:    c.TimeScale,
		UseRequested: requested,
		MaxAmount:    capacity,
		Seed:         c.Seed,
	}
}

// progress prints progress lines with the elapsed time and an estimate of
// the time left, assuming the remaining steps take as long as the mean step
// so far.
type progress struct {
	w     io.Writer
	total int
	done  int
	begin time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: max(total, 1), begin: time.Now()}
}

// step counts one finished step and prints line with the timing appended.
func (p *progress) step(format string, args ...any) {
	p.done++
	el := time.Since(p.begin)
	eta := time.Duration(float64(el) / float64(p.done) * float64(p.total-p.done))
	fmt.Fprintf(p.w, "[%d/%d %s elapsed, ETA %s] ", p.done, p.total, el.Round(time.Second), eta.Round(time.Second))
	fmt.Fprintf(p.w, format+"\n", args...)
}

// note prints a line without counting a step.
func (p *progress) note(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

// runPoint replays rs on every contender Reps times, interleaving the
// contenders within each repetition so that machine noise spreads evenly.
func (c Config) runPoint(name string, capacity int64, scale float64, rs []workload.Reservation, cs []Contender, prog *progress) (Point, error) {
	if len(rs) == 0 {
		return Point{}, fmt.Errorf("seed: %s: no reservations", name)
	}
	span := float64(rs[len(rs)-1].Arrival-rs[0].Arrival) / float64(c.TimeScale)
	work := 0.0
	for _, r := range rs {
		work += float64(r.Amount) * float64(r.Duration) / float64(c.TimeScale)
	}
	p := Point{
		Workload:         name,
		MeanInterarrival: span / float64(max(len(rs)-1, 1)),
		OfferedLoad:      work / (float64(capacity) * max(span, 1)),
		Capacity:         capacity,
		Scale:            scale,
		Requests:         len(rs),
	}
	results := make([]Result, len(cs))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for rep := range c.Reps {
		for i, ct := range cs {
			r := &results[i]
			var spent time.Duration
			for k := 0; k == 0 || spent < c.MinReplay; k++ {
				tl := ct.Factory(capacity, rs[0].Arrival)
				runtime.GC()
				out, err := Replay(tl, rs, c.Horizon*c.TimeScale)
				if err != nil {
					return Point{}, fmt.Errorf("seed: %s ia=%.0fs %s: %w", name, p.MeanInterarrival, ct.Name, err)
				}
				spent += out.Elapsed
				if rep == 0 && k == 0 {
					*r = Result{Planner: ct.Name, Accepted: out.Accepted, Decisions: out.Decisions,
						MaxLen: out.MaxLen, MeanLen: out.MeanLen, SuccessRate: float64(out.Accepted) / float64(len(rs))}
				} else if out.Accepted != r.Accepted || out.Decisions != r.Decisions {
					return Point{}, fmt.Errorf("seed: %s %s: repetition %d decided differently", name, ct.Name, rep)
				}
				cpu := out.CPU
				if cpu == 0 {
					cpu = out.Elapsed
				}
				r.nsAll = append(r.nsAll, float64(cpu.Nanoseconds())/float64(len(rs)))
				r.wallAll = append(r.wallAll, float64(out.Elapsed.Nanoseconds())/float64(len(rs)))
			}
			prog.step("%s cap=%d ia=%.0fs load=%.2f rep %d/%d %-16s success %.4f  %10.0f ns/request (cpu, median of %d replays so far)",
				name, capacity, p.MeanInterarrival, p.OfferedLoad, rep+1, c.Reps, ct.Name, r.SuccessRate, median(r.nsAll), len(r.nsAll))
		}
	}
	for i := range results {
		r := &results[i]
		r.NsPerRequest, r.WallNsPerRequest, r.Replays = median(r.nsAll), median(r.wallAll), len(r.nsAll)
	}
	p.Results = results
	return p, nil
}

// ReplayOutcome summarises one replay.
type ReplayOutcome struct {
	Accepted  int
	Decisions uint64
	Elapsed   time.Duration // wall time of the loop
	// CPU is the CPU time of the calling thread during the loop (0 where
	// no thread CPU clock exists); lock the goroutine to its thread.
	CPU     time.Duration
	MaxLen  int
	MeanLen float64
}

// Replay offers the requests to tl in arrival order, as the papers' cluster
// manager does: advance the timeline to the arrival, search the earliest
// start inside the booking window (clipped to the book-ahead horizon
// measured from the arrival), and book it. The timed part is the whole loop:
// advancing, searching and booking (plus one Len call per request, which
// records how long the timeline grows).
func Replay(tl planner.Timeline, rs []workload.Reservation, horizon int64) (ReplayOutcome, error) {
	var out ReplayOutcome
	starts := make([]int64, len(rs)) // -1: rejected
	lenSum := 0
	cpu0, cpuOK := threadcpu.Now()
	begin := time.Now()
	for i, r := range rs {
		if n := tl.Len(); n > out.MaxLen {
			out.MaxLen = n
		}
		lenSum += tl.Len()
		tl.Advance(r.Arrival)
		nb := max(r.Start, r.Arrival)
		latest := min(r.Deadline, r.Arrival+horizon) - r.Duration
		s, ok := int64(-1), false
		if latest >= nb {
			s, ok = tl.Earliest(r.Amount, r.Duration, nb, latest)
		}
		if !ok {
			starts[i] = -1
			continue
		}
		if err := tl.Book(s, s+r.Duration, r.Amount); err != nil {
			return out, fmt.Errorf("request %d: Book at the start Earliest found: %w", i, err)
		}
		starts[i] = s
		out.Accepted++
	}
	out.Elapsed = time.Since(begin)
	if cpu1, ok := threadcpu.Now(); ok && cpuOK {
		out.CPU = cpu1 - cpu0
	}
	out.MeanLen = float64(lenSum) / float64(max(len(rs), 1))
	h := fnv.New64a()
	var buf [8]byte
	for _, s := range starts {
		for k := range 8 {
			buf[k] = byte(uint64(s) >> (8 * k))
		}
		h.Write(buf[:])
	}
	out.Decisions = h.Sum64()
	return out, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// errNoPoint is returned by lookups for a missing result.
var errNoPoint = errors.New("no such result")

// result returns the named contender's result at p.
func (p Point) result(name string) (Result, error) {
	for _, r := range p.Results {
		if r.Planner == name {
			return r, nil
		}
	}
	return Result{}, fmt.Errorf("%s at ia=%.0f: %w", name, p.MeanInterarrival, errNoPoint)
}
