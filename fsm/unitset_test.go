package fsm

import (
	"slices"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// changeUnitsCmd builds a TYPE_CHANGE_UNITS entry.
func changeUnitsCmd(res string, add, remove []string) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CHANGE_UNITS, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_ChangeUnits{ChangeUnits: &fsmv1.ChangeUnits{Resource: res, Add: add, Remove: remove}}}
}

// resourceOf returns resource name of h's state machine.
func resourceOf(t *testing.T, h *harness, name string) *fsmv1.Resource {
	t.Helper()
	r, ok := h.f.Resource(name)
	if !ok {
		t.Fatalf("resource %q not found", name)
	}
	return r
}

// getRow returns row id of h's state machine.
func getRow(t *testing.T, h *harness, id string) *fsmv1.Reservation {
	t.Helper()
	r, ok := h.f.Get(id)
	if !ok {
		t.Fatalf("reservation %q not found", id)
	}
	return r
}

// TestChangeUnitsAdd: adding units adds capacity and moves nothing.
func TestChangeUnitsAdd(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(10, OK, createUnits("b", 0, "n1", "n2"))
	h.must(10, OK, reserve("A", "b", 2, 100, withStart(1000)))
	h.must(10, REJECTED, reserve("B", "b", 1, 100, withStart(1000)))
	before, _ := h.f.Get("A")
	from := h.index
	h.must(20, OK, changeUnitsCmd("b", []string{"n4", "n3"}, nil))
	if r := resourceOf(t, h, "b"); !slices.Equal(r.GetUnits(), []string{"n1", "n2", "n4", "n3"}) || r.GetCapacity() != 4 {
		t.Fatalf("resource after adding: units %v capacity %d", r.GetUnits(), r.GetCapacity())
	}
	if got := h.events(from + 1); !slices.Equal(got, []fsmv1.Event_Type{fsmv1.Event_TYPE_UNITS_CHANGED}) {
		t.Errorf("events %v, want only UNITS_CHANGED", got)
	}
	after, _ := h.f.Get("A")
	if !proto.Equal(before, after) {
		t.Errorf("adding units changed A: %v -> %v", before, after)
	}
	h.must(30, OK, reserve("B", "b", 2, 100, withStart(1000)))
	if got := unitsOf(getRow(t, h, "B"), "b"); !slices.Equal(got, []string{"n4", "n3"}) {
		t.Errorf("B on %v, want the added units", got)
	}
	checkInvariants(t, h.f)
}

// TestChangeUnitsRemove covers the removal cases: bookings on a removed
// unit move to spare units (an event each, their other units kept),
// a down window on it ends, and the removal is refused, changing
// nothing, when a booking has started, when no spare unit is free for a
// booking, or under the REFUSE unit policy.
func TestChangeUnitsRemove(t *testing.T) {
	t.Run("remap", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.must(10, OK, createUnits("b", 0, "n1", "n2", "n3", "n4"))
		h.must(10, OK, reserve("A", "b", 2, 100, withStart(1000)))
		h.must(10, OK, hold("H", "b", 1, 100, withStart(1000), withTTL(10_000)))
		h.must(10, OK, unitDown("b", "n4", "m", 2000, 3000))
		a := unitsOf(getRow(t, h, "A"), "b")
		gone := a[0]
		from := h.index
		h.must(20, OK, changeUnitsCmd("b", []string{"n5"}, []string{gone}))
		na := unitsOf(getRow(t, h, "A"), "b")
		if slices.Contains(na, gone) || !slices.Contains(na, a[1]) || len(na) != 2 {
			t.Fatalf("A on %v after removing %s (was %v): want its other unit kept and a spare", na, gone, a)
		}
		evs := h.events(from + 1)
		if !slices.Contains(evs, fsmv1.Event_TYPE_UNITS_REMAPPED) || evs[len(evs)-1] != fsmv1.Event_TYPE_UNITS_CHANGED {
			t.Errorf("events %v", evs)
		}
		r := resourceOf(t, h, "b")
		if slices.Contains(r.GetUnits(), gone) || r.GetCapacity() != 4 || len(r.GetUnitDowns()) != 1 {
			t.Errorf("resource: %v", r)
		}
		// Removing the unit under the down window ends the window.
		h.must(30, OK, changeUnitsCmd("b", nil, []string{"n4"}))
		if r := resourceOf(t, h, "b"); len(r.GetUnitDowns()) != 0 || r.GetCapacity() != 3 {
			t.Errorf("resource after removing the down unit: %v", r)
		}
		checkInvariants(t, h.f)
		// Three units, A holds two and H one over [1000,1100): a
		// fourth booking there fits nowhere.
		h.must(40, REJECTED, reserve("X", "b", 1, 100, withStart(1000)))
	})
	t.Run("running", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.must(10, OK, createUnits("b", 0, "n1", "n2", "n3"))
		h.must(10, OK, reserve("A", "b", 1, 1000, withStart(100)))
		u := unitsOf(getRow(t, h, "A"), "b")[0]
		h.must(200, OK, tick())
		res := h.must(300, CONFLICT, changeUnitsCmd("b", nil, []string{u}))
		if !slices.Equal(res.GetConflict().GetViolatedIds(), []string{"A"}) || !strings.Contains(res.GetMessage(), "started") {
			t.Errorf("refusal: %v", res)
		}
		if r := resourceOf(t, h, "b"); len(r.GetUnits()) != 3 {
			t.Errorf("a refused removal changed the resource: %v", r)
		}
		checkInvariants(t, h.f)
	})
	t.Run("no spare", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.must(10, OK, createUnits("b", 0, "n1", "n2"))
		h.must(10, OK, reserve("A", "b", 1, 100, withStart(1000)))
		h.must(10, OK, reserve("B", "b", 1, 100, withStart(1050)))
		u := unitsOf(getRow(t, h, "B"), "b")[0]
		res := h.must(20, CONFLICT, changeUnitsCmd("b", nil, []string{u}))
		if ids := res.GetConflict().GetViolatedIds(); !slices.Equal(ids, []string{"B"}) {
			t.Errorf("refusal lists %v, want [B]", ids)
		}
		checkInvariants(t, h.f)
		// With a spare added in the same entry, it moves there.
		h.must(30, OK, changeUnitsCmd("b", []string{"n9"}, []string{u}))
		if got := unitsOf(getRow(t, h, "B"), "b"); !slices.Equal(got, []string{"n9"}) {
			t.Errorf("B on %v, want n9", got)
		}
		checkInvariants(t, h.f)
	})
	t.Run("refuse policy", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.must(10, OK, createUnits("b", fsmv1.UnitPolicy_UNIT_POLICY_REFUSE, "n1", "n2", "n3"))
		h.must(10, OK, reserve("A", "b", 1, 100, withStart(1000)))
		u := unitsOf(getRow(t, h, "A"), "b")[0]
		res := h.must(20, CONFLICT, changeUnitsCmd("b", nil, []string{u}))
		if !strings.Contains(res.GetMessage(), "REFUSE") || !slices.Equal(res.GetConflict().GetViolatedIds(), []string{"A"}) {
			t.Errorf("refusal: %v", res)
		}
		// A free unit goes.
		free := slices.DeleteFunc([]string{"n1", "n2", "n3"}, func(n string) bool { return n == u })
		h.must(30, OK, changeUnitsCmd("b", nil, free[:1]))
		checkInvariants(t, h.f)
	})
	t.Run("pending modification", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.must(10, OK, createUnits("b", 0, "n1", "n2", "n3"))
		h.must(10, OK, reserve("A", "b", 1, 100, withStart(1000)))
		h.must(10, OK, modify("A", []*fsmv1.Part{part("b", 2)}, proto.Int64(2000), proto.Int64(2100)))
		pend := getRow(t, h, "A").GetPending().GetParts()[0].GetUnits()
		h.must(20, OK, changeUnitsCmd("b", nil, pend[:1]))
		if got := getRow(t, h, "A").GetPending().GetParts()[0].GetUnits(); slices.Contains(got, pend[0]) || len(got) != 2 {
			t.Errorf("pending shape on %v after removing %s", got, pend[0])
		}
		checkInvariants(t, h.f)
	})
}

// TestChangeUnitsBad: bad entries get a clear error naming the field.
func TestChangeUnitsBad(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(10, OK, createUnits("b", 0, "n1", "n2"))
	h.must(10, OK, createRes("plain", 4))
	for _, c := range []struct {
		name        string
		res         string
		add, remove []string
		status      fsmv1.Result_Status
		field       string
	}{
		{"nothing", "b", nil, nil, INVALID, "change_units.add"},
		{"bad name", "b", []string{"n 1"}, nil, INVALID, "change_units.add[0]"},
		{"empty name", "b", nil, []string{""}, INVALID, "change_units.remove[0]"},
		{"twice", "b", []string{"n5"}, []string{"n5"}, INVALID, "change_units.remove[0]"},
		{"dup add", "b", []string{"n5", "n5"}, nil, INVALID, "change_units.add[1]"},
		{"exists", "b", []string{"n3", "n1"}, nil, INVALID, "change_units.add[1]"},
		{"unknown", "b", nil, []string{"n7"}, INVALID, "change_units.remove[0]"},
		{"all", "b", nil, []string{"n1", "n2"}, INVALID, "change_units.remove"},
		{"no units", "plain", []string{"x"}, nil, INVALID, "change_units.resource"},
		{"no resource", "nope", []string{"x"}, nil, fsmv1.Result_STATUS_NOT_FOUND, ""},
		{"bad resource", "", []string{"x"}, nil, INVALID, "change_units.resource"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := h.must(20, c.status, changeUnitsCmd(c.res, c.add, c.remove))
			if got := res.GetInvalid().GetField(); got != c.field {
				t.Errorf("field %q, want %q (%s)", got, c.field, res.GetMessage())
			}
		})
	}
	if r := resourceOf(t, h, "b"); !slices.Equal(r.GetUnits(), []string{"n1", "n2"}) {
		t.Errorf("refused entries changed the units: %v", r.GetUnits())
	}
}

// TestChangeUnitsVersion: the entry needs envelope version 4.
func TestChangeUnitsVersion(t *testing.T) {
	c := changeUnitsCmd("b", []string{"n3"}, nil)
	if v := MinVersion(c); v != versionUnits {
		t.Fatalf("MinVersion %d, want %d", v, versionUnits)
	}
	old := proto.CloneOf(c)
	old.Version = versionEdge
	if _, err := Encode(old); err == nil {
		t.Error("encoded as version 3")
	}
}

// unitsChangeGoldenCommands are the golden entries of TYPE_CHANGE_UNITS,
// files 64–69, replayed after 01–25 and 30–37.
func unitsChangeGoldenCommands() []goldenEntry {
	return []goldenEntry{
		// u-a holds three of n1–n4 over [300000,310000) and u-b two
		// over its window: removing n2 and n3 moves whoever held them
		// onto n5 and n6.
		{"64_change_units.bin", 4_080, &fsmv1.Command{Type: fsmv1.Command_TYPE_CHANGE_UNITS, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_ChangeUnits{ChangeUnits: &fsmv1.ChangeUnits{Resource: "batch/nodes",
				Add: []string{"n5", "n6"}, Remove: []string{"n2", "n3"}}}}},
	}
}

// TestGoldenUnitsChangeSnapshot replays entries 01–25, 30–37 and 64 and
// pins the snapshot; the stored snapshot must restore, re-encode to the
// same bytes and hold the new unit set and the moved bookings.
func TestGoldenUnitsChangeSnapshot(t *testing.T) {
	for _, g := range unitsChangeGoldenCommands() {
		if dec := checkGoldenEntry(t, g); dec.GetVersion() != versionUnits {
			t.Fatalf("%s: version %d", g.file, dec.GetVersion())
		}
	}
	entries := slices.Concat(goldenCommands()[:unitsGoldenPrefix], unitsGoldenCommands(), unitsChangeGoldenCommands())
	statuses := slices.Concat(goldenStatuses[:unitsGoldenPrefix], unitsGoldenStatuses, []fsmv1.Result_Status{OK})
	r := goldenReplayOf(t, entries, statuses, "snapshot-v1-units-change.golden")
	res, _ := r.Resource("batch/nodes")
	if !slices.Equal(res.GetUnits(), []string{"n1", "n4", "n5", "n6"}) || res.GetCapacity() != 4 {
		t.Errorf("batch/nodes after the change: %v", res)
	}
	for _, id := range []string{"u-a", "u-b"} {
		row, _ := r.Get(id)
		for _, u := range unitsOf(row, "batch/nodes") {
			if u == "n2" || u == "n3" {
				t.Errorf("%s still on removed unit %s", id, u)
			}
		}
	}
	remapped := 0
	for _, e := range r.History(0, 0) {
		if e.GetVersion() == uint64(len(entries)) && e.GetType() == fsmv1.Event_TYPE_UNITS_REMAPPED {
			remapped++
		}
	}
	if remapped == 0 {
		t.Error("no UNITS_REMAPPED event from the change")
	}
}
