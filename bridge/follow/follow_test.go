package follow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/fsm"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/ledger/replicated"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// localLog applies commands to one FSM at the test's clock.
type localLog struct {
	mu    sync.Mutex
	f     *fsm.FSM
	now   *time.Time
	index uint64
}

func (l *localLog) Apply(_ context.Context, b []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	stamped, err := fsm.Stamp(b, l.now.UnixMilli())
	if err != nil {
		return nil, err
	}
	l.index++
	return l.f.ApplyCommand(l.index, stamped), nil
}

func (l *localLog) ReadBarrier(context.Context) error { return nil }

// model is an in-memory resource manager: it refuses a reservation that
// overlaps another on a node, like Slurm, and can be made unreachable.
type model struct {
	prefix string
	held   map[string]bridge.Reservation
	nodes  []bridge.Node
	down   bool
	writes int
}

func (m *model) Nodes(context.Context, string) ([]bridge.Node, error) { return m.nodes, nil }

func (m *model) Reservations(context.Context) ([]bridge.Reservation, error) {
	if m.down {
		return nil, &bridge.Error{Op: "show", Kind: bridge.ErrUnavailable, Message: "Unable to contact slurm controller"}
	}
	var out []bridge.Reservation
	for _, n := range slices.Sorted(mapKeys(m.held)) {
		out = append(out, m.held[n])
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) { return mapsKeys(m) }

func (m *model) overlaps(s bridge.Spec, except string) string {
	for _, n := range slices.Sorted(mapKeys(m.held)) {
		r := m.held[n]
		if n == except || !s.Start.Before(r.End) || !r.Start.Before(s.End) {
			continue
		}
		for _, node := range s.Nodes {
			if slices.Contains(r.Nodes, node) {
				return n
			}
		}
	}
	return ""
}

func (m *model) Create(_ context.Context, s bridge.Spec) error {
	if m.down {
		return &bridge.Error{Op: "create", Name: s.Name, Kind: bridge.ErrUnavailable}
	}
	if !bridge.Owns(m.prefix, s.Name) {
		return &bridge.Error{Op: "create", Name: s.Name, Kind: bridge.ErrNotOwned}
	}
	if o := m.overlaps(s, ""); o != "" {
		return &bridge.Error{Op: "create", Name: s.Name, Kind: bridge.ErrOverlap, Message: "Requested reservation overlaps with another reservation"}
	}
	m.writes++
	s = s.Normalize()
	m.held[s.Name] = bridge.Reservation{Name: s.Name, Nodes: s.Nodes, Start: s.Start, End: s.End, Users: s.Users, Accounts: s.Accounts}
	return nil
}

func (m *model) Update(_ context.Context, want bridge.Spec, have bridge.Reservation) error {
	if m.down {
		return &bridge.Error{Op: "update", Name: want.Name, Kind: bridge.ErrUnavailable}
	}
	if o := m.overlaps(want, want.Name); o != "" {
		return &bridge.Error{Op: "update", Name: want.Name, Kind: bridge.ErrOverlap, Message: "Requested reservation overlaps with another reservation"}
	}
	m.writes++
	w := want.Normalize()
	r := m.held[want.Name]
	r.Nodes, r.Start, r.End, r.Users, r.Accounts = w.Nodes, w.Start, w.End, w.Users, w.Accounts
	m.held[want.Name] = r
	return nil
}

func (m *model) Delete(_ context.Context, name string) error {
	if m.down {
		return &bridge.Error{Op: "delete", Name: name, Kind: bridge.ErrUnavailable}
	}
	if _, ok := m.held[name]; !ok {
		return &bridge.Error{Op: "delete", Name: name, Kind: bridge.ErrUnknownReservation}
	}
	m.writes++
	delete(m.held, name)
	return nil
}

type world struct {
	t   *testing.T
	now time.Time
	l   *replicated.Ledger
	d   *model
	f   *Follower
	reg *prometheus.Registry
}

const prefix = "ledgerd-"

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, now: time.Date(2027, 1, 15, 10, 0, 0, 0, time.UTC), d: &model{prefix: prefix, held: map[string]bridge.Reservation{}}}
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w.l = replicated.New(&localLog{f: f, now: &w.now}, f)
	ctx := context.Background()
	if _, err := w.l.CreateResource(ctx, ledger.Write{Tenant: "ops", Operator: true}, &ledgerdv1.Resource{Name: "batch", Unit: "nodes", Units: []string{"n1", "n2", "n3", "n4"}}); err != nil {
		t.Fatal(err)
	}
	w.reg = prometheus.NewRegistry()
	clock := func() time.Time { return w.now }
	w.f, err = New(Config{Resource: "batch", Prefix: prefix, Horizon: 24 * time.Hour,
		Tenants: map[string]Tenant{"alice": {Users: []string{"alice"}}, "carol": {Accounts: []string{"physics"}}}},
		w.l, w.d, clock, nil, NewMetrics(w.reg, clock))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// book reserves amount nodes for tenant at now+in for dur.
func (w *world) book(tenant string, amount int64, in, dur time.Duration) *ledgerdv1.Reservation {
	w.t.Helper()
	start := w.now.Add(in).UnixMilli()
	r, _, err := w.l.Hold(context.Background(), ledger.HoldArgs{Write: ledger.Write{Tenant: tenant}, Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "batch", Amount: amount}}, Duration: dur.Milliseconds(), NotBefore: start, Deadline: start + dur.Milliseconds()}})
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) round() Report {
	w.t.Helper()
	rep, err := w.f.Round(context.Background())
	if err != nil {
		w.t.Fatalf("round: %v", err)
	}
	return rep
}

func (w *world) record(id string) *ledgerdv1.Materialization {
	w.t.Helper()
	r, err := w.l.Get(context.Background(), id, false)
	if err != nil {
		w.t.Fatal(err)
	}
	return r.GetMaterialization()
}

// checkHeld checks that the manager holds exactly the named reservations
// with their ledger units and windows.
func (w *world) checkHeld(ids ...string) {
	w.t.Helper()
	var want []string
	for _, id := range ids {
		r, err := w.l.Get(context.Background(), id, false)
		if err != nil {
			w.t.Fatal(err)
		}
		units := slices.Sorted(slices.Values(r.GetUnits()))
		h, ok := w.d.held[prefix+id]
		if !ok {
			w.t.Errorf("%s is not in the manager", id)
			continue
		}
		if !slices.Equal(h.Nodes, units) || !h.Start.Equal(r.GetStart().AsTime()) || !h.End.Equal(r.GetEnd().AsTime()) {
			w.t.Errorf("%s held as %v %s–%s, ledger %v %s–%s", id, h.Nodes, h.Start, h.End, units, r.GetStart().AsTime(), r.GetEnd().AsTime())
		}
		want = append(want, prefix+id)
	}
	var got []string
	for n := range w.d.held {
		if strings.HasPrefix(n, prefix) {
			got = append(got, n)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		w.t.Errorf("manager holds %v, want %v", got, want)
	}
}

const (
	stMaterialized = ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED
	stFailed       = ledgerdv1.MaterializationState_MATERIALIZATION_STATE_FAILED
	stPending      = ledgerdv1.MaterializationState_MATERIALIZATION_STATE_PENDING
)

// TestRounds walks the bridge through a life: materialize, converge
// without writes, refuse an unmapped tenant and a reservation that a
// hand-made one overlaps, leave the future beyond the horizon alone,
// wait while the manager is down, delete what was cancelled.
func TestRounds(t *testing.T) {
	w := newWorld(t)
	a := w.book("alice", 2, time.Hour, time.Hour)
	b := w.book("bob", 1, time.Hour, time.Hour)
	c := w.book("carol", 1, 48*time.Hour, time.Hour) // beyond the horizon
	rep := w.round()
	if !rep.Converged || len(rep.Written) != 2 {
		t.Fatalf("first round: converged %v, records %+v", rep.Converged, rep.Written)
	}
	w.checkHeld(a.GetId())
	if m := w.record(a.GetId()); m.GetState() != stMaterialized || m.GetName() != prefix+a.GetId() || len(m.GetUnits()) != 2 {
		t.Errorf("alice's record %v", m)
	}
	if m := w.record(b.GetId()); m.GetState() != stFailed || !strings.Contains(m.GetMessage(), `tenant "bob" has no mapping`) {
		t.Errorf("bob's record %v", m)
	}
	if m := w.record(c.GetId()); m != nil {
		t.Errorf("a reservation beyond the horizon has a record: %v", m)
	}
	if got := value(w.f.metrics.states.WithLabelValues("materialized")); got != 1 {
		t.Errorf("materialized gauge %v", got)
	}

	// A converged round writes nothing, to the manager or the log.
	writes := w.d.writes
	if rep := w.round(); len(rep.Plan.Actions) != 0 || len(rep.Written) != 0 || w.d.writes != writes {
		t.Fatalf("second round: %d actions, %d records", len(rep.Plan.Actions), len(rep.Written))
	}

	// A hand-made reservation takes every node where carol's will be;
	// once carol's is within the horizon it fails with the reason.
	w.d.held["maint"] = bridge.Reservation{Name: "maint", Nodes: []string{"n1", "n2", "n3", "n4"},
		Start: w.now.Add(48 * time.Hour), End: w.now.Add(50 * time.Hour), Users: []string{"root"}}
	w.now = w.now.Add(30 * time.Hour)
	w.round()
	if m := w.record(c.GetId()); m.GetState() != stFailed || !strings.Contains(m.GetMessage(), "maint") {
		t.Errorf("carol's record with a hand-made reservation in the way: %v", m)
	}
	if _, ok := w.d.held["maint"]; !ok {
		t.Error("the hand-made reservation was touched")
	}
	delete(w.d.held, "maint")

	// The manager down: new reservations wait as pending.
	d := w.book("alice", 1, time.Hour, time.Hour)
	w.d.down = true
	if _, err := w.f.Round(context.Background()); !errors.Is(err, bridge.ErrUnavailable) {
		t.Fatalf("round with the manager down: %v", err)
	}
	if got := value(w.f.metrics.rounds.WithLabelValues("error")); got != 1 {
		t.Errorf("error rounds %v", got)
	}
	w.d.down = false
	w.round()
	if m := w.record(d.GetId()); m.GetState() != stMaterialized {
		t.Errorf("after the manager came back: %v", m)
	}
	if m := w.record(c.GetId()); m.GetState() != stMaterialized {
		t.Errorf("carol's once the hand-made one is gone: %v", m)
	}
	// alice's first reservation is over by now: only d and c are held.
	w.checkHeld(d.GetId(), c.GetId())

	// Cancelled: deleted from the manager.
	if _, err := w.l.Cancel(context.Background(), ledger.Write{Tenant: "alice"}, d.GetId()); err != nil {
		t.Fatal(err)
	}
	w.round()
	w.checkHeld(c.GetId())
	if m := w.record(d.GetId()); m.GetState() != ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED || !strings.Contains(m.GetMessage(), "cancelled") {
		t.Errorf("cancelled reservation's record: %v", m)
	}
	if got := value(w.f.metrics.drift.WithLabelValues("orphan")); got != 1 {
		t.Errorf("orphan drift %v, want 1 (the cancelled reservation)", got)
	}
}

// TestPinnedOnceMaterialized: the record pins the units, so a booking the
// manager holds is never moved to other nodes by a later admission (the
// state machine's tests force the move; here the whole path runs).
func TestPinnedOnceMaterialized(t *testing.T) {
	w := newWorld(t)
	// Fill two nodes in one hour and two in the next, then ask for one
	// node over both hours: only a move could make room.
	var ids []string
	for _, in := range []time.Duration{time.Hour, time.Hour, 2 * time.Hour, 2 * time.Hour} {
		ids = append(ids, w.book("alice", 1, in, time.Hour).GetId())
	}
	w.round()
	before := map[string][]string{}
	for _, id := range ids {
		r, _ := w.l.Get(context.Background(), id, false)
		before[id] = r.GetUnits()
	}
	start := w.now.Add(time.Hour).UnixMilli()
	extra, _, err := w.l.Hold(context.Background(), ledger.HoldArgs{Write: ledger.Write{Tenant: "alice"}, Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "batch", Amount: 1}}, Duration: 2 * time.Hour.Milliseconds(), NotBefore: start, Deadline: start + 2*time.Hour.Milliseconds()}})
	for _, id := range ids {
		r, _ := w.l.Get(context.Background(), id, false)
		if !slices.Equal(r.GetUnits(), before[id]) {
			t.Errorf("%s moved from %v to %v after it was materialized (admission: %v)", id, before[id], r.GetUnits(), err)
		}
	}
	if err == nil {
		ids = append(ids, extra.GetId())
	}
	w.round()
	w.checkHeld(ids...)
}

// TestConfigValidate: bad configuration is refused naming the key.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Prefix: "x-"}, "slurm_bridge.resource"},
		{Config{Resource: "r"}, "slurm_bridge.prefix"},
		{Config{Resource: "r", Prefix: "a b"}, "slurm_bridge.prefix"},
		{Config{Resource: "r", Prefix: "p-", Horizon: -1}, "slurm_bridge.horizon"},
		{Config{Resource: "r", Prefix: "p-", Tenants: map[string]Tenant{"t": {}}}, `slurm_bridge.tenant_map["t"]`},
		{Config{Resource: "r", Prefix: "p-", Tenants: map[string]Tenant{"t": {Users: []string{"a,b"}}}}, `slurm_bridge.tenant_map["t"]`},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	ok := Config{Resource: "r", Prefix: "p-"}
	if err := ok.Validate(); err != nil || ok.Horizon != DefaultHorizon || ok.Interval != DefaultInterval {
		t.Errorf("defaults: %v %+v", err, ok)
	}
}

// value reads a gauge or counter.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Gauge != nil {
		return d.GetGauge().GetValue()
	}
	return d.GetCounter().GetValue()
}

// TestUnitWindows: an unusable node becomes a unit window until it is
// usable again; a hand-made MAINT reservation becomes a window over its
// nodes until it is gone; a window over a materialized (pinned) booking is
// refused and reported, and the booking stays where Slurm has it.
func TestUnitWindows(t *testing.T) {
	w := newWorld(t)
	w.f.cfg.Partition = "debug"
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		w.d.nodes = append(w.d.nodes, bridge.Node{Name: n, State: "idle"})
	}
	setState := func(node, state string, flags ...string) {
		for i := range w.d.nodes {
			if w.d.nodes[i].Name == node {
				w.d.nodes[i].State, w.d.nodes[i].Flags = state, flags
			}
		}
	}
	downs := func() []string {
		rs, err := w.l.Resources(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range rs[0].GetUnitDowns() {
			ids = append(ids, d.GetId())
		}
		return ids
	}
	r := w.book("alice", 1, time.Hour, time.Hour)
	w.round()
	held := w.record(r.GetId()).GetUnits()[0]
	other := "n1"
	if held == "n1" {
		other = "n2"
	}

	setState(held, "idle", "drain")
	setState(other, "down")
	rep := w.round()
	if rep.WindowsAdded != 1 || len(rep.WindowsRefused) != 1 || rep.WindowsRefused[0].Unit != held {
		t.Fatalf("added %d, refused %+v; want the window over %s refused, the one over %s added", rep.WindowsAdded, rep.WindowsRefused, held, other)
	}
	if got := downs(); !slices.Equal(got, []string{"slurm-node." + other}) {
		t.Errorf("windows %v", got)
	}
	if m := w.record(r.GetId()); m.GetUnits()[0] != held || m.GetState() != stMaterialized {
		t.Errorf("the materialized booking moved or changed: %v", m)
	}
	if got := value(w.f.metrics.windows.WithLabelValues("refused")); got != 1 {
		t.Errorf("refused windows %v", got)
	}

	setState(held, "idle")
	setState(other, "idle")
	if rep := w.round(); rep.WindowsEnded != 1 || len(downs()) != 0 {
		t.Fatalf("after resume: ended %d, windows %v", rep.WindowsEnded, downs())
	}

	w.d.held["maint"] = bridge.Reservation{Name: "maint", Nodes: []string{other}, Flags: []string{"MAINT"},
		Start: w.now.Add(3 * time.Hour), End: w.now.Add(4 * time.Hour), Users: []string{"root"}}
	w.round()
	if got := downs(); !slices.Equal(got, []string{"slurm-maint.maint." + other}) {
		t.Errorf("windows with a MAINT reservation: %v", got)
	}
	// Booking every node over the maintenance window is refused: the
	// unit is out of service there.
	start := w.now.Add(3 * time.Hour).UnixMilli()
	if _, _, err := w.l.Hold(context.Background(), ledger.HoldArgs{Write: ledger.Write{Tenant: "alice"}, Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "batch", Amount: 4}}, Duration: 1000, NotBefore: start, Deadline: start + 1000}}); err == nil {
		t.Error("four nodes booked during a maintenance window on one of them")
	}
	delete(w.d.held, "maint")
	if rep := w.round(); rep.WindowsEnded != 1 || len(downs()) != 0 {
		t.Errorf("after the MAINT reservation is gone: ended %d, windows %v", rep.WindowsEnded, downs())
	}
}

// TestRunActsOnlyWhileLeading: Run ticks every Interval and runs a round
// only while leading() is true (in a synctest bubble: fake time, no
// sleeps), and returns when its context ends.
func TestRunActsOnlyWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.book("alice", 1, time.Hour, time.Hour)
		var leading atomic.Bool
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.f.Run(ctx, leading.Load)
		}()
		time.Sleep(10 * DefaultInterval) // fake time: ten ticks pass at once
		synctest.Wait()
		if w.d.writes != 0 || len(w.d.held) != 0 {
			t.Fatalf("a follower wrote %d times", w.d.writes)
		}
		leading.Store(true)
		time.Sleep(DefaultInterval)
		synctest.Wait()
		if len(w.d.held) != 1 {
			t.Fatalf("the leader's round held %d reservations, want 1", len(w.d.held))
		}
		cancel()
		<-done
	})
}

// TestModifyUpdatesSlurm: a committed modification of a materialized
// reservation (other start, more nodes) is written as an update of the
// same Slurm reservation and recorded with the new nodes and window.
func TestModifyUpdatesSlurm(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	r := w.book("alice", 1, time.Hour, time.Hour)
	w.round()
	before := w.record(r.GetId())
	start := w.now.Add(3 * time.Hour).UnixMilli()
	if _, err := w.l.Modify(ctx, ledger.ModifyArgs{Write: ledger.Write{Tenant: "alice"}, ID: r.GetId(), Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "batch", Amount: 3}}, Duration: time.Hour.Milliseconds(), NotBefore: start, Deadline: start + time.Hour.Milliseconds()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.l.Commit(ctx, ledger.Write{Tenant: "alice"}, r.GetId()); err != nil {
		t.Fatal(err)
	}
	writes := w.d.writes
	rep := w.round()
	if len(rep.Plan.Actions) != 1 || rep.Plan.Actions[0].Op != bridge.OpUpdate || w.d.writes != writes+1 {
		t.Fatalf("plan after the modification: %v", rep.Plan.Actions)
	}
	w.checkHeld(r.GetId())
	after := w.record(r.GetId())
	if len(after.GetUnits()) != 3 || after.GetStart().AsTime().UnixMilli() != start || after.GetVersion() <= before.GetVersion() {
		t.Errorf("record after the modification: %v (before %v)", after, before)
	}
}
