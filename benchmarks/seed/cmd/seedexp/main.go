package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ledgerd/ledgerd/benchmarks/seed"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage was printed, which is success
		}
		fmt.Fprintln(os.Stderr, "seedexp:", err)
		os.Exit(2)
	}
}

// floatList is a comma-separated list flag of floats.
type floatList []float64

// String implements flag.Value.
func (l *floatList) String() string {
	var s []string
	for _, v := range *l {
		s = append(s, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value.
func (l *floatList) Set(v string) error {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", f)
		}
		out = append(out, x)
	}
	*l = out
	return nil
}

// intList is a comma-separated list flag of integers.
type intList []int64

// String implements flag.Value.
func (l *intList) String() string {
	var s []string
	for _, v := range *l {
		s = append(s, strconv.FormatInt(v, 10))
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value.
func (l *intList) Set(v string) error {
	var out []int64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, x)
	}
	*l = out
	return nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seedexp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: seedexp [flags]

Reproduces the cluster experiment of Schneider & Linnert: reservations with
booking windows on one resource, replayed on the free-block list, the indexed
timeline and slotted time, swept over mean interarrival times. Reports the
success rate and the median CPU time per request of the replaying thread
(over -reps repetitions, each repeating the replay for at least -min-replay).

Two request streams: a synthetic Lublin-Feitelson sweep on -synth-capacity
CPUs (-synth=false turns it off) and the SWF trace -trace (gzip or plain;
-kth is an alias), replayed on the capacity of its header's MaxProcs or
MaxNodes line unless -capacity is given. Durations are the requested times
(field 9); a job without one uses its run time. Every dropped or adjusted
trace job is counted in the progress output and in results.md.

Run from the repository root so that the default trace path resolves.

Flags:
`)
		fs.PrintDefaults()
	}
	def := seed.DefaultConfig()
	quick := fs.Bool("quick", false, "tiny sweep for tests: 300 jobs, 2 points, whole seconds, 50-hour horizon, an exact slotted timeline; other flags override it")
	out := fs.String("out", "", "directory for results.md, results.csv and results.svg (empty: print only)")
	capacity := fs.Int64("capacity", 0, "CPUs of the resource the trace is replayed on (0: the trace header's MaxProcs, else MaxNodes)")
	synthCapacity := fs.Int64("synth-capacity", def.Capacity, "CPUs of the resource of the synthetic sweep")
	synth := fs.Bool("synth", def.Synthetic, "run the synthetic Lublin-Feitelson sweep")
	horizon := fs.Int64("horizon", def.Horizon, "maximum book-ahead time in seconds (divided into the slots)")
	timescale := fs.Int64("timescale", def.TimeScale, "timeline units per second (1000 = milliseconds)")
	jobs := fs.Int("jobs", def.Jobs, "synthetic jobs per sweep point")
	reps := fs.Int("reps", def.Reps, "timed repetitions per planner and point; the median is reported")
	seedV := fs.Uint64("seed", def.Seed, "seed of the workload generator and the reservation windows")
	startFactor := fs.Float64("start-factor", def.StartFactor, "start delay = rand[0,1] * duration * start-factor (Heine et al.)")
	slack := fs.Float64("slack", def.Slack, "booking window = duration * (1 + rand[0,1] * slack)")
	trace := def.TracePath
	fs.StringVar(&trace, "trace", def.TracePath, "SWF trace (gzip or plain) replayed with requested times as durations (empty: skip)")
	fs.StringVar(&trace, "kth", def.TracePath, "alias of -trace")
	traceJobs := 0
	fs.IntVar(&traceJobs, "trace-jobs", 0, "replay only the first N trace jobs (0: all)")
	fs.IntVar(&traceJobs, "kth-jobs", 0, "alias of -trace-jobs")
	ias := floatList(def.Interarrivals)
	fs.Var(&ias, "interarrivals", "comma-separated mean interarrival times (s) of the synthetic sweep")
	slots := intList(def.Slots)
	fs.Var(&slots, "slots", "comma-separated slot counts of the slotted timelines (each must divide horizon*timescale)")
	scales := floatList(def.TraceScales)
	fs.Var(&scales, "trace-scales", "comma-separated factors applied to the trace's submit times (< 1 compresses time, raising the load)")
	fs.Var(&scales, "kth-scales", "alias of -trace-scales")
	minReplay := fs.Duration("min-replay", def.MinReplay, "repeat each replay until this much of it has run per repetition (noise control)")
	exact := fs.Bool("exact-slotted", false, "add a slotted timeline with one slot per time unit (must match the list exactly)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := def
	if *quick {
		cfg = seed.QuickConfig()
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !*quick || set["synth-capacity"] {
		cfg.Capacity = *synthCapacity
	}
	cfg.TraceCapacity = *capacity
	if set["synth"] {
		cfg.Synthetic = *synth
	}
	if !*quick || set["horizon"] {
		cfg.Horizon = *horizon
	}
	if !*quick || set["timescale"] {
		cfg.TimeScale = *timescale
	}
	if !*quick || set["jobs"] {
		cfg.Jobs = *jobs
	}
	if !*quick || set["reps"] {
		cfg.Reps = *reps
	}
	if !*quick || set["interarrivals"] {
		cfg.Interarrivals = ias
	}
	if !*quick || set["slots"] {
		cfg.Slots = slots
	}
	if !*quick || set["trace-scales"] || set["kth-scales"] {
		cfg.TraceScales = scales
	}
	if !*quick || set["trace-jobs"] || set["kth-jobs"] {
		cfg.TraceJobs = traceJobs
	}
	if !*quick || set["min-replay"] {
		cfg.MinReplay = *minReplay
	}
	if set["exact-slotted"] {
		cfg.ExactSlotted = *exact
	}
	cfg.Seed, cfg.StartFactor, cfg.Slack, cfg.TracePath = *seedV, *startFactor, *slack, trace
	if cfg.TracePath != "" {
		if _, err := os.Stat(cfg.TracePath); err != nil {
			if set["trace"] || set["kth"] {
				return fmt.Errorf("-trace: %w", err)
			}
			fmt.Fprintf(stderr, "seedexp: default trace %s not found, skipping the trace replay\n", cfg.TracePath)
			cfg.TracePath = ""
		}
	}

	rep, err := seed.Run(cfg, stderr)
	if err != nil {
		return err
	}
	md := rep.Markdown()
	fmt.Fprint(stdout, md)
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("output directory: %w", err)
		}
		files := map[string]string{"results.md": md, "results.csv": rep.CSV(), "results.svg": rep.SVG()}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(*out, name), []byte(body), 0o644); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
		}
		fmt.Fprintf(stderr, "seedexp: wrote results.md, results.csv, results.svg to %s\n", *out)
	}
	if bad := rep.Check(); len(bad) > 0 {
		return fmt.Errorf("structural checks failed: %s", strings.Join(bad, "; "))
	}
	return nil
}
