// Package recovery fills a ledgerd data directory with many live
// reservations fast, so restart time and memory can be measured at 100k
// and 1M reservations with the real agent.
//
// Prefill runs the agent's own stack in-process, assembled by agent.New: a
// cluster.Node (real raft, raft-boltdb, snapshot store and transport on
// loopback) around the ledger FSM, with the agent's stamp and tick, and
// writes through the agent's ledger, the code behind the public API. The log therefore holds
// exactly the commands the API would have logged for the same requests
// (one-phase reserves with client-style idempotency keys), and the data
// directory is the one the agent writes. Only HTTP, Connect and the
// per-call network round trips are skipped. The agent must then be
// started with the same data directory, node name and Raft address (the
// Raft configuration records it).
package recovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgerd/ledgerd/agent"
	"github.com/ledgerd/ledgerd/benchmarks/service"
	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/ledger/replicated"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// Config configures Prefill. Zero values take the documented defaults.
type Config struct {
	// DataDir is the agent's data_dir; it must not hold Raft state yet.
	DataDir string
	// NodeName, RaftAddr, GossipAddr and HTTPAddr are the agent's
	// node_name, raft_addr, gossip_addr and http_addr. Nothing listens on
	// HTTPAddr during the prefill; it is recorded in gossip meta only.
	NodeName, RaftAddr, GossipAddr, HTTPAddr string
	// Live is the number of committed reservations to reach.
	Live int
	// Resources is the number of resources (default Live/100, at least 8),
	// named like the load generator's, each of Capacity (default 128).
	Resources int
	Capacity  int64
	// Base is where the booking horizon starts (default now + 1h, so no
	// reservation starts during a measurement); Horizon its length
	// (default 24h); Slack the window slack (default 1).
	Base    time.Time
	Horizon time.Duration
	Slack   float64
	// Workers is the number of concurrent writers (default 256): enough
	// for raft to batch many entries per disk write.
	Workers int
	// UnitResources resources (default 16; negative: none) are made of
	// UnitsEach named units (default 64) each; one writer in UnitEvery
	// (default 32) books on them instead, so that about 1/UnitEvery of the
	// reservations carry a unit mapping.
	UnitResources, UnitsEach, UnitEvery int
	// Series recurring series (default 8; negative: none) are booked
	// hourly over the horizon on the first resources, before the writers
	// start.
	Series int
	// Limits tenant limit entries (default: one per tenant "*" on every
	// resource, plus one on each unit resource; negative: none) are set
	// generously (they never reject), so that apply and restore keep the
	// limits' usage accounting as a site with limits does.
	Limits int
	// Seed seeds the request shapes.
	Seed uint64
	// Snapshot settings, as the agent's keys of the same names.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// SnapshotLogBytes is the agent's snapshot_log_bytes (0: off, its
	// default). A prefill writes far more than any one restart replays,
	// and a snapshot of a growing ledger every few MiB of it would only
	// slow it down.
	SnapshotLogBytes uint64
	// RaftLogStore is the agent's raft_log_store (empty: its default).
	RaftLogStore string
	// Progress, if set, receives a line every ProgressEvery (default 10s).
	Progress      io.Writer
	ProgressEvery time.Duration
	// Logger receives the node's logs (default: discarded).
	Logger *slog.Logger
	// TLSCertFile, TLSKeyFile, TLSCAFile, GossipKey and TokensFile secure
	// the node as the agent's keys of the same names do (with
	// tls_verify_incoming and tls_http on): the prefill runs the agent's
	// checks, which refuse an unsecured node unless Insecure is set. Give
	// the agent that opens the data directory the same settings.
	TLSCertFile, TLSKeyFile, TLSCAFile, GossipKey, TokensFile string
	// Insecure runs the node without them (insecure: true), only to
	// compare with an insecure agent.
	Insecure bool
}

// Result summarizes a prefill.
type Result struct {
	Accepted, Rejected int
	Resources          int
	// SeriesBooked is the number of reservations the series booked;
	// ExtraKeys the idempotency keys of the unit resources, limits and
	// series requests.
	SeriesBooked, ExtraKeys int
	Elapsed                 time.Duration
	AppliedIndex            uint64
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.DataDir == "":
		return c, errors.New("prefill: DataDir is required")
	case c.RaftAddr == "" || c.GossipAddr == "" || c.HTTPAddr == "":
		return c, errors.New("prefill: RaftAddr, GossipAddr and HTTPAddr are required")
	case c.Live <= 0:
		return c, fmt.Errorf("prefill: Live = %d: must be > 0", c.Live)
	case c.Resources < 0 || c.Workers < 0:
		return c, fmt.Errorf("prefill: Resources = %d, Workers = %d: must be >= 0", c.Resources, c.Workers)
	}
	if c.Resources == 0 {
		c.Resources = max(c.Live/100, 8)
	}
	if c.Capacity == 0 {
		c.Capacity = 128
	}
	if c.Base.IsZero() {
		c.Base = time.Now().Add(time.Hour)
	}
	if c.Horizon == 0 {
		c.Horizon = 24 * time.Hour
	}
	if c.Slack == 0 {
		c.Slack = 1
	}
	if c.Workers == 0 {
		c.Workers = 256
	}
	if c.UnitResources == 0 {
		c.UnitResources = 16
	}
	if c.UnitsEach == 0 {
		c.UnitsEach = 64
	}
	if c.UnitEvery == 0 {
		c.UnitEvery = 32
	}
	if c.Series == 0 {
		c.Series = 8
	}
	if c.Limits == 0 {
		c.Limits = 1 + max(c.UnitResources, 0)
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// Prefill writes c.Live committed reservations into c.DataDir and stops
// the node gracefully (which snapshots, as the agent does by default).
func Prefill(ctx context.Context, c Config) (Result, error) {
	c, err := c.withDefaults()
	if err != nil {
		return Result{}, err
	}
	cfg := agent.DefaultConfig()
	cfg.NodeName, cfg.DataDir = c.NodeName, c.DataDir
	cfg.HTTPAddr, cfg.RaftAddr, cfg.GossipAddr = c.HTTPAddr, c.RaftAddr, c.GossipAddr
	cfg.BootstrapExpect = 1
	cfg.SnapshotThreshold, cfg.TrailingLogs = c.SnapshotThreshold, c.TrailingLogs
	cfg.SnapshotInterval = agent.Duration(c.SnapshotInterval)
	cfg.SnapshotLogBytes = agent.ByteSize(c.SnapshotLogBytes)
	// No restart target either, for the same reason: a prefill is never
	// crash-restarted.
	cfg.RestartTarget = 0
	cfg.SnapshotOnShutdown = true
	cfg.RaftLogStore = c.RaftLogStore
	cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCAFile = c.TLSCertFile, c.TLSKeyFile, c.TLSCAFile
	cfg.TLSVerifyIncoming, cfg.TLSHTTP = c.TLSCertFile != "", c.TLSCertFile != ""
	cfg.GossipKey, cfg.TokensFile, cfg.Insecure = c.GossipKey, c.TokensFile, c.Insecure
	if err := cfg.Validate(false); err != nil {
		return Result{}, fmt.Errorf("prefill: %w", err)
	}
	a, err := agent.New(cfg, agent.Options{Logger: c.Logger})
	if err != nil {
		return Result{}, fmt.Errorf("prefill: %w", err)
	}
	defer a.Close()
	res, err := fill(ctx, c, a.Node(), a.FSM(), a.Ledger())
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if serr := a.Shutdown(sctx); serr != nil && err == nil {
		err = fmt.Errorf("prefill: shutdown: %w", serr)
	}
	return res, err
}

func fill(ctx context.Context, c Config, node *cluster.Node, f *fsm.FSM, led *replicated.Ledger) (Result, error) {
	start := time.Now()
	res := Result{Resources: c.Resources + max(c.UnitResources, 0)}
	for !node.Ready() {
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("prefill: waiting for the node: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if f.Stats().AppliedIndex > 1 {
		return res, fmt.Errorf("prefill: %s already holds a ledger; use an empty data dir", c.DataDir)
	}
	// The API's principal when authentication is off.
	w := ledger.Write{Tenant: "default", Operator: true}
	names := service.ResourceNames(c.Resources)
	if err := createResources(ctx, led, w, names, c.Capacity, c.Workers); err != nil {
		return res, err
	}
	unitNames, err := extras(ctx, c, led, w, names, &res)
	if err != nil {
		return res, err
	}
	var accepted, rejected atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := progress(c, &accepted, &rejected, start)
	defer stop()
	var wg sync.WaitGroup
	for i := range c.Workers {
		names, capacity := names, c.Capacity
		if len(unitNames) > 0 && i%c.UnitEvery == c.UnitEvery-1 {
			names, capacity = unitNames, int64(c.UnitsEach)
		}
		sh, err := service.NewShaper(service.ShaperConfig{Resources: names, Capacity: capacity,
			Base: c.Base.UnixMilli(), Horizon: c.Horizon.Milliseconds(), Slack: c.Slack, Seed: c.Seed*1_000_003 + uint64(i)})
		if err != nil {
			return res, fmt.Errorf("prefill: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := writer(ctx, led, w, sh, int64(c.Live), &accepted, &rejected); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	res.Accepted, res.Rejected = int(accepted.Load()), int(rejected.Load())
	res.Elapsed = time.Since(start)
	res.AppliedIndex = node.AppliedIndex()
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// createResources creates the resources with up to workers in flight, so
// raft batches them as it batches the reservations.
func createResources(ctx context.Context, led *replicated.Ledger, w ledger.Write, names []string, capacity int64, workers int) error {
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := w
			for j := int(next.Add(1)) - 1; j < len(names) && errs[i] == nil; j = int(next.Add(1)) - 1 {
				w.IdempotencyKey = client.NewKey()
				r := &ledgerdv1.Resource{Name: names[j], Capacity: capacity, Policy: ledgerdv1.Policy_POLICY_REJECT}
				if _, err := led.CreateResource(ctx, w, r); err != nil {
					errs[i] = fmt.Errorf("prefill: create resource %s: %w", names[j], err)
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// extras creates what a site has beside plain resources, so that restore
// and memory are measured with them present: resources made of named
// units (whose names it returns), a few hourly series and generous tenant
// limits.
func extras(ctx context.Context, c Config, led *replicated.Ledger, w ledger.Write, names []string, res *Result) ([]string, error) {
	var unitNames []string
	for i := range max(c.UnitResources, 0) {
		name := fmt.Sprintf("nodes-%02d", i)
		units := make([]string, c.UnitsEach)
		for j := range units {
			units[j] = fmt.Sprintf("n%02d-%03d", i, j)
		}
		w.IdempotencyKey = client.NewKey()
		r := &ledgerdv1.Resource{Name: name, Capacity: int64(len(units)), Units: units, Policy: ledgerdv1.Policy_POLICY_REJECT}
		if _, err := led.CreateResource(ctx, w, r); err != nil {
			return nil, fmt.Errorf("prefill: create unit resource %s: %w", name, err)
		}
		res.ExtraKeys++
		unitNames = append(unitNames, name)
	}
	big := &ledger.LimitSpec{MaxUnits: 1 << 40}
	for i := range max(c.Limits, 0) {
		resource := fsm.AnyResource
		if i > 0 && i <= len(unitNames) {
			resource = unitNames[i-1]
		} else if i > 0 {
			resource = names[(i-1-len(unitNames))%len(names)]
		}
		w.IdempotencyKey = client.NewKey()
		if _, err := led.SetLimits(ctx, ledger.LimitsArgs{Write: w, Tenant: "*", Resource: resource, Spec: big}); err != nil {
			return nil, fmt.Errorf("prefill: set limits on %s: %w", resource, err)
		}
		res.ExtraKeys++
	}
	for i := range max(c.Series, 0) {
		w.IdempotencyKey = client.NewKey()
		out, err := led.ReserveSeries(ctx, ledger.SeriesArgs{Write: w, ID: fmt.Sprintf("series-%02d", i),
			Parts:    []ledger.Part{{Resource: names[i%len(names)], Amount: 1}},
			Duration: 10 * 60 * 1000, Repeat: "FREQ=HOURLY", Start: c.Base.UnixMilli(), HasStart: true,
			Horizon: c.Horizon.Milliseconds()})
		if err != nil {
			return nil, fmt.Errorf("prefill: series %d: %w", i, err)
		}
		res.ExtraKeys++
		res.SeriesBooked += len(out.GetBooked())
	}
	return unitNames, nil
}

// writer reserves shapes until live reservations were accepted in total.
// An attempt that ends with an unknown outcome is retried with the same
// idempotency key, as the API client does.
func writer(ctx context.Context, led *replicated.Ledger, w ledger.Write, sh *service.Shaper, live int64, accepted, rejected *atomic.Int64) error {
	for accepted.Load() < live {
		s := sh.Next()
		w.IdempotencyKey = client.NewKey()
		args := ledger.HoldArgs{Write: w, Commit: true, Shape: ledger.Shape{
			Parts:    []ledger.Part{{Resource: s.Resource, Amount: s.Amount}},
			Duration: s.Duration, NotBefore: s.NotBefore, Deadline: s.Deadline,
		}}
		for attempt := 0; ; attempt++ {
			_, _, err := led.Hold(ctx, args)
			var rej *ledger.RejectedError
			switch {
			case err == nil:
				accepted.Add(1)
			case errors.As(err, &rej):
				rejected.Add(1)
			case (errors.Is(err, ledger.ErrUnavailable) || errors.Is(err, ledger.ErrOutcomeUnknown)) && attempt < 10 && ctx.Err() == nil:
				time.Sleep(50 * time.Millisecond)
				continue
			case ctx.Err() != nil:
				return nil // another writer failed or the caller gave up
			default:
				return fmt.Errorf("prefill: reserve: %w", err)
			}
			break
		}
	}
	return nil
}

// progress prints the running totals every c.ProgressEvery until stopped.
func progress(c Config, accepted, rejected *atomic.Int64, start time.Time) (stop func()) {
	if c.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				a, el := accepted.Load(), time.Since(start)
				fmt.Fprintf(c.Progress, "prefill: %d/%d accepted, %d rejected, %.0f accepted/s, %s\n",
					a, c.Live, rejected.Load(), float64(a)/el.Seconds(), el.Round(time.Second))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
