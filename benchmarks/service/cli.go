package service

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Flags are the command-line settings shared by the load generator
// commands (loadgen here, peerbench in the peers module).
type Flags struct {
	Clients   string
	Live      int
	Duration  time.Duration
	Resources int
	Capacity  int64
	Horizon   time.Duration
	Slack     float64
	Mix       string
	Seed      uint64
	JSON      string
	Label     string
	Quiet     bool
	CPUPids   string
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Clients, "clients", "1,16,64", "closed-loop client counts to run in turn, comma-separated")
	fs.IntVar(&f.Live, "live", 10000, "live reservations to build and hold")
	fs.DurationVar(&f.Duration, "duration", 20*time.Second, "measured time per client count")
	fs.IntVar(&f.Resources, "resources", 0, "resources (0 = live/100, at least 8)")
	fs.Int64Var(&f.Capacity, "capacity", 128, "capacity of each resource (also the Lublin machine size)")
	fs.DurationVar(&f.Horizon, "horizon", 24*time.Hour, "booking horizon the starts are spread over")
	fs.Float64Var(&f.Slack, "slack", 1, "booking window slack as a multiple of the duration")
	fs.StringVar(&f.Mix, "mix", "default", "operation mix: default (reserve, hold+commit, modify, cancel, read) or reserve")
	fs.Uint64Var(&f.Seed, "seed", 1, "random seed")
	fs.StringVar(&f.JSON, "json", "", "append one JSON result per run to this file")
	fs.StringVar(&f.Label, "label", "", "label of the system in reports, e.g. \"3 nodes\"")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress lines")
	fs.StringVar(&f.CPUPids, "cpu-pids", "", "process ids of the system's servers, comma-separated: their CPU time per operation, with that of all their descendants, is reported")
}

// ClientCounts parses the -clients list.
func (f *Flags) ClientCounts() ([]int, error) {
	var out []int
	for _, s := range strings.Split(f.Clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-clients: %q is not a positive number", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// RunAll runs the workload against sys once per client count, carrying the
// live set from one run to the next, prints each table to out and appends
// the JSON results to f.JSON.
func RunAll(ctx context.Context, sys System, f Flags, nodes int, out io.Writer) ([]*Result, error) {
	counts, err := f.ClientCounts()
	if err != nil {
		return nil, err
	}
	mix, err := ParseMix(f.Mix)
	if err != nil {
		return nil, fmt.Errorf("-mix: %w", err)
	}
	var pids []int
	if f.CPUPids != "" {
		for _, s := range strings.Split(f.CPUPids, ",") {
			p, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || p <= 0 {
				return nil, fmt.Errorf("-cpu-pids: %q is not a process id", s)
			}
			pids = append(pids, p)
		}
	}
	resources := f.Resources
	if resources <= 0 {
		resources = max(f.Live/100, 8)
	}
	var progress io.Writer = os.Stderr
	if f.Quiet {
		progress = nil
	}
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	var carry []Booking
	var results []*Result
	for _, n := range counts {
		res, err := Run(ctx, sys, Config{
			Clients: n, Live: f.Live, Duration: f.Duration, Resources: resources, Capacity: f.Capacity,
			Horizon: f.Horizon, Slack: f.Slack, Mix: mix, Seed: f.Seed, Progress: progress, Base: base, Existing: carry, CPUPids: pids,
		})
		if err != nil {
			return results, fmt.Errorf("%s with %d clients: %w", sys.Name(), n, err)
		}
		res.Label, res.Nodes, res.Mix = f.Label, nodes, f.Mix
		carry = res.Bookings
		if err := res.WriteTable(out); err != nil {
			return results, err
		}
		if f.JSON != "" {
			if err := appendJSON(f.JSON, res); err != nil {
				return results, err
			}
		}
		results = append(results, res)
	}
	return results, nil
}

func appendJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := fh.Write(append(b, '\n')); err != nil {
		fh.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fh.Close()
}
