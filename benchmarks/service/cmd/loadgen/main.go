// Command loadgen drives ledgerd (over its public API) or a raw
// hashicorp/raft cluster (Apply of a no-op FSM, the ceiling of the
// consensus library) with the closed-loop booking workload of package
// service and prints a result table per client count.
//
//	go run -tags hashicorpmetrics ./benchmarks/service/cmd/loadgen -system ledgerd -addrs 127.0.0.1:7420 -clients 1,16,64 -live 10000
//	go run -tags hashicorpmetrics ./benchmarks/service/cmd/loadgen -system ledgerd -coalesce=false -clients 64
//	go run -tags hashicorpmetrics ./benchmarks/service/cmd/loadgen -system rawraft -nodes 3 -clients 64
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/ledgerd/ledgerd/benchmarks/service"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run() error {
	var f service.Flags
	f.Register(flag.CommandLine)
	system := flag.String("system", "ledgerd", "ledgerd or rawraft")
	addrs := flag.String("addrs", "127.0.0.1:7420", "ledgerd API addresses, comma-separated")
	token := flag.String("token", "", "API bearer token (operator, to create resources)")
	nodes := flag.Int("nodes", 0, "cluster size (rawraft: nodes to start; ledgerd: for the report)")
	dir := flag.String("dir", "", "rawraft data directory (default: a temporary one)")
	report := flag.String("report", "", "instead of a run: read this JSON-lines result file and write tables and plots to -out")
	out := flag.String("out", ".", "directory for -report")
	cpuprofile := flag.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	coalesce := flag.Bool("coalesce", true, "ledgerd: coalesce concurrent calls into Batch calls (false: one API call per operation)")
	inFlight := flag.Int("batch-inflight", 0, "ledgerd: Batch calls in flight per node before calls queue (0: the client's default)")
	flag.Parse()
	if *report != "" {
		return writeReport(*report, *out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *cpuprofile != "" {
		fh, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer fh.Close()
		if err := pprof.StartCPUProfile(fh); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	var sys service.System
	switch *system {
	case "ledgerd":
		l, err := service.NewLedgerd(strings.Split(*addrs, ","), client.Options{Token: *token, NoCoalesce: !*coalesce, MaxInFlight: *inFlight}, f.Label)
		if err != nil {
			return err
		}
		if *nodes == 0 {
			*nodes = len(strings.Split(*addrs, ","))
		}
		sys = l
	case "rawraft":
		if *nodes <= 0 {
			*nodes = 3
		}
		r, err := service.NewRawRaft(*nodes, *dir)
		if err != nil {
			return err
		}
		sys = r
	default:
		return fmt.Errorf("-system %q: want ledgerd or rawraft", *system)
	}
	defer sys.Close()
	if f.Label == "" {
		f.Label = fmt.Sprintf("%d nodes", *nodes)
	}
	_, err := service.RunAll(ctx, sys, f, *nodes, os.Stdout)
	return err
}

// writeReport renders results.md (table and bars), throughput.svg and
// latency-cdf.svg (reserve latency at 64 clients, default mix) into out.
func writeReport(in, out string) error {
	rs, err := service.ReadResults(in)
	if err != nil {
		return err
	}
	var md strings.Builder
	md.WriteString("## Bars\n\n")
	if err := service.WriteBars(&md, rs); err != nil {
		return err
	}
	md.WriteString("## All runs\n\n")
	if err := service.WriteMarkdown(&md, rs); err != nil {
		return err
	}
	var cdf []*service.Result
	for _, r := range rs {
		if r.Clients == 64 && r.Mix == "default" && r.TargetLive == rs[0].TargetLive {
			cdf = append(cdf, r)
		}
	}
	files := map[string]string{
		"results.md":      md.String(),
		"throughput.svg":  service.ThroughputSVG(rs),
		"latency-cdf.svg": service.LatencyCDFSVG(cdf, service.OpReserve, "Reserve latency CDF, 64 clients, default mix"),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(out, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
