package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// ---- builders ----

func createUnits(name string, pol fsmv1.UnitPolicy, units ...string) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "op",
		Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: name, Unit: "nodes", Units: units, UnitPolicy: pol}}}
}

func unitDown(res, unit, id string, from, to int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_UNIT_DOWN, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_UnitDown{UnitDown: &fsmv1.UnitDown{Resource: res, Unit: unit, FromMillis: from, ToMillis: to, Id: id}}}
}

func unitUp(res, id string) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_UNIT_UP, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_UnitUp{UnitUp: &fsmv1.UnitUp{Resource: res, Id: id}}}
}

func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// unitsOf returns the units a row holds on resource.
func unitsOf(r *fsmv1.Reservation, resource string) []string {
	for _, p := range r.GetParts() {
		if p.GetResource() == resource {
			return p.GetUnits()
		}
	}
	return nil
}

// ---- invariants ----

// checkUnitMapping checks the unit mapping of every live row against the rows
// themselves (no unit held by two overlapping bookings, every part on a
// resource with units names exactly amount distinct known units, free of
// down windows) and against the unit schedules, and returns the number of
// down windows booked in the count planner (for checkInvariants).
func checkUnitMapping(t testing.TB, s *state, rows map[string]*fsmv1.Reservation) int {
	t.Helper()
	if len(s.units) == 0 {
		return 0
	}
	type span struct {
		key        string
		start, end int64
	}
	held := map[string][]span{} // resource/unit -> spans
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range rows {
			if !yield(id) {
				return
			}
		}
	})
	nbooks := map[string]int{}
	for _, id := range ids {
		r := rows[id]
		switch r.GetState() {
		case HELD, COMMITTED, ACTIVE, DEGRADED:
		default:
			continue
		}
		add := func(key string, parts []*fsmv1.Part, start, end int64) {
			for _, p := range parts {
				us := s.units[p.GetResource()]
				if us == nil {
					if len(p.GetUnits()) > 0 {
						t.Fatalf("%s: units %v on %q, which has none", key, p.GetUnits(), p.GetResource())
					}
					continue
				}
				if int64(len(p.GetUnits())) != p.GetAmount() {
					t.Fatalf("%s: %d units %v for amount %d on %q", key, len(p.GetUnits()), p.GetUnits(), p.GetAmount(), p.GetResource())
				}
				b, ok := us.Get(key)
				if !ok || !slices.Equal(b.Units, p.GetUnits()) || b.Start != start || b.End != end {
					t.Fatalf("%s on %q: row says %v [%d,%d), schedule %v (%v)", key, p.GetResource(), p.GetUnits(), start, end, b, ok)
				}
				nbooks[p.GetResource()]++
				for _, u := range p.GetUnits() {
					k := p.GetResource() + "/" + u
					held[k] = append(held[k], span{key, start, end})
				}
			}
		}
		add(id, r.GetParts(), r.GetStartMillis(), r.GetEndMillis())
		if p := r.GetPending(); p != nil {
			add(modKey(id), p.GetParts(), p.GetStartMillis(), p.GetEndMillis())
		}
	}
	downs := 0
	for name, us := range s.units {
		if us.Len() != nbooks[name] {
			t.Fatalf("unit schedule of %q holds %d bookings, rows %d", name, us.Len(), nbooks[name])
		}
		res := s.resources[name]
		for _, d := range us.Downs() {
			downs++
			if _, ok := s.plan.Get(downKey(name, d.ID)); !ok {
				t.Fatalf("down window %s of %q not booked in the count planner", d.ID, name)
			}
			found := false
			for _, rd := range res.GetUnitDowns() {
				found = found || rd.GetId() == d.ID && rd.GetUnit() == d.Unit && rd.GetToMillis() == d.To
			}
			if !found {
				t.Fatalf("down window %v of %q not on the resource row %v", d, name, res.GetUnitDowns())
			}
			k := name + "/" + d.Unit
			held[k] = append(held[k], span{"down " + d.ID, max(d.From, s.now), d.To})
		}
	}
	// No unit is mapped to two overlapping bookings (or a booking and a
	// down window): the invariant the resource manager relies on.
	for k, spans := range held {
		slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
		for i := 1; i < len(spans); i++ {
			if spans[i].start < spans[i-1].end && spans[i-1].end > s.now {
				t.Fatalf("unit %s held by %s [%d,%d) and %s [%d,%d)", k,
					spans[i-1].key, spans[i-1].start, spans[i-1].end, spans[i].key, spans[i].start, spans[i].end)
			}
		}
	}
	return downs
}

// ---- behaviour ----

// TestUnitsHardCase is the hard case through the FSM: capacity 2,
// A on one unit over [0,1), B on the other over [2,3), C wants one unit
// over [0,3). REFUSE refuses it as unmappable with the earliest start
// that maps; REMAP moves B (which has not started) and admits C, with an
// event for the move.
func TestUnitsHardCase(t *testing.T) {
	for _, pol := range []fsmv1.UnitPolicy{fsmv1.UnitPolicy_UNIT_POLICY_REFUSE, fsmv1.UnitPolicy_UNIT_POLICY_REMAP} {
		t.Run(pol.String(), func(t *testing.T) {
			h := newHarness(t, Config{})
			h.must(10, OK, createUnits("pair", pol, "a", "b"))
			// A runs over [100,1100) on one unit.
			h.must(10, OK, reserve("A", "pair", 1, 1000, withStart(100)))
			ra, _ := h.f.Get("A")
			// B over [3000,4000) on the other: best fit would put it on
			// A's unit, so a placeholder X takes that one first and
			// leaves again.
			h.must(10, OK, reserve("X", "pair", 1, 1000, withStart(3000)))
			h.must(10, OK, reserve("B", "pair", 1, 1000, withStart(3000)))
			h.must(10, OK, cancel("X"))
			rb, _ := h.f.Get("B")
			if slices.Equal(unitsOf(ra, "pair"), unitsOf(rb, "pair")) {
				t.Fatalf("A and B on the same unit: %v %v", ra, rb)
			}
			// At 500 A is running; C wants one unit for 3000 starting
			// in [500,1000]: one unit is free in sum all along, but no
			// unit is free for the whole window.
			res := h.apply(500, reserve("C", "pair", 1, 3000, withWindow(500, 4000)))
			if pol == fsmv1.UnitPolicy_UNIT_POLICY_REFUSE {
				if res.GetStatus() != REJECTED || !res.GetRejected().GetUnmappable() {
					t.Fatalf("REFUSE: %v, want an unmappable rejection", res)
				}
				if !strings.Contains(res.GetMessage(), "no set of units is free for the whole window") {
					t.Errorf("message %q does not say why", res.GetMessage())
				}
				if !res.GetRejected().GetLaterOk() || res.GetRejected().GetLaterStartMillis() != 1100 {
					t.Errorf("earliest start that maps: %v, want 1100", res.GetRejected())
				}
				// A modification whose start the state machine picks
				// takes the earliest start that maps, not the count's.
				m := modify("B", []*fsmv1.Part{part("pair", 1)}, nil, nil)
				m.GetModify().WindowDurationMillis, m.GetModify().NotBeforeMillis, m.GetModify().DeadlineMillis = 3000, 500, 5000
				mod := h.must(500, OK, m).GetReservation().GetPending()
				if mod.GetStartMillis() != 1100 || !slices.Equal(mod.GetParts()[0].GetUnits(), unitsOf(ra, "pair")) {
					t.Errorf("modification in a window: %v, want start 1100 on %v", mod, unitsOf(ra, "pair"))
				}
				checkUnitMapping(t, h.f.st, allRows(t, h.f.st))
				return
			}
			if res.GetStatus() != OK {
				t.Fatalf("REMAP: %v", res)
			}
			c := res.GetReservation()
			b2, _ := h.f.Get("B")
			if !slices.Equal(unitsOf(b2, "pair"), unitsOf(ra, "pair")) {
				t.Errorf("B on %v, want moved to A's unit %v", unitsOf(b2, "pair"), unitsOf(ra, "pair"))
			}
			if !slices.Equal(unitsOf(c, "pair"), unitsOf(rb, "pair")) {
				t.Errorf("C got %v, want B's old unit %v", unitsOf(c, "pair"), unitsOf(rb, "pair"))
			}
			if a2, _ := h.f.Get("A"); !slices.Equal(unitsOf(a2, "pair"), unitsOf(ra, "pair")) {
				t.Errorf("running A moved: %v", a2)
			}
			var remapped []string
			for _, e := range h.f.History(0, 0) {
				if e.GetType() == fsmv1.Event_TYPE_UNITS_REMAPPED {
					remapped = append(remapped, e.GetReservation().GetId())
				}
			}
			if !slices.Equal(remapped, []string{"B"}) {
				t.Errorf("remap events for %v, want [B]", remapped)
			}
			checkUnitMapping(t, h.f.st, allRows(t, h.f.st))
		})
	}
}

// TestUnitsLifecycle walks one resource with units through hold, commit,
// modify (held, committed), early completion, a down window that re-maps
// a booking, one refused because the booking runs, and the end of a
// window; the invariants hold after every step and a snapshot restores to
// the same bytes.
func TestUnitsLifecycle(t *testing.T) {
	h := newHarness(t, Config{})
	step := func(now int64, want fsmv1.Result_Status, cmd *fsmv1.Command) *fsmv1.Result {
		t.Helper()
		res := h.must(now, want, cmd)
		checkInvariants(t, h.f)
		snap := snapshotBytes(t, h.f)
		g, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("restore: %v", err)
		}
		if again := snapshotBytes(t, g); !bytes.Equal(again, snap) {
			t.Fatal("snapshot→restore→snapshot changed the bytes")
		}
		checkInvariants(t, g)
		return res
	}
	step(0, OK, createUnits("batch", 0, nodeNames(4)...))
	r := step(0, OK, hold("h", "batch", 2, 100, withStart(1000), withTTL(5000))).GetReservation()
	if got := unitsOf(r, "batch"); len(got) != 2 {
		t.Fatalf("hold got units %v", got)
	}
	step(10, OK, commit("h"))
	step(10, OK, reserve("r", "batch", 4, 100, withStart(2000)))
	// Amount beyond the units is a field error naming the amount.
	if res := step(10, INVALID, reserve("big", "batch", 5, 100)); res.GetInvalid().GetField() != "request.parts[0].amount" {
		t.Errorf("too many units: field %q", res.GetInvalid().GetField())
	}
	m := step(20, OK, modify("h", []*fsmv1.Part{part("batch", 3)}, proto.Int64(1500), proto.Int64(1600))).GetReservation()
	if got := m.GetPending().GetParts()[0].GetUnits(); len(got) != 3 {
		t.Fatalf("pending modification units %v", got)
	}
	step(30, OK, commit("h"))
	if r, _ := h.f.Get("h"); len(unitsOf(r, "batch")) != 3 || r.GetStartMillis() != 1500 {
		t.Fatalf("after the committed modification: %v", r)
	}
	// A down window over h's units moves h to the spare unit.
	h1, _ := h.f.Get("h")
	down := step(40, OK, unitDown("batch", unitsOf(h1, "batch")[0], "maint", 1400, 1700)).GetResource()
	if len(down.GetUnitDowns()) != 1 {
		t.Fatalf("resource after down: %v", down)
	}
	h2, _ := h.f.Get("h")
	if slices.Contains(unitsOf(h2, "batch"), unitsOf(h1, "batch")[0]) {
		t.Fatalf("h still on the downed unit: %v", h2)
	}
	// r needs all four units: a window over any of them is refused and
	// names r.
	res := step(50, CONFLICT, unitDown("batch", "n1", "", 1900, 2100))
	if !slices.Equal(res.GetConflict().GetViolatedIds(), []string{"r"}) {
		t.Errorf("refused window names %v, want [r]", res.GetConflict().GetViolatedIds())
	}
	// A second window over the same unit and time is refused as such.
	if res := step(55, CONFLICT, unitDown("batch", unitsOf(h1, "batch")[0], "", 1500, 1600)); res.GetConflict().GetKind() != fsmv1.Conflict_KIND_WRONG_STATE ||
		!strings.Contains(res.GetMessage(), "already down") {
		t.Errorf("overlapping down window: %v", res)
	}
	// While maint holds a unit, a four-unit request cannot start then.
	big := step(60, OK, reserve("w", "batch", 4, 100, withWindow(1450, 5000))).GetReservation()
	if big.GetStartMillis() < 1700 {
		t.Errorf("four units booked at %d while a unit is down until 1700", big.GetStartMillis())
	}
	step(70, OK, unitUp("batch", "maint"))
	step(80, NOTFOUND, unitUp("batch", "maint"))
	// Early completion gives back the rest on the units too.
	step(1550, OK, complete("h", proto.Int64(1560)))
	step(1560, OK, tick())
	step(1561, OK, reserve("after", "batch", 4, 30, withStart(1561)))
	// Resources with units refuse what they do not support.
	if res := step(1600, INVALID, updateRes("batch", 3, nil, nil)); res.GetInvalid().GetField() != "update_resource.name" {
		t.Errorf("capacity update: %v", res.GetInvalid())
	}
	if res := step(1600, INVALID, setPolicy("batch", spec(RELAXED, 0, 0))); res.GetInvalid().GetField() != "set_policy.policy" {
		t.Errorf("set policy: %v", res.GetInvalid())
	}
	step(1600, OK, &fsmv1.Command{Type: fsmv1.Command_TYPE_DELETE_RESOURCE, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: "batch", Force: true}}})
	if len(h.f.st.units) != 0 {
		t.Error("unit schedule survived the delete")
	}
}

// TestUnitsBadCreate is the table of creates Check and Apply refuse, each
// naming its field.
func TestUnitsBadCreate(t *testing.T) {
	many := make([]string, MaxUnits+1)
	for i := range many {
		many[i] = fmt.Sprintf("n%d", i)
	}
	withCap := createUnits("b", 0, "a", "b")
	withCap.GetCreateResource().Capacity = 3
	withPol := createUnits("b", 0, "a")
	withPol.GetCreateResource().Policy = spec(RELAXED, 0, 0)
	for _, tc := range []struct {
		cmd   *fsmv1.Command
		field string
	}{
		{createUnits("b", 0, "a", "a"), "create_resource.units[1]"},
		{createUnits("b", 0, "a", ""), "create_resource.units[1]"},
		{createUnits("b", 0, "a b"), "create_resource.units[0]"},
		{createUnits("b", 0, strings.Repeat("x", 65)), "create_resource.units[0]"},
		{createUnits("b", 0, many...), "create_resource.units"},
		{createUnits("b", 7, "a"), "create_resource.unit_policy"},
		{withCap, "create_resource.capacity"},
		{withPol, "create_resource.policy"},
		{unitDown("b", "a", "", 10, 5), "unit_down.to_millis"},
		{unitDown("b", "a", "down-1", 10, 20), "unit_down.id"},
		{unitDown("b", "", "", 10, 20), "unit_down.unit"},
		{unitUp("b", ""), "unit_up.id"},
	} {
		h := newHarness(t, Config{})
		var fe *FieldError
		if err := h.f.Check(tc.cmd); err == nil || !asFieldError(err, &fe) || fe.Path != tc.field {
			t.Errorf("%v: Check says %v, want field %s", tc.cmd.GetType(), err, tc.field)
		}
		res := h.apply(1, tc.cmd)
		if res.GetStatus() != INVALID || res.GetInvalid().GetField() != tc.field {
			t.Errorf("%v: Apply says %v, want INVALID on %s", tc.cmd.GetType(), res, tc.field)
		}
	}
}

// TestUnitsVersion: everything about units needs envelope version 4; a
// version 3 entry carrying it is malformed, and resources without units
// keep the version they had.
func TestUnitsVersion(t *testing.T) {
	for _, c := range []*fsmv1.Command{createUnits("b", 0, "a"), unitDown("b", "a", "", 1, 2), unitUp("b", "x")} {
		if v := MinVersion(c); v != versionUnits {
			t.Errorf("%v: MinVersion %d, want %d", c.GetType(), v, versionUnits)
		}
		old := proto.CloneOf(c)
		old.Version = versionEdge
		if _, err := Encode(old); err == nil {
			t.Errorf("%v encoded as version 3", c.GetType())
		}
	}
	if v := MinVersion(createRes("plain", 4)); v != 1 {
		t.Errorf("plain create: MinVersion %d, want 1", v)
	}
}

// TestUnitsProperty runs random streams of reserve, hold, commit, modify,
// abort, cancel, complete, expiry (log time) and unit down/up windows on
// two resources with units (REMAP and REFUSE) and one without, and checks
// after every step that no unit is mapped to two overlapping bookings and
// that rows and unit schedules agree; at the middle and the end a
// snapshot must restore and re-encode to the same bytes, and a replica
// restored midway must answer the rest identically. Rerun one seed with
// -fsm.seed=N.
func TestUnitsProperty(t *testing.T) {
	for _, seed := range seeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x0417))
			a := newHarness(t, propConfig)
			var c *FSM
			now := int64(1_000)
			ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			cmds := []*fsmv1.Command{
				createUnits("remap", 0, nodeNames(5)...),
				createUnits("refuse", fsmv1.UnitPolicy_UNIT_POLICY_REFUSE, nodeNames(3)...),
				createRes("count", 6),
			}
			steps := max(*propSteps, 800)
			rejectedUnmappable, downsOK, changesOK := 0, 0, 0
			for i := 0; i < steps; i++ {
				var cmd *fsmv1.Command
				if i < len(cmds) {
					cmd = cmds[i]
				} else {
					now += int64(r.IntN(30))
					if r.IntN(12) == 0 {
						cmd = randomChangeUnits(r)
					} else {
						cmd = randomUnitCommand(r, now, ids)
					}
				}
				b, err := Encode(cmd)
				if err != nil {
					t.Fatal(err)
				}
				if b, err = Stamp(b, now); err != nil {
					t.Fatal(err)
				}
				idx := uint64(i + 1)
				ra := a.f.ApplyCommand(idx, b)
				res, err := DecodeResult(ra)
				if err != nil {
					t.Fatal(err)
				}
				if res.GetRejected().GetUnmappable() {
					rejectedUnmappable++
				}
				if res.GetStatus() == OK && cmd.GetType() == fsmv1.Command_TYPE_UNIT_DOWN {
					downsOK++
				}
				if res.GetStatus() == OK && cmd.GetType() == fsmv1.Command_TYPE_CHANGE_UNITS {
					changesOK++
				}
				checkInvariants(t, a.f)
				checkUnitSets(t, a.f)
				if c != nil {
					if rc := c.ApplyCommand(idx, b); !bytes.Equal(ra, rc) {
						t.Fatalf("seed %d step %d: restored replica answered differently", seed, i)
					}
				}
				if i == steps/2 {
					snap := snapshotBytes(t, a.f)
					c = restored(t, snap)
					if again := snapshotBytes(t, c); !bytes.Equal(snap, again) {
						t.Fatalf("seed %d: snapshot→restore→snapshot changed the bytes", seed)
					}
					checkInvariants(t, c)
				}
			}
			if sa, sc := snapshotBytes(t, a.f), snapshotBytes(t, c); !bytes.Equal(sa, sc) {
				t.Fatalf("seed %d: final snapshots differ", seed)
			}
			remaps := 0
			for _, e := range a.f.History(0, 0) {
				if e.GetType() == fsmv1.Event_TYPE_UNITS_REMAPPED {
					remaps++
				}
			}
			t.Logf("%d unmappable rejections, %d down windows, %d unit set changes, %d remap events (of the last %d events)",
				rejectedUnmappable, downsOK, changesOK, remaps, propConfig.HistoryLimit)
			if changesOK == 0 {
				t.Errorf("seed %d: no unit set change was applied", seed)
			}
		})
	}
}

// randomChangeUnits returns a random TYPE_CHANGE_UNITS entry for
// TestUnitsProperty: units n1–n7 join and leave "remap" and "refuse"
// (names already there or not there are refused, which is tested too).
func randomChangeUnits(r *rand.Rand) *fsmv1.Command {
	res := []string{"remap", "remap", "refuse"}[r.IntN(3)]
	name := func() string { return fmt.Sprintf("n%d", 1+r.IntN(7)) }
	var add, remove []string
	switch k := r.IntN(10); {
	case k < 5:
		add = []string{name()}
	case k < 8:
		remove = []string{name()}
	default:
		add, remove = []string{name()}, []string{name()}
	}
	return changeUnitsCmd(res, add, remove)
}

// checkUnitSets checks that every resource with units has the capacity
// of its unit set and that its unit schedule knows the same units.
func checkUnitSets(t testing.TB, f *FSM) {
	t.Helper()
	f.mu.RLock()
	defer f.mu.RUnlock()
	for name, us := range f.st.units {
		r := f.st.resources[name]
		if !slices.Equal(us.Units(), r.GetUnits()) || r.GetCapacity() != int64(len(r.GetUnits())) {
			t.Fatalf("resource %q: row units %v capacity %d, schedule units %v", name, r.GetUnits(), r.GetCapacity(), us.Units())
		}
		for _, d := range r.GetUnitDowns() {
			if !slices.Contains(r.GetUnits(), d.GetUnit()) && d.GetToMillis() > f.st.now {
				t.Fatalf("resource %q: down window %s on unit %q it no longer has", name, d.GetId(), d.GetUnit())
			}
		}
	}
}

// randomUnitCommand returns one random command for TestUnitsProperty.
func randomUnitCommand(r *rand.Rand, now int64, ids []string) *fsmv1.Command {
	res := []string{"remap", "remap", "refuse", "count"}[r.IntN(4)]
	id := ids[r.IntN(len(ids))]
	units := map[string]int{"remap": 5, "refuse": 3, "count": 6}
	switch k := r.IntN(100); {
	case k < 35:
		parts := []*fsmv1.Part{part(res, int64(1+r.IntN(units[res])))}
		if r.IntN(5) == 0 {
			other := []string{"remap", "refuse", "count"}[r.IntN(3)]
			if other != res {
				parts = append(parts, part(other, int64(1+r.IntN(2))))
			}
		}
		typ := fsmv1.Command_TYPE_HOLD
		if r.IntN(2) == 0 {
			typ = fsmv1.Command_TYPE_RESERVE
		}
		c := request(typ, id, res, 1, int64(10+r.IntN(150)), withParts(parts...), withTTL(int64(20+r.IntN(200))))
		if r.IntN(2) == 0 {
			c.GetRequest().StartMillis = proto.Int64(now + int64(r.IntN(300)))
		} else {
			nb := now + int64(r.IntN(300))
			c.GetRequest().NotBeforeMillis, c.GetRequest().DeadlineMillis = nb, nb+int64(r.IntN(600))+c.GetRequest().GetDurationMillis()
		}
		return c
	case k < 45:
		return commit(id)
	case k < 52:
		return abort(id)
	case k < 58:
		return cancel(id)
	case k < 64:
		return complete(id, proto.Int64(now+int64(r.IntN(80))))
	case k < 76:
		start := now + 1 + int64(r.IntN(300))
		c := modify(id, []*fsmv1.Part{part(res, int64(1+r.IntN(units[res])))}, proto.Int64(start), proto.Int64(start+int64(10+r.IntN(100))))
		if r.IntN(3) == 0 {
			// The state machine picks the start in a window.
			m := c.GetModify()
			m.StartMillis, m.EndMillis = nil, nil
			m.WindowDurationMillis, m.NotBeforeMillis = int64(10+r.IntN(100)), start
			m.DeadlineMillis = start + m.WindowDurationMillis + int64(r.IntN(400))
		}
		return c
	case k < 88:
		u := res
		if u == "count" {
			u = "remap"
		}
		from := now + int64(r.IntN(200)) - 20
		return unitDown(u, fmt.Sprintf("n%d", 1+r.IntN(units[u])), []string{"", "m1", "m2"}[r.IntN(3)], from, from+int64(10+r.IntN(200)))
	case k < 92:
		return unitUp([]string{"remap", "refuse"}[r.IntN(2)], []string{"m1", "m2"}[r.IntN(2)])
	}
	return tick()
}

// ---- golden entries ----

// unitsGoldenCommands are the golden entries of resources with units
// (envelope version 4), files 30–39. The unit golden replay applies the
// entries 01–25 and then these, so other features' files (40 on) never
// change it.
func unitsGoldenCommands() []struct {
	file string
	now  int64
	cmd  *fsmv1.Command
} {
	return []struct {
		file string
		now  int64
		cmd  *fsmv1.Command
	}{
		{"30_create_resource_units.bin", 4_000, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "ops", IdempotencyKey: "u1",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "batch/nodes", Unit: "nodes",
				Units: []string{"n1", "n2", "n3", "n4"}, Labels: map[string]string{"site": "hpc"}}}}},
		{"31_reserve_units.bin", 4_010, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Owner: "broker-8",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: "u-a",
				Parts: []*fsmv1.Part{{Resource: "batch/nodes", Amount: 1}}, DurationMillis: 10_000, StartMillis: proto.Int64(100_000)}}}},
		{"32_hold_units.bin", 4_020, &fsmv1.Command{Type: fsmv1.Command_TYPE_HOLD, Owner: "broker-8",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: "u-b",
				Parts:          []*fsmv1.Part{{Resource: "batch/nodes", Amount: 2}, {Resource: "cluster/cores", Amount: 8}},
				DurationMillis: 20_000, NotBeforeMillis: 105_000, HoldTtlMillis: 600_000}}}},
		// A down window over u-a's unit: u-a has not started and moves.
		{"33_unit_down.bin", 4_030, &fsmv1.Command{Type: fsmv1.Command_TYPE_UNIT_DOWN, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_UnitDown{UnitDown: &fsmv1.UnitDown{Resource: "batch/nodes", Unit: "n1", FromMillis: 90_000, ToMillis: 200_000, Id: "maint-1"}}}},
		{"34_modify_units.bin", 4_040, &fsmv1.Command{Type: fsmv1.Command_TYPE_MODIFY, Owner: "broker-8",
			Payload: &fsmv1.Command_Modify{Modify: &fsmv1.Modify{Id: "u-a", Parts: []*fsmv1.Part{{Resource: "batch/nodes", Amount: 3}},
				StartMillis: proto.Int64(300_000), EndMillis: proto.Int64(310_000)}}}},
		{"35_commit_modify_units.bin", 4_050, &fsmv1.Command{Type: fsmv1.Command_TYPE_COMMIT, Owner: "broker-8",
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: "u-a"}}}},
		{"36_unit_up.bin", 4_060, &fsmv1.Command{Type: fsmv1.Command_TYPE_UNIT_UP, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_UnitUp{UnitUp: &fsmv1.UnitUp{Resource: "batch/nodes", Id: "maint-1"}}}},
		{"37_create_resource_units_refuse.bin", 4_070, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "ops",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "pair", Capacity: 2,
				Units: []string{"a", "b"}, UnitPolicy: fsmv1.UnitPolicy_UNIT_POLICY_REFUSE}}}},
	}
}

// unitsGoldenStatuses are the results of unitsGoldenCommands.
var unitsGoldenStatuses = []fsmv1.Result_Status{OK, OK, OK, OK, OK, OK, OK, OK}

// unitsGoldenPrefix is the number of general golden entries (01–25) the
// unit golden replay applies before its own.
const unitsGoldenPrefix = 25

// TestGoldenUnitsCommands pins the encoding of the unit entries.
func TestGoldenUnitsCommands(t *testing.T) {
	for _, g := range unitsGoldenCommands() {
		dec := checkGoldenEntry(t, g)
		if want := entryVersion(g.cmd); dec.GetVersion() != want {
			t.Errorf("%s: version %d, want %d", g.file, dec.GetVersion(), want)
		}
		if g.cmd.GetType() != fsmv1.Command_TYPE_RESERVE && g.cmd.GetType() != fsmv1.Command_TYPE_HOLD &&
			g.cmd.GetType() != fsmv1.Command_TYPE_MODIFY && g.cmd.GetType() != fsmv1.Command_TYPE_COMMIT && dec.GetVersion() != versionUnits {
			// Bookings on a resource with units need no new version:
			// only a version 4 replica can have such a resource.
			t.Errorf("%s: version %d, want %d", g.file, dec.GetVersion(), versionUnits)
		}
	}
}

// TestGoldenUnitsSnapshot replays entries 01–25 and then 30–37 (the
// selection is explicit, so entries of other features never change it)
// and pins the snapshot; the stored snapshot must restore and re-encode
// to the same bytes and hold the units decided.
func TestGoldenUnitsSnapshot(t *testing.T) {
	entries := append(slices.Clone(goldenCommands()[:unitsGoldenPrefix]), unitsGoldenCommands()...)
	statuses := append(slices.Clone(goldenStatuses[:unitsGoldenPrefix]), unitsGoldenStatuses...)
	r := goldenReplayOf(t, entries, statuses, "snapshot-v1-units.golden")
	checkInvariants(t, r)
	ua, _ := r.Get("u-a")
	if got := unitsOf(ua, "batch/nodes"); len(got) != 3 || ua.GetStartMillis() != 300_000 {
		t.Errorf("u-a after the committed modification: %v", ua)
	}
	ub, _ := r.Get("u-b")
	if got := unitsOf(ub, "batch/nodes"); len(got) != 2 || ub.GetState() != HELD {
		t.Errorf("u-b: %v", ub)
	}
	if got := unitsOf(ub, "cluster/cores"); got != nil {
		t.Errorf("u-b names units %v on a resource without units", got)
	}
	var remapped []string
	for _, e := range r.History(0, 0) {
		if e.GetType() == fsmv1.Event_TYPE_UNITS_REMAPPED {
			remapped = append(remapped, e.GetReservation().GetId())
		}
	}
	if !slices.Contains(remapped, "u-a") {
		t.Errorf("remap events %v, want u-a among them (the down window over its unit)", remapped)
	}
	books, _, ok := r.UnitBookings("batch/nodes")
	if !ok || len(books) != 2 {
		t.Errorf("UnitBookings: %v %v", books, ok)
	}
	if _, _, ok := r.UnitBookings("cluster/cores"); ok {
		t.Error("UnitBookings of a resource without units")
	}
	_ = planner.MaxTime
}

// unitCommand returns a command on the resources with units of the
// random streams ("remap" and "refuse", created at the start), drawn from
// a source of its own (seeded by the position and the log time), so that
// the other entries of a stream are what they were without it.
func (g *gen) unitCommand(i int) *fsmv1.Command {
	r := rand.New(rand.NewPCG(uint64(i), uint64(g.now)))
	if r.IntN(16) == 0 {
		return randomChangeUnits(r)
	}
	return randomUnitCommand(r, g.now, []string{"u1", "u2", "u3", "u4", "u5", "u6"})
}

// downsAt is the number of units of resource down at instant at (each a
// booking of one unit in the count planner).
func downsAt(s *state, resource string, at int64) int64 {
	us := s.units[resource]
	if us == nil {
		return 0
	}
	n := int64(0)
	for _, d := range us.Downs() {
		if max(d.From, s.now) <= at && at < d.To {
			n++
		}
	}
	return n
}

// TestUnitsFindAndOffers: on a resource with units, Find answers the
// earliest start that maps (not the count's) and every offer maps.
func TestUnitsFindAndOffers(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(10, OK, createUnits("pair", fsmv1.UnitPolicy_UNIT_POLICY_REFUSE, "a", "b"))
	h.must(10, OK, reserve("A", "pair", 1, 1000, withStart(100)))
	h.must(10, OK, reserve("X", "pair", 1, 1000, withStart(3000)))
	h.must(10, OK, reserve("B", "pair", 1, 1000, withStart(3000)))
	h.must(10, OK, cancel("X"))
	req := planner.Request{Parts: []planner.Part{{Resource: "pair", Amount: 1}}, Duration: 3000, NotBefore: 500, Deadline: planner.MaxTime}
	d, err := h.f.Find(req)
	if err != nil || !d.Fits || d.Start != 1100 {
		t.Fatalf("Find: %+v %v, want a fit at 1100 (the count fits at 500)", d, err)
	}
	offers, err := h.f.Offers(req, 4)
	if err != nil || len(offers) == 0 || offers[0] != 1100 {
		t.Fatalf("Offers: %v %v", offers, err)
	}
	for _, o := range offers {
		q := req
		q.NotBefore, q.Deadline = o, o+q.Duration
		if d, err := h.f.Find(q); err != nil || !d.Fits || d.Start != o {
			t.Errorf("offer %d does not map: %+v %v", o, d, err)
		}
	}
	// The window ends before anything maps: the later start says where.
	req.Deadline = 3600
	if d, err := h.f.Find(req); err != nil || d.Fits || !d.LaterOK || d.LaterStart != 1100 {
		t.Errorf("Find in a short window: %+v %v", d, err)
	}
}
