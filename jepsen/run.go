package jepsen

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Config describes one campaign against a real cluster.
type Config struct {
	// Bin is a ledgerd binary; empty builds one from the module into Dir.
	Bin string
	// Dir receives data dirs, node logs, history.json, report.json,
	// report.txt and lin-group*.html. Required.
	Dir      string
	Nodes    int
	Clients  int
	Groups   int
	Duration time.Duration
	Nemeses  []string
	// Quiet and Hold shape the fault schedule (defaults 3s and 4s).
	Quiet, Hold time.Duration
	// Combine is the probability of injecting two faults at once.
	Combine float64
	Seed    uint64
	// CheckTimeout bounds porcupine per resource group (default 60s).
	CheckTimeout time.Duration
	// Settle bounds the wait for a stable leader and converged replicas
	// after the last fault (default 30s).
	Settle time.Duration
	// ExtraArgs are appended to every agent command line.
	ExtraArgs []string
	// LogStore is the agents' raft_log_store ("boltdb" or "wal"); empty
	// takes the agent's default.
	LogStore string
	// Insecure runs the nodes with -insecure and the clients over plain
	// http; only for comparing with the insecure mode. By default the run
	// makes its own CA, certificates, gossip key and token (Security) and
	// every connection is mutual TLS.
	Insecure bool
	// Client is how the workload talks to the nodes: ClientUnary (the
	// default) or ClientBatch.
	Client string
	// Think is each client's pause between operations (WorkloadConfig.Think):
	// long campaigns use it to keep the history small enough to check.
	Think time.Duration
	// Progress receives one line per phase and per fault; nil discards.
	Progress io.Writer
	// Recurring adds the standing-reservation workload (Recurring):
	// series created throughout the run, endless ones booked by the
	// leader's tick under the faults, each occurrence checked to be
	// booked exactly once.
	Recurring bool
	// EndedMax, when > 0 (at least 100), runs the agents with that
	// ended_max: ended reservations past it are dropped, oldest first,
	// under the faults. The history then says so (History.EndedDrops), and
	// the checker reads a not-found answer about an ended reservation as
	// its drop.
	EndedMax int64
	// LogCheckWindow runs the agents with this log_check_window and a
	// 2s log_check_interval, so that the servers' own log check compares
	// windows between the faults' restarts (the log-check-agrees
	// invariant); 0 means DefaultLogCheckWindow, < 0 leaves the agents'
	// defaults (a binary that predates the setting).
	LogCheckWindow int64
}

// DefaultLogCheckWindow is a campaign's log_check_window: small enough
// that windows complete between the restarts of a 10-minute campaign.
const DefaultLogCheckWindow = 1024

func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		return c, errors.New("campaign: Dir is required")
	}
	if c.Nodes <= 0 {
		c.Nodes = 3
	}
	if c.Clients <= 0 {
		c.Clients = 6
	}
	if c.Duration <= 0 {
		return c, fmt.Errorf("campaign: Duration must be > 0, got %v", c.Duration)
	}
	if c.Quiet <= 0 {
		c.Quiet = 3 * time.Second
	}
	if c.Hold <= 0 {
		c.Hold = 4 * time.Second
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = time.Minute
	}
	if c.Settle <= 0 {
		c.Settle = 30 * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.LogCheckWindow == 0 {
		c.LogCheckWindow = DefaultLogCheckWindow
	}
	switch c.LogStore {
	case "", "boltdb", "wal":
	default:
		return c, fmt.Errorf("campaign: LogStore must be \"boltdb\" or \"wal\" (or empty), got %q", c.LogStore)
	}
	switch c.Client {
	case "":
		c.Client = ClientUnary
	case ClientUnary, ClientBatch:
	default:
		return c, fmt.Errorf("campaign: Client must be %q or %q, got %q", ClientUnary, ClientBatch, c.Client)
	}
	return c, nil
}

// Run executes one campaign: build (if needed) and start the cluster, create
// the resources, run the workload while the schedule injects faults, heal
// everything, let the cluster settle, read every node, and check. The
// returned report is also written to cfg.Dir. An error means the campaign
// could not run at all; a run that found bugs returns a report with Pass
// false and a nil error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, format+"\n", args...) }
	if cfg.Bin == "" {
		say("building ledgerd ...")
		if cfg.Bin, err = BuildAgent(ctx, cfg.Dir); err != nil {
			return nil, err
		}
	}
	extra := cfg.ExtraArgs
	if cfg.LogStore != "" {
		extra = append(slices.Clip(extra), "-raft-log-store", cfg.LogStore)
	}
	if cfg.LogCheckWindow > 0 {
		extra = append(slices.Clip(extra), "-log-check-window", strconv.FormatInt(cfg.LogCheckWindow, 10), "-log-check-interval", "2s")
	}
	if cfg.EndedMax > 0 {
		extra = append(slices.Clip(extra), "-ended-max", strconv.FormatInt(cfg.EndedMax, 10))
	}
	cl, err := NewCluster(ClusterConfig{Bin: cfg.Bin, Dir: cfg.Dir, Nodes: cfg.Nodes, Log: cfg.Progress, ExtraArgs: extra, Seed: cfg.Seed, Insecure: cfg.Insecure})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	say("starting %d nodes in %s", cfg.Nodes, cfg.Dir)
	if err := cl.Start(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.Settle)
	err = cl.WaitStable(sctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("campaign: cluster did not elect a leader (see %s/n*.log): %w", cfg.Dir, err)
	}
	say("leader %s", cl.Leader(ctx))

	rec := NewRecorder()
	clientFor := cl.Client
	var batches *BatchStats
	if cfg.Client == ClientBatch {
		batches = &BatchStats{}
		clientFor = (&batchClients{cl: cl, stats: batches}).client
	}
	w, err := NewWorkload(WorkloadConfig{Clients: cfg.Clients, Groups: cfg.Groups, Seed: cfg.Seed, Retries: 4, Think: cfg.Think, OldTargets: cfg.EndedMax > 0,
		Prefix: fmt.Sprintf("j%d", cfg.Seed%100000)}, rec, cl.Names(), clientFor)
	if err != nil {
		return nil, err
	}
	sctx, cancel = context.WithTimeout(ctx, cfg.Settle)
	err = w.Setup(sctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	probeRes := w.Config().Prefix + "-ttl"
	sctx, cancel = context.WithTimeout(ctx, cfg.Settle)
	err = cl.connect(cl.Names()[0]).EnsureResource(sctx, probeRes, 1_000_000)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("campaign: hold-expiry probe resource: %w", err)
	}
	var rw *Recurring
	if cfg.Recurring {
		rw = NewRecurring(cl, w.Config().Prefix, cfg.Seed)
		sctx, cancel = context.WithTimeout(ctx, cfg.Settle)
		err = rw.Setup(sctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("campaign: recurring workload: %w", err)
		}
	}
	availRes := w.Config().Prefix + "-avail"
	sctx, cancel = context.WithTimeout(ctx, cfg.Settle)
	err = cl.connect(cl.Names()[0]).EnsureResource(sctx, availRes, 1_000_000)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("campaign: availability probe resource: %w", err)
	}
	prober := NewProber(cl, availRes, w.Config().Base, rec.Now)
	watch := NewLeaderWatch(cl, rec.Now)
	sched := &Schedule{Cluster: cl, Nemeses: cfg.Nemeses, Quiet: cfg.Quiet, Hold: cfg.Hold, Combine: cfg.Combine,
		Seed: cfg.Seed, Clock: rec.Now, Log: cfg.Progress}
	rep := &Report{Seed: cfg.Seed, Nodes: cfg.Nodes, Clients: cfg.Clients, Nemeses: cfg.Nemeses, Client: cfg.Client, LogStore: cfg.LogStore}

	say("running workload for %v (nemeses: %v)", cfg.Duration, cfg.Nemeses)
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	sched.Burst = func(paused string) { prober.Burst(runCtx, paused) }
	aux := make(chan struct{}, 3)
	go func() { prober.Run(runCtx); aux <- struct{}{} }()
	go func() { watch.Run(runCtx); aux <- struct{}{} }()
	var tlsConf *tls.Config
	token := ""
	if sec := cl.Security(); sec != nil {
		tlsConf, token = sec.ClientTLS(), sec.Token
	}
	metrics := newMetricSampler(cl.Names(), cl.apiAddr, tlsConf, token)
	go func() { metrics.Run(runCtx, time.Second); aux <- struct{}{} }()
	done := make(chan struct{})
	go func() { sched.Run(runCtx); close(done) }()
	progress := time.NewTicker(5 * time.Second)
	wdone := make(chan struct{})
	go func() { w.Run(runCtx); close(wdone) }()
	rdone := make(chan struct{})
	go func() {
		if rw != nil {
			rw.Run(runCtx)
		}
		close(rdone)
	}()
	probes := make(chan int, 1)
	go func() { probes <- ttlProbe(runCtx, cl, probeRes, w.Config().Base) }()
loop:
	for {
		select {
		case <-wdone:
			break loop
		case <-progress.C:
			ops := rec.Ops()
			unknown := 0
			for _, op := range ops {
				if op.Output.Code == CodeUnknown {
					unknown++
				}
			}
			say("%7.1fs %d ops, %d indeterminate", float64(rec.Now())/1e9, len(ops), unknown)
		}
	}
	progress.Stop()
	<-done
	<-rdone
	rep.TTLProbes = <-probes
	stop()
	<-aux
	<-aux
	<-aux
	total := rec.Now()
	rep.Duration = time.Duration(total)

	// Heal everything that might still be broken and let the cluster settle.
	cl.Heal()
	for _, n := range cl.Names() {
		_ = cl.Resume(n)
		if err := cl.StartNode(n); err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	say("healed; waiting for the cluster to settle")
	sctx, cancel = context.WithTimeout(ctx, cfg.Settle)
	if err := cl.WaitStable(sctx); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	// Give the new leader's expiry tick a chance to run before judging holds.
	time.Sleep(2 * time.Second)
	lists, readAt, convErr := converge(sctx, len(cl.Names()), cl.Lists)
	cancel()
	if convErr != nil {
		rep.Errors = append(rep.Errors, convErr.Error())
	}

	h := w.History()
	h.EndedDrops = cfg.EndedMax > 0
	if err := h.Save(filepath.Join(cfg.Dir, "history.json")); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	checked := h
	checked.Ops = append([]Op(nil), h.Ops...)
	if len(lists) == len(cl.Names()) && convErr == nil {
		// Replicas converged, so any one of them is the final state.
		final := map[string]Status{}
		for _, r := range lists[cl.Names()[0]] {
			if r.ID != "" {
				final[r.ID] = r.Status
			}
		}
		rep.Resolved = checked.Resolve(final)
	}
	if batches != nil {
		s := batches.Summary()
		rep.Batches = &s
	}
	// The last sample: every node is back and the cluster settled.
	metrics.SampleAll(ctx)
	metrics.hc.CloseIdleConnections()
	g := metrics.Stats()
	rep.Groups = &g
	rep.Faults = sched.Faults()
	rep.Links = cl.LinkStats()
	rep.Ops, rep.Latency, rep.Availability = Summarize(h, rep.Faults, total)
	rep.Invariants = CheckInvariants(h, lists, InvariantOptions{Now: readAt})
	if rw != nil {
		tried, acked := rw.Created()
		say("checking %d standing reservations (%d acknowledged) ...", tried, acked)
		node := ""
		if len(lists) == len(cl.Names()) && convErr == nil {
			node = cl.Names()[0]
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.Settle)
		rep.Invariants = append(rep.Invariants, rw.Check(cctx, node, lists, readAt, aheadOfWall(rep.Faults, rec.Start()))...)
		cancel()
	}
	pops := prober.Ops()
	rep.Invariants = append(rep.Invariants, ProbesDurable(pops, lists), metrics.LogCheck())
	rep.FaultAvailability = FaultAvailabilities(rep.Faults, cl.Names(), h, pops, watch.Samples(), total)
	rep.PerNemesis = SummarizeNemeses(rep.FaultAvailability)
	for _, p := range pops {
		rep.ProbeWrites++
		if p.OK {
			rep.ProbeOK++
		}
	}
	if err := saveJSON(filepath.Join(cfg.Dir, "probes.json"), pops); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	if err := saveJSON(filepath.Join(cfg.Dir, "leaders.json"), watch.Samples()); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	// Written now, and again with the verdicts: a check that runs out of
	// memory or time must not take the availability figures with it.
	if err := rep.Write(cfg.Dir); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	say("checking linearizability of %d operations ...", len(h.Ops))
	var checkErr error
	rep.Linear, checkErr = Check(checked, CheckOptions{Timeout: cfg.CheckTimeout, VisualDir: cfg.Dir})
	if checkErr != nil {
		rep.Errors = append(rep.Errors, checkErr.Error())
	}
	rep.Judge()
	if err := rep.Write(cfg.Dir); err != nil {
		return rep, err
	}
	return rep, nil
}

// ttlProbe makes a short-lived hold (TTL 2s) on a dedicated resource every
// second through a random running node, so that the holds-expire invariant
// has holds that must have died by the end of the run. It returns how many
// probe holds were acknowledged.
func ttlProbe(ctx context.Context, cl *Cluster, resource string, base int64) int {
	n := 0
	for i := 0; ctx.Err() == nil; i++ {
		names := cl.Names()
		node := names[i%len(names)]
		in := Input{ID: fmt.Sprintf("ttl-%d", i), Parts: []Part{{Resource: resource, Amount: 1}},
			Duration: 60_000, NotBefore: base, Deadline: base + 3_600_000}
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		if _, err := cl.connect(node).HoldFor(pctx, in, 2*time.Second); err == nil {
			n++
		}
		cancel()
		sleepCtx(ctx, time.Second)
	}
	return n
}

// converge reads every node's reservations until all n replicas hold the
// same ones, and returns that reading and when it began. When ctx ends
// first it returns the last reading in which every node answered (if
// any), with an error: the replicas-identical invariant then names how
// they differ, where a reading cut short by the deadline would hide that
// they were read at all.
func converge(ctx context.Context, n int, read func(context.Context) (map[string][]Reservation, error)) (map[string][]Reservation, time.Time, error) {
	var (
		lists, whole map[string][]Reservation
		at, wholeAt  time.Time
		err          error
	)
	for {
		at = time.Now()
		lists, err = read(ctx)
		if err == nil && len(lists) == n {
			if identical(lists) {
				return lists, at, nil
			}
			whole, wholeAt = lists, at
		}
		select {
		case <-ctx.Done():
			if whole != nil {
				return whole, wholeAt, fmt.Errorf("replicas did not converge: every node answered, with different reservations, until %w", ctx.Err())
			}
			if err == nil {
				err = fmt.Errorf("replicas did not converge: %w", ctx.Err())
			}
			return lists, at, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func identical(lists map[string][]Reservation) bool {
	var ref []string
	first := true
	for _, n := range slices.Sorted(maps.Keys(lists)) {
		c := canonical(lists[n])
		if first {
			ref, first = c, false
			continue
		}
		if firstDiff(ref, c) != "" {
			return false
		}
	}
	return true
}

func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
