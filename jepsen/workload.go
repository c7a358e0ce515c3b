package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// WorkloadConfig shapes the client load. Small capacities and a short
// horizon make contention and rejections frequent, which is where
// linearizability bugs show.
type WorkloadConfig struct {
	// Clients is the number of concurrent clients (5–20 is sensible);
	// client i works on resource group i % Groups.
	Clients int
	// Groups is the number of independent resource groups (default: enough
	// for at most 3 clients per group); each has a
	// 4-unit "cpu" and a 2-unit "gpu" resource, and co-allocations span both.
	Groups int
	// Prefix makes resource names unique per run (resources outlive runs
	// when a cluster is reused).
	Prefix string
	// Seed makes the operation mix replayable (scheduling is not).
	Seed uint64
	// Base is the first instant (Unix ms) booking windows use; far enough
	// in the future that no reservation becomes ACTIVE during the run.
	Base int64
	// Unit is the time grain of durations and windows in ms.
	Unit int64
	// Retries is how often an indeterminate hold or reserve is retried with
	// the same idempotency key.
	Retries int
	// Think is the pause between a client's operations.
	Think time.Duration
	// Slide moves the booking horizon one Unit later every Slide (default
	// 500ms), so that old bookings fall behind and the schedule never
	// saturates into rejecting everything.
	Slide time.Duration
	// OldTargets makes one in eight operations on an existing reservation
	// address any the client's group made, not one of the last twelve: a
	// run with ended_max then reads and changes reservations the cluster
	// may have dropped (Config.EndedMax).
	OldTargets bool
}

func (c WorkloadConfig) withDefaults() (WorkloadConfig, error) {
	if c.Clients <= 0 {
		return c, fmt.Errorf("workload: Clients must be > 0, got %d", c.Clients)
	}
	if c.Groups <= 0 {
		c.Groups = (c.Clients + 2) / 3 // at most 3 clients per group
	}
	if c.Slide <= 0 {
		c.Slide = 500 * time.Millisecond
	}
	if c.Groups > c.Clients {
		return c, fmt.Errorf("workload: Groups (%d) must not exceed Clients (%d)", c.Groups, c.Clients)
	}
	if c.Base == 0 {
		// Next midnight UTC plus a week: never "now" during a run.
		c.Base = (time.Now().Add(7*24*time.Hour).UnixMilli() / 86_400_000) * 86_400_000
	}
	if c.Unit <= 0 {
		c.Unit = 60_000
	}
	if c.Retries < 0 {
		return c, fmt.Errorf("workload: Retries must be >= 0, got %d", c.Retries)
	}
	if c.Prefix == "" {
		c.Prefix = "j"
	}
	return c, nil
}

// Resources returns the capacity of every resource and the groups, in the
// form History needs.
func (c WorkloadConfig) Resources() (map[string]int64, [][]string) {
	caps := map[string]int64{}
	var groups [][]string
	for g := range c.Groups {
		cpu, gpu := fmt.Sprintf("%s-g%d-cpu", c.Prefix, g), fmt.Sprintf("%s-g%d-gpu", c.Prefix, g)
		caps[cpu], caps[gpu] = 4, 2
		groups = append(groups, []string{cpu, gpu})
	}
	return caps, groups
}

// avoidFor is how long a client avoids a node that timed out or refused.
const avoidFor = 3 * time.Second

// Workload drives concurrent clients against a set of nodes and records
// every operation. Create with NewWorkload; Run may be called once.
type Workload struct {
	cfg    WorkloadConfig
	rec    *Recorder
	nodes  []string
	client func(node string) Client
	groups [][]string

	mu  sync.Mutex
	ids [][]string // per group, IDs whose server-side reservation is known
}

// NewWorkload prepares a workload. client returns the API client for a node
// name; nodes lists the names clients pick from.
func NewWorkload(cfg WorkloadConfig, rec *Recorder, nodes []string, client func(string) Client) (*Workload, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, errors.New("workload: nodes must not be empty")
	}
	_, groups := cfg.Resources()
	return &Workload{cfg: cfg, rec: rec, nodes: nodes, client: client, groups: groups, ids: make([][]string, len(groups))}, nil
}

// Config returns the effective configuration (defaults filled in).
func (w *Workload) Config() WorkloadConfig { return w.cfg }

// Setup creates the workload's resources through any node that answers.
func (w *Workload) Setup(ctx context.Context) error {
	caps, groups := w.cfg.Resources()
	var last error
	for attempt := 0; attempt < 60; attempt++ {
		node := w.nodes[attempt%len(w.nodes)]
		c := w.client(node)
		ok := true
		for _, g := range groups {
			for _, r := range g {
				if err := c.EnsureResource(ctx, r, caps[r]); err != nil {
					last, ok = err, false
					break
				}
			}
			if !ok {
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workload setup: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("workload setup: resources not created: %w", last)
}

// Run starts the clients and returns when ctx is done and every client has
// finished its current operation.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range w.cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client1(ctx, i)
		}()
	}
	wg.Wait()
}

func (w *Workload) client1(ctx context.Context, id int) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(id)))
	g := id % len(w.groups)
	seq := 0
	// A broker fails over: after a node timed out or refused, it is
	// avoided for a while (unless every node is).
	avoid := map[string]time.Time{}
	pickNode := func() string {
		var ok []string
		now := time.Now()
		for _, n := range w.nodes {
			if now.After(avoid[n]) {
				ok = append(ok, n)
			}
		}
		if len(ok) == 0 {
			ok = w.nodes
		}
		return ok[rng.IntN(len(ok))]
	}
	do := func(in Input) (string, Output) {
		node := pickNode()
		out := w.do(ctx, id, node, in)
		if out.Code == CodeUnknown || out.Code == CodeFailed {
			avoid[node] = time.Now().Add(avoidFor)
		}
		if out.Code == CodeFailed {
			// Refusals are instant; without a pause a client would
			// spin while the whole cluster is down.
			time.Sleep(100 * time.Millisecond)
		}
		return node, out
	}
	for ctx.Err() == nil {
		seq++
		in := w.nextInput(rng, id, g, seq)
		if in.Op == "" {
			continue
		}
		node, out := do(in)
		// An indeterminate create is retried with the same key: the
		// ledger must apply it at most once and answer with the first
		// result.
		for r := 0; out.Code == CodeUnknown && (in.Op == OpHold || in.Op == OpReserve) && r < w.cfg.Retries && ctx.Err() == nil; r++ {
			time.Sleep(time.Duration(r+1) * 250 * time.Millisecond)
			node, out = do(in)
		}
		if in.Op == OpHold || in.Op == OpReserve {
			if w.client(node).Known(in.ID) {
				w.mu.Lock()
				w.ids[g] = append(w.ids[g], in.ID)
				w.mu.Unlock()
			}
		}
		if w.cfg.Think > 0 {
			time.Sleep(w.cfg.Think)
		}
	}
}

// do performs one operation with a timeout and records it. Operations that
// were refused before they could take effect are recorded with CodeFailed.
func (w *Workload) do(ctx context.Context, client int, node string, in Input) Output {
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	call := w.rec.Now()
	out, err := w.client(node).Invoke(octx, in)
	ret := w.rec.Now()
	op := Op{Client: client, Node: node, Input: in, Output: out, Call: call, Return: ret}
	if err != nil {
		op.Err, op.Reason = err.Error(), reasonOf(err)
	}
	w.rec.Add(op)
	return out
}

// nextInput draws the next operation for client id on group g.
func (w *Workload) nextInput(rng *rand.Rand, id, g, seq int) Input {
	res := w.groups[g]
	u := w.cfg.Unit
	shape := func(in Input) Input {
		switch rng.IntN(4) {
		case 0:
			in.Parts = []Part{{Resource: res[0], Amount: 1 + rng.Int64N(4)}}
		case 1:
			in.Parts = []Part{{Resource: res[1], Amount: 1 + rng.Int64N(2)}}
		default: // co-allocation: same start on both
			in.Parts = []Part{{Resource: res[0], Amount: 1 + rng.Int64N(3)}, {Resource: res[1], Amount: 1}}
		}
		in.Duration = (1 + rng.Int64N(4)) * u
		in.NotBefore = w.cfg.Base + (w.rec.Now()/int64(w.cfg.Slide)+rng.Int64N(8))*u
		in.Deadline = in.NotBefore + in.Duration + rng.Int64N(6)*u
		return in
	}
	newID := fmt.Sprintf("c%d-%d", id, seq)
	w.mu.Lock()
	known := w.ids[g]
	pick := ""
	if len(known) > 0 {
		recent := known[max(0, len(known)-12):]
		if w.cfg.OldTargets && rng.IntN(8) == 0 {
			recent = known
		}
		pick = recent[rng.IntN(len(recent))]
	}
	w.mu.Unlock()
	n := rng.IntN(100)
	switch {
	case n < 25:
		return shape(Input{Op: OpHold, ID: newID})
	case n < 40:
		return shape(Input{Op: OpReserve, ID: newID})
	case pick == "":
		return shape(Input{Op: OpFind})
	case n < 56:
		return Input{Op: OpCommit, ID: pick}
	case n < 64:
		return Input{Op: OpAbort, ID: pick}
	case n < 71:
		return shape(Input{Op: OpModify, ID: pick})
	case n < 78:
		return Input{Op: OpCancel, ID: pick}
	case n < 90:
		return Input{Op: OpGet, ID: pick}
	default:
		return shape(Input{Op: OpFind})
	}
}

// History returns the recorded history with the workload's capacities.
func (w *Workload) History() History {
	caps, groups := w.cfg.Resources()
	return History{Capacity: caps, Groups: groups, Grain: w.cfg.Unit, Ops: w.rec.Ops()}
}
