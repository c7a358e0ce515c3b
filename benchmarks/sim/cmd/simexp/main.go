// Command simexp runs the policy experiments of package sim and writes
// their tables, CSV files and SVG plots.
//
//	go run ./benchmarks/sim/cmd/simexp -out benchmarks/sim/results
//
// -quick runs a tiny version of each sweep; -exp selects 001, 002 or all.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/sim"
	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "simexp:", err)
		os.Exit(1)
	}
}

func run() error {
	exp := flag.String("exp", "all", "experiment: 001, 002 or all")
	out := flag.String("out", "", "directory for tables, CSV and plots (empty: print tables only)")
	trace := flag.String("trace", "../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz", "SWF trace for experiment 001")
	quick := flag.Bool("quick", false, "tiny sweeps")
	maxJobs := flag.Int("max-jobs", -1, "experiment 001: first log jobs used (0 = all; -1 = the default of the sweep)")
	flag.Parse()
	if *exp != "001" && *exp != "002" && *exp != "all" {
		return fmt.Errorf("-exp %q: want 001, 002 or all", *exp)
	}
	write := func(name string, f func(*os.File) error) error {
		if *out == "" {
			return nil
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("results dir: %w", err)
		}
		fh, err := os.Create(filepath.Join(*out, name))
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("write %s: %w", name, err)
		}
		return fh.Close()
	}
	if *exp == "001" || *exp == "all" {
		log, _, err := workload.ReadFile(*trace)
		if err != nil {
			return err
		}
		e := sim.Default001(*quick)
		if *maxJobs >= 0 {
			e.MaxJobs = *maxJobs
		}
		t0 := time.Now()
		rows, err := sim.Run001(log, e)
		if err != nil {
			return err
		}
		fmt.Printf("## Experiment 001 (%d log jobs used, %s)\n\n", e.MaxJobs, time.Since(t0).Round(time.Millisecond))
		if err := sim.Table001(os.Stdout, rows); err != nil {
			return err
		}
		for _, w := range []struct {
			name string
			f    func(*os.File) error
		}{
			{"exp001.md", func(f *os.File) error { return sim.Table001(f, rows) }},
			{"exp001.csv", func(f *os.File) error { return sim.CSV001(f, rows) }},
			{"exp001.svg", func(f *os.File) error { return sim.Plot001(f, rows) }},
		} {
			if err := write(w.name, w.f); err != nil {
				return err
			}
		}
	}
	if *exp == "002" || *exp == "all" {
		e := sim.Default002(*quick)
		t0 := time.Now()
		rows, err := sim.Run002(e)
		if err != nil {
			return err
		}
		fmt.Printf("\n## Experiment 002 (%d jobs, %s)\n\n", e.Jobs, time.Since(t0).Round(time.Millisecond))
		if err := sim.Table002(os.Stdout, rows); err != nil {
			return err
		}
		for _, w := range []struct {
			name string
			f    func(*os.File) error
		}{
			{"exp002.md", func(f *os.File) error { return sim.Table002(f, rows) }},
			{"exp002.csv", func(f *os.File) error { return sim.CSV002(f, rows) }},
			{"exp002.svg", func(f *os.File) error { return sim.Plot002(f, rows, 1.2, 1.5) }},
		} {
			if err := write(w.name, w.f); err != nil {
				return err
			}
		}
	}
	return nil
}
