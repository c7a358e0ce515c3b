// Command unitsexp runs the concrete-units experiment of package sim:
// acceptance and admission time of count-only admission beside unit
// admission that refuses unmappable requests (lowest-index and best-fit
// rules) and unit admission that re-maps movable bookings, on the KTH SP2
// trace and the Lublin workload, and writes results/units.md and .csv:
//
//	go run -tags hashicorpmetrics ./benchmarks/sim/cmd/unitsexp -out benchmarks/sim/results
//
// Traces are read in place (default: ../shared/workloads/ relative to the
// repository root). -quick runs 800 jobs of each for a smoke test.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/sim"
	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

const (
	defaultKTH    = "../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz"
	defaultLublin = "../shared/workloads/lublin_256.swf.gz"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "unitsexp:", err)
		os.Exit(2)
	}
}

func floats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("unitsexp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kth := fs.String("kth", defaultKTH, "KTH SP2 SWF trace (capacity from its header)")
	lublin := fs.String("lublin", defaultLublin, "Lublin SWF workload (capacity from its header)")
	maxJobs := fs.Int("max-jobs", 10000, "first N usable jobs of each trace (0 = all)")
	slacksF := fs.String("slack", "0,1", "booking-window slacks (multiples of the duration), comma-separated")
	scalesF := fs.String("arrival-scale", "1,2", "arrival-time divisors (2 doubles the offered load), comma-separated")
	sf := fs.Float64("start-factor", 1, "Heine et al. start factor")
	out := fs.String("out", "", "results directory (empty: print only)")
	quick := fs.Bool("quick", false, "800 jobs per trace, slack 1, scale 1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	slacks, err := floats(*slacksF)
	if err != nil {
		return fmt.Errorf("-slack: %w", err)
	}
	scales, err := floats(*scalesF)
	if err != nil {
		return fmt.Errorf("-arrival-scale: %w", err)
	}
	if *quick {
		*maxJobs, slacks, scales = 800, []float64{1}, []float64{1}
	}
	loadStart := loadavg()
	begin := time.Now()
	var rows []sim.UnitsRow
	for _, path := range []string{*kth, *lublin} {
		t, err := workload.LoadTrace(path, *maxJobs)
		if err != nil {
			return err
		}
		capacity, src, err := t.Capacity(0)
		if err != nil {
			return err
		}
		for _, scale := range scales {
			for _, slack := range slacks {
				w, err := sim.BuildUnitsWorkload(t, capacity, *sf, slack, scale, 1)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "unitsexp: %s (%d units, %s), slack %g, arrival scale %g: %d reservations (%s)\n", t.Name, capacity, src, slack, scale, len(w.Reservations), w.Tally)
				for _, m := range sim.DefaultUnitsModes() {
					r, err := sim.RunUnits(w.Reservations, capacity, m)
					if err != nil {
						return fmt.Errorf("%s %s: %w", t.Name, m.Name, err)
					}
					rows = append(rows, sim.UnitsRow{Workload: &w, Mode: m, Result: r})
					fmt.Fprintf(stderr, "unitsexp: [%s elapsed] %-28s accepted %5.1f %%  %8.1f µs/admission  remaps %d\n",
						time.Since(begin).Round(time.Second), m.Name, r.Acceptance(), r.MeanUs(), r.Remaps)
				}
			}
		}
	}
	loadEnd := loadavg()
	cmdline := "go run -tags hashicorpmetrics ./benchmarks/sim/cmd/unitsexp " + strings.Join(args, " ")
	md := sim.UnitsMarkdown(rows, sim.UnitsEnv{
		Command: strings.TrimSpace(cmdline), Commit: commit(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		CPU: cpuModel(), NumCPU: runtime.NumCPU(), LoadStart: loadStart, LoadEnd: loadEnd, Wall: time.Since(begin).Round(time.Second).String(),
	})
	fmt.Fprint(stdout, md)
	if *out == "" {
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	for name, body := range map[string]string{"units.md": md, "units.csv": sim.UnitsCSV(rows)} {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// loadavg returns the 1-minute load average, or "?" off Linux.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// commit names the checked-out commit, marked dirty when the tree has
// changes.
func commit() string {
	b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(b))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}
