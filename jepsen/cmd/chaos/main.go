package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ledgerd/ledgerd/jepsen"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	var (
		nodes    = fs.Int("nodes", 3, "number of ledgerd nodes (3 or 5)")
		clients  = fs.Int("clients", 10, "concurrent clients (5-20)")
		groups   = fs.Int("groups", 0, "independent resource groups (default: at most 3 clients per group)")
		duration = fs.Duration("duration", time.Minute, "how long the workload runs")
		nemesis  = fs.String("nemesis", "kill,partition", "comma-separated nemeses: "+strings.Join(jepsen.NemesisNames, ", ")+", partition (all partitions), all, none")
		quiet    = fs.Duration("quiet", 3*time.Second, "quiet time between faults")
		hold     = fs.Duration("hold", 4*time.Second, "how long each fault lasts")
		combine  = fs.Float64("combine", 0.3, "probability of two faults at once")
		seed     = fs.Uint64("seed", 0, "seed for the workload and the schedule (0: from the clock)")
		dir      = fs.String("dir", "", "output directory (default: a new temporary directory)")
		bin      = fs.String("bin", "", "prebuilt ledgerd binary (default: build from this module)")
		check    = fs.Duration("check-timeout", 2*time.Minute, "porcupine time limit per resource group")
		insecure = fs.Bool("insecure", false, "run the nodes with -insecure and the clients over plain http (to compare with the insecure mode; by default every run makes its own CA, certificates, gossip key and token, and every connection is mutual TLS)")
		think    = fs.Duration("think", 0, "each client's pause between operations (long campaigns: keeps the history small enough to check)")
		client   = fs.String("client", jepsen.ClientUnary, "how clients talk to their node: unary (one Connect call per operation) or batch (the coalescing client: concurrent operations share Batch calls)")
	)
	logStore := fs.String("log-store", "", "the agents' raft_log_store: boltdb or wal (default: the agent's default)")
	agentArgs := fs.String("agent-args", "", "more flags for every agent command line, separated by spaces, e.g. \"-snapshot-log-bytes 16KiB\" to snapshot throughout the faults")
	logCheck := fs.Int64("log-check-window", jepsen.DefaultLogCheckWindow, "run the agents with this log_check_window (and a 2s log_check_interval) so that their log check compares windows between the faults' restarts; -1 leaves the agents' defaults, for a binary older than the setting")
	endedMax := fs.Int64("ended-max", 0, "run the agents with this ended_max (0: none; else at least 100), so that ended reservations are dropped, oldest first, under the faults; the checker then reads a not-found answer about an ended reservation as its drop")
	recurring := fs.Bool("recurring", false, "also book standing reservations throughout the run and check that each occurrence is booked exactly once, the endless ones by the leader's tick under the faults")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./jepsen/cmd/chaos [flags]\n\nRuns a chaos campaign against real ledgerd processes and checks linearizability and invariants.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	nem, err := jepsen.ParseNemeses(*nemesis)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "ledgerd-chaos-"); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
	}
	fmt.Printf("seed %d, output in %s\n", *seed, *dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := jepsen.Run(ctx, jepsen.Config{
		Bin: *bin, Dir: *dir, Nodes: *nodes, Clients: *clients, Groups: *groups, Duration: *duration,
		Nemeses: nem, Quiet: *quiet, Hold: *hold, Combine: *combine, Seed: *seed, CheckTimeout: *check,
		Client: *client, Insecure: *insecure, Progress: os.Stdout, Recurring: *recurring, Think: *think, LogStore: *logStore, EndedMax: *endedMax, LogCheckWindow: *logCheck,
		ExtraArgs: strings.Fields(*agentArgs),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	fmt.Print("\n" + rep.Text())
	fmt.Printf("\nreport: %s/report.json\n", *dir)
	if !rep.Pass {
		return 1
	}
	return 0
}
