// Package follow is the ledger side of the bridge: it makes a resource
// manager (Slurm) follow the ledger's committed reservations on one
// resource with units, and records through the log whether each of them
// is materialized there.
//
// One round (Follower.Round) reads the committed and active reservations
// whose start lies within the horizon (a linearizable read), turns each
// into a bridge.Spec (name prefix+ID, its units as nodes, its window in
// whole seconds, users and accounts from the tenant mapping), lets the
// pure core plan the writes (bridge.Reconcile), runs them through the
// driver (bridge.Apply), and writes the materialization records that
// changed (ledger.MaterializationLedger) in one log entry. With a
// partition configured, the round first makes the resource's units follow
// the partition's nodes (nodes.go) and its unusable nodes and maintenance
// reservations unit windows (windows.go).
//
// Follower.Run repeats rounds while the process leads the cluster: the
// agent runs one Follower on every server and only the leader's acts, so
// exactly one bridge writes at a time and a deposed leader's record
// writes fail with not-leader (bridge/DESIGN.md).
//
// It must not: import the state machine, the cluster or the planner (it
// speaks the ledger's contract only); write a reservation without its
// prefix (the driver refuses it too); or keep state between rounds that
// decides what to write — every round reads everything again, so a round
// that failed half-way is repaired by the next.
package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Tenant is what a ledger tenant becomes in the resource manager: the
// users and accounts that may run jobs in its reservations. At least one
// of the lists must be non-empty.
type Tenant struct {
	Users    []string `json:"users"`
	Accounts []string `json:"accounts"`
}

// Config configures a Follower.
type Config struct {
	// Resource is the ledger resource with units that the resource
	// manager's partition backs; its unit names are node names.
	Resource string
	// Partition, if set, is the partition the resource follows: nodes
	// added to or removed from it are added to or removed from the
	// resource's units, and its unusable nodes (DOWN, DRAIN, ...) become
	// unit down windows in the ledger.
	Partition string
	// Prefix marks the reservations the bridge owns in the resource
	// manager ("ledgerd-"); it must be the driver's.
	Prefix string
	// Horizon: reservations that start later than now+Horizon are not
	// written yet. Default 7 days.
	Horizon time.Duration
	// Interval between rounds. Default 10 s.
	Interval time.Duration
	// RoundTimeout bounds one round, retries of an unreachable manager
	// included. Default 2 minutes.
	RoundTimeout time.Duration
	// Tenants maps ledger tenants (reservation owners) to users and
	// accounts; "*" is the mapping of every tenant not listed. A
	// reservation whose tenant has no mapping is not materialized and its
	// record says why.
	Tenants map[string]Tenant
	// Writer is the tenant the records are written as. Default "bridge".
	Writer string
}

// Defaults of Config.
const (
	DefaultHorizon  = 7 * 24 * time.Hour
	DefaultInterval = 10 * time.Second
	// MinInterval is the shortest Interval: each round runs scontrol and
	// sinfo, and a shorter one would keep forking them back to back.
	MinInterval         = 100 * time.Millisecond
	DefaultRoundTimeout = 2 * time.Minute
	// maxUpdates is the most records one log entry carries.
	maxUpdates = 1024
	// pageSize is the page of the desired-set read.
	pageSize = 1000
)

// Validate checks the configuration and fills in defaults; errors name
// the key.
func (c *Config) Validate() error {
	if c.Resource == "" {
		return errors.New("slurm_bridge.resource: must name the ledger resource the partition backs")
	}
	if err := bridge.ValidName(c.Prefix+"x", c.Prefix); err != nil {
		return fmt.Errorf("slurm_bridge.prefix: %w", err)
	}
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.RoundTimeout == 0 {
		c.RoundTimeout = DefaultRoundTimeout
	}
	if c.Writer == "" {
		c.Writer = "bridge"
	}
	switch {
	case c.Horizon < 0:
		return fmt.Errorf("slurm_bridge.horizon: %s must be > 0", c.Horizon)
	case c.Interval < MinInterval:
		return fmt.Errorf("slurm_bridge.interval: must be at least %s (each round runs scontrol and sinfo), got %s", MinInterval, c.Interval)
	case c.RoundTimeout < 0:
		return fmt.Errorf("slurm_bridge.round_timeout: %s must be > 0", c.RoundTimeout)
	}
	for _, name := range slices.Sorted(mapsKeys(c.Tenants)) {
		t := c.Tenants[name]
		if len(t.Users) == 0 && len(t.Accounts) == 0 {
			return fmt.Errorf("slurm_bridge.tenant_map[%q]: give users or accounts", name)
		}
		for _, n := range slices.Concat(t.Users, t.Accounts) {
			if n == "" || strings.ContainsAny(n, " ,=\t\n\"'[]") {
				return fmt.Errorf("slurm_bridge.tenant_map[%q]: %q is not a valid user or account name", name, n)
			}
		}
	}
	return nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Ledger is what the follower needs of the ledger.
type Ledger interface {
	List(ctx context.Context, q ledger.ListQuery) ([]*ledgerdv1.Reservation, string, error)
	Get(ctx context.Context, id string, stale bool) (*ledgerdv1.Reservation, error)
	Resources(ctx context.Context, stale bool) ([]*ledgerdv1.Resource, error)
	ledger.MaterializationLedger
}

// Follower runs the bridge's rounds for one resource. It is safe for
// concurrent use; rounds never overlap.
type Follower struct {
	cfg     Config
	l       Ledger
	d       bridge.Driver
	now     func() time.Time
	log     *slog.Logger
	metrics *Metrics
	// windows mirrors drained nodes and maintenance reservations as unit
	// windows, when the ledger supports them.
	windows UnitWindows
	// sets changes the resource's units to follow the partition's
	// nodes, when the ledger supports it.
	sets UnitSets

	mu sync.Mutex // one round at a time
}

// New returns a follower of cfg.Resource that writes through d. now is
// the clock (nil: time.Now); m may be nil.
func New(cfg Config, l Ledger, d bridge.Driver, now func() time.Time, log *slog.Logger, m *Metrics) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Follower{cfg: cfg, l: l, d: d, now: now, log: log, metrics: m}
	if uw, ok := l.(UnitWindows); ok {
		f.windows = uw
	}
	if us, ok := l.(UnitSets); ok {
		f.sets = us
	}
	return f, nil
}

// Report is what one round did.
type Report struct {
	// Plan is the core's plan for the round.
	Plan bridge.Plan
	// Results of the actions attempted.
	Results []bridge.Result
	// Statuses of every desired reservation, and the records written
	// (those that changed).
	Statuses []bridge.Status
	Written  []ledger.MaterializationUpdate
	// Converged: every planned action succeeded (or none was needed).
	Converged bool
	// WindowsAdded and WindowsEnded count the unit windows written for
	// unusable nodes and maintenance reservations; WindowsRefused are
	// those the ledger refused (they would overbook).
	WindowsAdded, WindowsEnded int
	WindowsRefused             []WindowRefusal
	// UnitsAdded and UnitsRemoved count the units the round added to and
	// removed from the resource to follow the partition's nodes;
	// UnitsRefused are the changes the ledger refused (a booking on a
	// removed node that cannot move), proposed again next round.
	UnitsAdded, UnitsRemoved int
	UnitsRefused             []UnitRefusal
}

// Round runs one round (see the package doc). An error means the round
// could not read the ledger or the manager, or not write the records;
// refusals of single reservations are not errors, they are records.
func (f *Follower) Round(ctx context.Context) (Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rep, err := f.round(ctx)
	f.metrics.observe(rep, err, f.now())
	return rep, err
}

func (f *Follower) round(ctx context.Context) (Report, error) {
	var rep Report
	now := f.now()
	res, err := f.resource(ctx)
	if err != nil {
		return rep, err
	}
	observed, err := f.d.Reservations(ctx)
	if err != nil {
		return rep, fmt.Errorf("bridge round: read the resource manager: %w", err)
	}
	var nodes []bridge.Node
	if f.cfg.Partition != "" {
		if nodes, err = f.d.Nodes(ctx, f.cfg.Partition); err != nil {
			return rep, fmt.Errorf("bridge round: read partition %s: %w", f.cfg.Partition, err)
		}
	}
	// Units first: a removed node's bookings move before the windows
	// and the desired set are computed.
	res, rep.UnitsAdded, rep.UnitsRemoved, rep.UnitsRefused, err = f.syncUnits(ctx, res, nodes)
	if err != nil {
		return rep, err
	}
	rep.WindowsAdded, rep.WindowsEnded, rep.WindowsRefused, err = f.syncWindows(ctx, res, wantedWindows(res, nodes, observed, f.cfg.Prefix, now))
	if err != nil {
		return rep, err
	}
	// Windows may have moved bookings to other units: read them after.
	desired, byName, failed, err := f.desired(ctx, now, res)
	if err != nil {
		return rep, err
	}
	rep.Plan = bridge.Reconcile(desired, observed, f.cfg.Prefix, now)
	for _, a := range rep.Plan.Actions {
		f.log.Info("bridge action", "action", a.String())
	}
	results, applyErr := bridge.Apply(ctx, f.d, rep.Plan.Actions)
	rep.Results = results
	for _, r := range results {
		if r.Err != nil {
			f.log.Warn("bridge action failed", "action", r.Action.String(), "err", r.Err)
		}
	}
	rep.Converged = applyErr == nil && !slices.ContainsFunc(results, func(r bridge.Result) bool { return r.Err != nil })
	rep.Statuses = append(bridge.Statuses(rep.Plan, results), failed...)
	slices.SortFunc(rep.Statuses, func(a, b bridge.Status) int { return strings.Compare(a.Name, b.Name) })
	for _, st := range rep.Statuses {
		w, ok := byName[st.Name]
		if !ok {
			continue
		}
		u := update(st, w)
		if !sameRecord(u, w.r.GetMaterialization()) {
			rep.Written = append(rep.Written, u)
		}
	}
	removed, err := f.removals(ctx, rep, byName)
	if err != nil {
		return rep, err
	}
	rep.Written = append(rep.Written, removed...)
	w := ledger.Write{Tenant: f.cfg.Writer, Operator: true}
	for chunk := range slices.Chunk(rep.Written, maxUpdates) {
		if err := f.l.SetMaterialization(ctx, w, chunk); err != nil {
			return rep, fmt.Errorf("bridge round: record materialization: %w", err)
		}
	}
	if applyErr != nil {
		return rep, fmt.Errorf("bridge round: %w", applyErr)
	}
	return rep, nil
}

// removals are the REMOVED records of reservations whose Slurm
// reservation the round deleted (or, with jobs still in it, ended about
// now: Result.Shortened) and that nobody wants there any more
// (cancelled, over, or otherwise not desired): only for reservations
// that have a record, so that `get` does not keep saying materialized.
func (f *Follower) removals(ctx context.Context, rep Report, byName map[string]wanted) ([]ledger.MaterializationUpdate, error) {
	var out []ledger.MaterializationUpdate
	for _, res := range rep.Results {
		a := res.Action
		if a.Op != bridge.OpDelete || res.Err != nil || !strings.HasPrefix(a.Name, f.cfg.Prefix) {
			continue
		}
		if _, desired := byName[a.Name]; desired {
			continue // deleted to be re-created, or now failed: its status says
		}
		id := strings.TrimPrefix(a.Name, f.cfg.Prefix)
		r, err := f.l.Get(ctx, id, false)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bridge round: read %s: %w", id, err)
		}
		m := r.GetMaterialization()
		if m == nil || m.GetState() == ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED {
			continue
		}
		why := strings.ToLower(strings.TrimPrefix(r.GetState().String(), "RESERVATION_STATE_"))
		msg := "deleted from the resource manager: the reservation is " + why + " (" + a.Why + ")"
		if res.Shortened {
			// Jobs still ran in it, so the manager would not delete it;
			// it ends there at Shorten.End and the manager drops it then.
			msg = "ended early in the resource manager at " + a.Shorten.End.UTC().Format(time.RFC3339) +
				": the reservation is " + why + " and jobs still ran in it, so it could not be deleted"
		}
		out = append(out, ledger.MaterializationUpdate{ID: id, Name: a.Name, State: ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED,
			Message: truncate(msg, 1024)})
	}
	return out, nil
}

// desired reads the reservations the manager should hold: committed and
// active on the resource, starting before now+horizon and ending after
// now. Reservations whose tenant has no mapping are left out and returned
// as failed statuses.
func (f *Follower) desired(ctx context.Context, now time.Time, res *ledgerdv1.Resource) ([]bridge.Spec, map[string]wanted, []bridge.Status, error) {
	q := ledger.ListQuery{
		Resource: f.cfg.Resource,
		States:   []ledgerdv1.ReservationState{ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED, ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE},
		From:     now.UnixMilli(),
		To:       now.Add(f.cfg.Horizon).UnixMilli(),
		Limit:    pageSize,
	}
	var (
		specs  []bridge.Spec
		failed []bridge.Status
		byName = map[string]wanted{}
	)
	for {
		page, next, err := f.l.List(ctx, q)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("bridge round: list reservations: %w", err)
		}
		for _, r := range page {
			start, end := r.GetStart().AsTime(), r.GetEnd().AsTime()
			if !start.Before(now.Add(f.cfg.Horizon)) || !end.After(now) {
				continue
			}
			name := f.cfg.Prefix + r.GetId()
			byName[name] = wanted{r: r}
			nodes := f.units(r, res)
			s, e, ok := bridge.Window(start.UnixMilli(), end.UnixMilli())
			if !ok {
				failed = append(failed, bridge.Status{Name: name, State: bridge.StateFailed, Message: "shorter than a whole second: the resource manager keeps seconds"})
				continue
			}
			t, ok := f.tenant(r.GetTenant())
			if !ok {
				failed = append(failed, bridge.Status{Name: name, State: bridge.StateFailed,
					Message: fmt.Sprintf("tenant %q has no mapping to Slurm users or accounts (slurm_bridge.tenant_map)", r.GetTenant())})
				continue
			}
			spec := bridge.Spec{Name: name, Nodes: nodes, Start: s, End: e, Users: t.Users, Accounts: t.Accounts}
			specs = append(specs, spec)
			byName[name] = wanted{r: r, spec: spec}
		}
		if next == "" {
			break
		}
		q.PageToken = next
	}
	return specs, byName, failed, nil
}

// resource reads the followed resource (a linearizable read).
func (f *Follower) resource(ctx context.Context) (*ledgerdv1.Resource, error) {
	all, err := f.l.Resources(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("bridge round: read resources: %w", err)
	}
	i := slices.IndexFunc(all, func(r *ledgerdv1.Resource) bool { return r.GetName() == f.cfg.Resource })
	if i < 0 {
		return nil, fmt.Errorf("bridge round: resource %q: %w (create it with nodes, or import the partition)", f.cfg.Resource, ledger.ErrNotFound)
	}
	res := all[i]
	if len(res.GetUnits()) == 0 {
		return nil, fmt.Errorf("bridge round: resource %q has no units (create it with nodes, or import the partition)", f.cfg.Resource)
	}
	return res, nil
}

// units returns the units r holds on the followed resource: Reservation
// .units lists every part's units in the order of the parts, each part on
// a resource with units contributing its amount of them.
func (f *Follower) units(r *ledgerdv1.Reservation, res *ledgerdv1.Resource) []string {
	all := r.GetUnits()
	own := map[string]bool{}
	for _, u := range res.GetUnits() {
		own[u] = true
	}
	var out []string
	for _, u := range all {
		// Unit names of other resources may coincide only if a
		// reservation co-allocates two unit resources with shared
		// names; the followed resource's names are the nodes.
		if own[u] {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (f *Follower) tenant(name string) (Tenant, bool) {
	if t, ok := f.cfg.Tenants[name]; ok {
		return t, true
	}
	t, ok := f.cfg.Tenants["*"]
	return t, ok
}

// wanted is a reservation of the round and, when it was desired, its spec.
type wanted struct {
	r    *ledgerdv1.Reservation
	spec bridge.Spec
}

// update is the record a status stands for.
func update(st bridge.Status, w wanted) ledger.MaterializationUpdate {
	u := ledger.MaterializationUpdate{ID: w.r.GetId(), Name: st.Name, Message: truncate(st.Message, 1024)}
	switch st.State {
	case bridge.StateMaterialized:
		u.State = ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED
		u.Units = w.spec.Nodes
		u.Start, u.End = w.spec.Start.UnixMilli(), w.spec.End.UnixMilli()
	case bridge.StateFailed:
		u.State = ledgerdv1.MaterializationState_MATERIALIZATION_STATE_FAILED
	default:
		u.State = ledgerdv1.MaterializationState_MATERIALIZATION_STATE_PENDING
	}
	return u
}

// sameRecord reports whether the stored record m already says u.
func sameRecord(u ledger.MaterializationUpdate, m *ledgerdv1.Materialization) bool {
	if m == nil || m.GetState() != u.State || m.GetMessage() != u.Message || m.GetName() != u.Name || !slices.Equal(m.GetUnits(), u.Units) {
		return false
	}
	var s, e int64
	if m.GetEnd() != nil {
		s, e = m.GetStart().AsTime().UnixMilli(), m.GetEnd().AsTime().UnixMilli()
	}
	return s == u.Start && e == u.End
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut]
}

// Run runs rounds every Interval while leading() reports true, until ctx
// ends. A round's failure is logged and counted; the next round retries.
func (f *Follower) Run(ctx context.Context, leading func() bool) {
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		if leading() {
			rctx, cancel := context.WithTimeout(ctx, f.cfg.RoundTimeout)
			rep, err := f.Round(rctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				f.log.Warn("bridge round failed", "err", err)
			} else if len(rep.Plan.Actions) > 0 || len(rep.Written) > 0 {
				f.log.Info("bridge round", "actions", len(rep.Plan.Actions), "records", len(rep.Written), "converged", rep.Converged)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
