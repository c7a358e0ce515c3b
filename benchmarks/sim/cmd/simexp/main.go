// Command simexp runs the policy experiments of package sim and writes
// their tables, CSV files and SVG plots.
//
//	go run -tags hashicorpmetrics ./benchmarks/sim/cmd/simexp -out benchmarks/sim/results
//
// -quick runs a tiny version of each sweep; -exp selects 001, 002 or all.
// -trace PATH (SWF, gzip or plain; -kth is an alias) is the job log of
// experiment 001 and, when given, of experiment 002 too (which otherwise
// generates the paper's Lublin–Feitelson stream). The machine size comes
// from the trace header's MaxProcs or MaxNodes unless -capacity is given.
// Every dropped or adjusted job is counted in the outputs, which name the
// workload and its settings. Progress, with an estimate of the time left,
// goes to stderr.
//
// It is a measuring tool: nothing in the ledger imports it, and it writes
// only into -out.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/sim"
	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

// defaultTrace is experiment 001's log, relative to the repository root.
const defaultTrace = "../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "simexp:", err)
		os.Exit(2)
	}
}

// options are the parsed flags.
type options struct {
	exp, out, trace, units string
	traceSet, quick        bool
	maxJobs                int
	capacity               int64
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("simexp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: simexp [flags]

Runs the policy experiments: 001 (Heine et al.: reservations among variable
jobs of a trace, REJECT vs MOVE_VARIABLE) and 002 (Xiao & Hu: relaxed
reservations over 12 clusters, REJECT vs RELAXED). -trace is the job log of
001 and, when given explicitly, of 002 as well; the machine size is read
from the trace header (MaxProcs, else MaxNodes) unless -capacity is given.
Experiment 002 on the synthetic stream uses clusters of 64 nodes.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.exp, "exp", "all", "experiment: 001, 002 or all")
	fs.StringVar(&o.out, "out", "", "directory for tables, CSV and plots (empty: print tables only)")
	fs.StringVar(&o.trace, "trace", defaultTrace, "SWF trace (gzip or plain) for experiment 001, and for 002 when given")
	fs.StringVar(&o.trace, "kth", defaultTrace, "alias of -trace")
	fs.Int64Var(&o.capacity, "capacity", 0, "nodes of the machine (001) or of each cluster (002 on a trace); 0: from the trace header")
	fs.BoolVar(&o.quick, "quick", false, "tiny sweeps")
	fs.IntVar(&o.maxJobs, "max-jobs", -1, "first trace (or generated) jobs used (0 = all; -1 = the sweep's default, 10000)")
	fs.StringVar(&o.units, "units", "both", "experiment 002 time units: seconds (no rounding), minutes (the paper's ÷60 with rounding: every job under 90 s runs 1 unit and requests 2), or both")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.traceSet = o.traceSet || f.Name == "trace" || f.Name == "kth" })
	switch {
	case o.exp != "001" && o.exp != "002" && o.exp != "all":
		return o, fmt.Errorf("-exp %q: want 001, 002 or all", o.exp)
	case o.units != "seconds" && o.units != "minutes" && o.units != "both":
		return o, fmt.Errorf("-units %q: want seconds, minutes or both", o.units)
	case o.capacity < 0:
		return o, fmt.Errorf("-capacity %d: must be >= 0 (0: from the trace header)", o.capacity)
	case o.maxJobs < -1:
		return o, fmt.Errorf("-max-jobs %d: must be >= -1", o.maxJobs)
	case o.trace == "" && (o.exp != "002" || o.traceSet):
		return o, errors.New("-trace: empty (experiment 001 needs a trace)")
	}
	return o, nil
}

// ticker prints progress lines with the time spent and left.
type ticker struct {
	w     io.Writer
	name  string
	begin time.Time
}

func (t ticker) tick(done, total int, what string) {
	el := time.Since(t.begin)
	eta := time.Duration(float64(el) / float64(max(done, 1)) * float64(total-done))
	fmt.Fprintf(t.w, "simexp %s: [%d/%d %s elapsed, ETA %s] %s\n", t.name, done, total, el.Round(time.Second), eta.Round(time.Second), what)
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	write := func(name, body string) error {
		if o.out == "" {
			return nil
		}
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("results dir: %w", err)
		}
		if err := os.WriteFile(filepath.Join(o.out, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}
	var trace *workload.Trace
	var capacity int64
	var capSource string
	if o.exp != "002" || o.traceSet {
		if trace, err = workload.LoadTrace(o.trace, 0); err != nil {
			return fmt.Errorf("-trace: %w", err)
		}
		if capacity, capSource, err = trace.Capacity(o.capacity); err != nil {
			return err
		}
	}
	if o.exp == "001" || o.exp == "all" {
		e := sim.Default001(o.quick)
		if o.maxJobs >= 0 {
			e.MaxJobs = o.maxJobs
		}
		e.Capacity = capacity
		t0 := time.Now()
		rows, tally, err := sim.Run001(trace.Jobs, e, ticker{stderr, "001", t0}.tick)
		if err != nil {
			return err
		}
		label := fmt.Sprintf("%s, %d nodes", trace.Name, capacity)
		head := fmt.Sprintf("## Experiment 001: trace %s (file %s) on %d nodes (capacity from %s)\n\n"+
			"The first %d usable jobs of the log's %d (limit %d, 0 = all); estimate = requested time (field 9). Conversion: %s. Wall time %s.\n\n",
			trace.Name, filepath.Base(trace.Path), capacity, capSource, tally.Kept, trace.Read, e.MaxJobs, tally, time.Since(t0).Round(time.Second))
		var table, csv, svg strings.Builder
		if err := sim.Table001(&table, rows); err != nil {
			return err
		}
		if err := sim.CSV001(&csv, rows, trace.Name, capacity); err != nil {
			return err
		}
		if err := sim.Plot001(&svg, rows, label); err != nil {
			return err
		}
		fmt.Fprint(stdout, head+table.String()+"\n")
		for name, body := range map[string]string{"exp001.md": head + table.String(), "exp001.csv": csv.String(), "exp001.svg": svg.String()} {
			if err := write(name, body); err != nil {
				return err
			}
		}
	}
	if o.exp == "002" || o.exp == "all" {
		units := []string{o.units}
		if o.units == "both" {
			units = []string{"seconds", "minutes"}
		}
		for _, unit := range units {
			e := sim.Default002(o.quick)
			e.Minutes = unit == "minutes"
			if o.maxJobs > 0 {
				e.Jobs = o.maxJobs
			}
			name := "synthetic Lublin-Feitelson"
			if o.traceSet {
				e.Trace, e.ClusterSize = trace.Jobs, capacity
				if o.maxJobs >= 0 {
					e.Jobs = o.maxJobs
				}
				name = trace.Name
			}
			t0 := time.Now()
			rows, tally, err := sim.Run002(e, ticker{stderr, "002 " + unit, t0}.tick)
			if err != nil {
				return err
			}
			source := fmt.Sprintf("%d generated jobs sized for clusters of %d nodes", e.Jobs, e.ClusterSize)
			if o.traceSet {
				source = fmt.Sprintf("the first %d usable of the %d jobs of trace %s (file %s), clusters of %d nodes (capacity from %s); requests follow the k_over model, field 9 unused",
					tally.Kept, trace.Read, trace.Name, filepath.Base(trace.Path), capacity, capSource)
			}
			scaling := "times in seconds, reservation start offset U[100,1000] min"
			if e.Minutes {
				scaling = "times divided by 60 and rounded to whole units as in the paper, start offset U[100,1000] units"
			}
			label := fmt.Sprintf("%s, %d x %d nodes, %s", name, e.Clusters, e.ClusterSize, unit)
			head := fmt.Sprintf("## Experiment 002 (%s): %s; %d clusters of %d nodes; %s; arrivals further divided by %g; reservations x%d nodes split over clusters.\n\n"+
				"Conversion: %s. Wall time %s.\n\n", unit, source, e.Clusters, e.ClusterSize, scaling, e.ArrivalScale, e.Enlarge, tally, time.Since(t0).Round(time.Second))
			var table, csv, svg strings.Builder
			if err := sim.Table002(&table, rows); err != nil {
				return err
			}
			csvName := "lublin-synthetic"
			if o.traceSet {
				csvName = trace.Name
			}
			if err := sim.CSV002(&csv, rows, csvName, e.ClusterSize, unit); err != nil {
				return err
			}
			if err := sim.Plot002(&svg, rows, 1.2, 1.5, label); err != nil {
				return err
			}
			fmt.Fprint(stdout, "\n"+head+table.String())
			base := "exp002"
			if unit == "minutes" {
				base = "exp002-minutes"
			}
			for name, body := range map[string]string{base + ".md": head + table.String(), base + ".csv": csv.String(), base + ".svg": svg.String()} {
				if err := write(name, body); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
