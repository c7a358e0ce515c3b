package fsm

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// setMat builds a TYPE_SET_MATERIALIZATION entry.
func setMat(ups ...*fsmv1.MaterializationUpdate) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_SET_MATERIALIZATION, Owner: "bridge", Privileged: true,
		Payload: &fsmv1.Command_SetMaterialization{SetMaterialization: &fsmv1.SetMaterialization{Updates: ups}}}
}

// matUp is one update: state st with message msg, and (materialized) the
// units and window in ms.
func matUp(id string, st fsmv1.Materialization_State, msg string, units []string, start, end int64) *fsmv1.MaterializationUpdate {
	return &fsmv1.MaterializationUpdate{Id: id, Materialization: &fsmv1.Materialization{
		State: st, Message: msg, Name: "ledgerd-" + id, Units: units, StartMillis: start, EndMillis: end}}
}

const (
	matPending      = fsmv1.Materialization_STATE_PENDING
	matMaterialized = fsmv1.Materialization_STATE_MATERIALIZED
	matFailed       = fsmv1.Materialization_STATE_FAILED
)

// bridgeGoldenCommands are the golden entries of the materialization
// record (envelope version 4), files 60–69. The bridge golden replay
// applies entries 01–25, the units entries 30–37 and then these, so
// other features' files never change it.
func bridgeGoldenCommands() []struct {
	file string
	now  int64
	cmd  *fsmv1.Command
} {
	return []struct {
		file string
		now  int64
		cmd  *fsmv1.Command
	}{
		{"60_reserve_units_bridge.bin", 5_000, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Owner: "broker-9",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: "s-1",
				Parts: []*fsmv1.Part{{Resource: "batch/nodes", Amount: 1}}, DurationMillis: 60_000, StartMillis: proto.Int64(400_500)}}}},
		{"61_set_materialization.bin", 5_010, setMat(
			matUp("s-1", matMaterialized, "", []string{"n1"}, 401_000, 460_000),
			matUp("u-a", matFailed, "Requested nodes are busy", nil, 0, 0),
			matUp("gone", matPending, "", nil, 0, 0))},
		{"62_set_materialization_pending.bin", 5_020, setMat(
			matUp("u-a", matPending, "not attempted: the resource manager was unavailable earlier in the round", nil, 0, 0))},
		// job-1 was cancelled (entry 24): only REMOVED is stored on it.
		{"63_set_materialization_removed.bin", 5_030, setMat(
			matUp("job-1", fsmv1.Materialization_STATE_REMOVED, "deleted: cancelled", nil, 0, 0),
			matUp(AutoID(22), matMaterialized, "", []string{"n1"}, 401_000, 460_000))},
	}
}

// bridgeGoldenStatuses are the results of bridgeGoldenCommands.
var bridgeGoldenStatuses = []fsmv1.Result_Status{OK, OK, OK, OK}

// TestGoldenBridgeCommands pins the encoding of the materialization
// entries: version 4, decoding back to what was written.
func TestGoldenBridgeCommands(t *testing.T) {
	for _, g := range bridgeGoldenCommands() {
		dec := checkGoldenEntry(t, g)
		if g.cmd.GetType() == fsmv1.Command_TYPE_SET_MATERIALIZATION && dec.GetVersion() != versionBridge {
			t.Errorf("%s: version %d, want %d", g.file, dec.GetVersion(), versionBridge)
		}
	}
}

// TestGoldenBridgeSnapshot replays entries 01–25, 30–37 and 60–63 (the
// selection is explicit, so entries of other features never change it)
// and pins the snapshot; the stored snapshot must restore, re-encode to
// the same bytes and keep the records and the pin.
func TestGoldenBridgeSnapshot(t *testing.T) {
	entries := slices.Concat(goldenCommands()[:unitsGoldenPrefix], unitsGoldenCommands(), bridgeGoldenCommands())
	statuses := slices.Concat(goldenStatuses[:unitsGoldenPrefix], unitsGoldenStatuses, bridgeGoldenStatuses)
	r := goldenReplayOf(t, entries, statuses, "snapshot-v1-bridge.golden")
	s1, _ := r.Get("s-1")
	if m := s1.GetMaterialization(); m.GetState() != matMaterialized || !slices.Equal(m.GetUnits(), []string{"n1"}) || m.GetVersion() != 35 || m.GetAtMillis() != 5_010 {
		t.Errorf("s-1 record: %v", m)
	}
	if !slices.Equal(unitsOf(s1, "batch/nodes"), []string{"n1"}) {
		t.Fatalf("s-1 holds %v, the golden record says n1: rewrite entry 61", unitsOf(s1, "batch/nodes"))
	}
	if !pinnedOn(r, "batch/nodes", "s-1") {
		t.Error("s-1 is not pinned after restore")
	}
	ua, _ := r.Get("u-a")
	if m := ua.GetMaterialization(); m.GetState() != matPending || m.GetVersion() != 36 {
		t.Errorf("u-a record: %v", m)
	}
	if j, _ := r.Get("job-1"); j.GetMaterialization().GetState() != fsmv1.Materialization_STATE_REMOVED {
		t.Errorf("cancelled job-1 record: %v", j.GetMaterialization())
	}
	if c, _ := r.Get(AutoID(22)); c.GetMaterialization() != nil {
		t.Errorf("a cancelled reservation took a MATERIALIZED record: %v", c.GetMaterialization())
	}
	if _, ok := r.Get("gone"); ok {
		t.Error("a record made a row for an unknown reservation")
	}
	var changed []string
	for _, e := range r.History(0, 0) {
		if e.GetType() == fsmv1.Event_TYPE_MATERIALIZATION_CHANGED {
			changed = append(changed, e.GetReservation().GetId())
		}
	}
	if strings.Join(changed, ",") != "s-1,u-a,u-a,job-1" {
		t.Errorf("materialization events for %v, want s-1,u-a,u-a,job-1", changed)
	}
}

// pinnedOn reports whether booking id may not move on resource's unit
// schedule.
func pinnedOn(f *FSM, resource, id string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	us := f.st.units[resource]
	if us == nil {
		return false
	}
	b, ok := us.Get(id)
	return ok && !b.Movable
}

// TestMaterializationPins: under the REMAP unit policy a booking that has
// not started moves to make room, unless its record says it is
// materialized with the units and window it holds; a record that no
// longer matches (other units, a failed state) releases the pin. The
// same decisions follow on a replica restored from a snapshot.
func TestMaterializationPins(t *testing.T) {
	// Two units. a-1 and b-1 sit on different units at different times;
	// c-1 needs one unit over both windows, which only a move can give.
	setup := func(t *testing.T) (*harness, []string, []string) {
		h := newHarness(t, Config{})
		h.must(1_000, OK, createUnits("pair", fsmv1.UnitPolicy_UNIT_POLICY_REMAP, "x", "y"))
		h.must(1_010, OK, reserve("a-1", "pair", 1, 100_000, withStart(100_000)))
		a, _ := h.f.Get("a-1")
		// A down window on a-1's unit sends b-2 to the other one; it
		// ends before anything else happens.
		h.must(1_020, OK, unitDown("pair", unitsOf(a, "pair")[0], "d", 290_000, 410_000))
		h.must(1_030, OK, reserve("b-2", "pair", 1, 100_000, withStart(300_000)))
		h.must(1_040, OK, unitUp("pair", "d"))
		b, _ := h.f.Get("b-2")
		if ua, ub := unitsOf(a, "pair"), unitsOf(b, "pair"); len(ua) != 1 || len(ub) != 1 || ua[0] == ub[0] {
			t.Fatalf("a-1 on %v, b-2 on %v: the scenario needs them on different units", ua, ub)
		}
		return h, unitsOf(a, "pair"), unitsOf(b, "pair")
	}
	spanning := reserve("c-1", "pair", 1, 350_000, withStart(50_000))

	t.Run("control: not materialized, something moves", func(t *testing.T) {
		h, ua, ub := setup(t)
		res := h.must(1_100, OK, spanning)
		if !movedAny(h.f, "a-1", ua) && !movedAny(h.f, "b-2", ub) {
			t.Fatalf("c-1 was admitted without a move: %v", res)
		}
	})
	t.Run("both pinned: refused as unmappable", func(t *testing.T) {
		h, ua, ub := setup(t)
		h.must(1_050, OK, setMat(
			matUp("a-1", matMaterialized, "", ua, 100_000, 200_000),
			matUp("b-2", matMaterialized, "", ub, 300_000, 400_000)))
		snap := snapshotBytes(t, h.f)
		res := h.must(1_100, REJECTED, spanning)
		if !res.GetRejected().GetUnmappable() {
			t.Errorf("refusal %v, want unmappable", res)
		}
		// A replica restored from the snapshot refuses identically.
		g := restored(t, snap)
		h2 := &harness{t: t, f: g, index: h.index - 1}
		res2 := h2.must(1_100, REJECTED, spanning)
		if !proto.Equal(res, res2) {
			t.Errorf("restored replica answered\n%v\nthe original\n%v", res2, res)
		}
	})
	t.Run("record with other units does not pin", func(t *testing.T) {
		h, _, ub := setup(t)
		h.must(1_050, OK, setMat(
			matUp("a-1", matMaterialized, "", ub, 100_000, 200_000), // wrong units
			matUp("b-2", matFailed, "Requested nodes are busy", nil, 0, 0)))
		if pinnedOn(h.f, "pair", "a-1") || pinnedOn(h.f, "pair", "b-2") {
			t.Fatal("a record that does not match the row pinned it")
		}
		h.must(1_100, OK, spanning)
	})
	t.Run("pin released when the record turns pending", func(t *testing.T) {
		h, ua, _ := setup(t)
		h.must(1_050, OK, setMat(matUp("a-1", matMaterialized, "", ua, 100_000, 200_000)))
		if !pinnedOn(h.f, "pair", "a-1") {
			t.Fatal("not pinned")
		}
		h.must(1_060, OK, setMat(matUp("a-1", matPending, "slurmctld down", nil, 0, 0)))
		if pinnedOn(h.f, "pair", "a-1") {
			t.Fatal("still pinned after the record turned pending")
		}
	})
}

// movedAny reports whether id no longer holds units.
func movedAny(f *FSM, id string, units []string) bool {
	r, _ := f.Get(id)
	return !slices.Equal(unitsOf(r, "pair"), units)
}

// TestSetMaterializationRecords: equal records change nothing (no event,
// no new version); terminal and unknown reservations are skipped.
func TestSetMaterializationRecords(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1_000, OK, createUnits("pair", fsmv1.UnitPolicy_UNIT_POLICY_REMAP, "x", "y"))
	h.must(1_010, OK, reserve("a-1", "pair", 1, 100_000, withStart(100_000)))
	h.must(1_020, OK, reserve("a-2", "pair", 1, 100_000, withStart(100_000)))
	h.must(1_030, OK, cancel("a-2"))
	h.must(1_040, OK, setMat(matUp("a-1", matFailed, "no tenant mapping for owner", nil, 0, 0), matUp("a-2", matPending, "", nil, 0, 0), matUp("zz", matPending, "", nil, 0, 0)))
	a1, _ := h.f.Get("a-1")
	if m := a1.GetMaterialization(); m.GetState() != matFailed || m.GetMessage() != "no tenant mapping for owner" || m.GetVersion() != 5 {
		t.Fatalf("a-1 record %v", m)
	}
	if a2, _ := h.f.Get("a-2"); a2.GetMaterialization() != nil {
		t.Errorf("cancelled a-2 got a record: %v", a2.GetMaterialization())
	}
	before := len(h.f.History(0, 0))
	h.must(1_050, OK, setMat(matUp("a-1", matFailed, "no tenant mapping for owner", nil, 0, 0)))
	if after := len(h.f.History(0, 0)); after != before {
		t.Errorf("an equal record emitted %d events", after-before)
	}
	if again, _ := h.f.Get("a-1"); again.GetUpdatedVersion() != a1.GetUpdatedVersion() {
		t.Errorf("an equal record changed the row's version %d -> %d", a1.GetUpdatedVersion(), again.GetUpdatedVersion())
	}
}

// TestSetMaterializationInvalid: bad payloads are refused naming the
// field, by Check and by Apply alike, and change nothing.
func TestSetMaterializationInvalid(t *testing.T) {
	long := strings.Repeat("m", maxMaterializationMessage+1)
	cases := []struct {
		name  string
		cmd   *fsmv1.Command
		field string
	}{
		{"no updates", setMat(), "set_materialization.updates"},
		{"empty id", setMat(matUp("", matPending, "", nil, 0, 0)), "set_materialization.updates[0].id"},
		{"twice", setMat(matUp("a", matPending, "", nil, 0, 0), matUp("a", matFailed, "", nil, 0, 0)), "set_materialization.updates[1].id"},
		{"no state", setMat(matUp("a", 0, "", nil, 0, 0)), "set_materialization.updates[0].materialization.state"},
		{"unknown state", setMat(matUp("a", 9, "", nil, 0, 0)), "set_materialization.updates[0].materialization.state"},
		{"long message", setMat(matUp("a", matFailed, long, nil, 0, 0)), "set_materialization.updates[0].materialization.message"},
		{"bad unit", setMat(matUp("a", matMaterialized, "", []string{"n 1"}, 0, 1000)), "set_materialization.updates[0].materialization.units[0]"},
		{"unsorted units", setMat(matUp("a", matMaterialized, "", []string{"n2", "n1"}, 0, 1000)), "set_materialization.updates[0].materialization.units[1]"},
		{"end before start", setMat(matUp("a", matMaterialized, "", []string{"n1"}, 2000, 1000)), "set_materialization.updates[0].materialization.end_millis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			err := h.f.Check(c.cmd)
			var fe *FieldError
			if !asFieldError(err, &fe) || fe.Path != c.field {
				t.Fatalf("Check: %v, want a field error on %s", err, c.field)
			}
			res := h.must(1_000, INVALID, c.cmd)
			if res.GetInvalid().GetField() != c.field {
				t.Errorf("Apply refused %s, want %s", res.GetInvalid().GetField(), c.field)
			}
		})
	}
}

// TestSetMaterializationVersion: the entry needs envelope version 4.
func TestSetMaterializationVersion(t *testing.T) {
	c := setMat(matUp("a", matPending, "", nil, 0, 0))
	if v := MinVersion(c); v != versionBridge || versionBridge != 4 {
		t.Errorf("MinVersion %d, want 4", v)
	}
}

// materializationCommand returns a materialization entry for the random
// streams, on the IDs of the unit bursts, drawn from a source of its own
// (like unitCommand). Its records rarely match a row, so they mostly
// leave bookings movable; TestMaterializationPins covers pinning.
func (g *gen) materializationCommand(i int) *fsmv1.Command {
	r := rand.New(rand.NewPCG(uint64(i), uint64(g.now)^0x6d61)) //nolint:gosec // replayable test stream
	ids := []string{"u1", "u2", "u3", "u4", "u5", "u6"}
	var ups []*fsmv1.MaterializationUpdate
	for _, k := range r.Perm(len(ids))[:1+r.IntN(3)] {
		st := []fsmv1.Materialization_State{matPending, matMaterialized, matFailed}[r.IntN(3)]
		var units []string
		var start, end int64
		if st == matMaterialized {
			units = nodeNames(1 + r.IntN(3))
			start = g.now / 1000 * 1000
			end = start + int64(1+r.IntN(5))*1000
		}
		ups = append(ups, matUp(ids[k], st, []string{"", "Requested nodes are busy"}[r.IntN(2)], units, start, end))
	}
	return setMat(ups...)
}

// materializedSnapshot is a small snapshot with a pinned, materialized
// booking (a fuzz seed).
func materializedSnapshot(tb testing.TB) []byte {
	h := newHarness(tb, Config{})
	h.must(1_000, OK, createUnits("pair", fsmv1.UnitPolicy_UNIT_POLICY_REMAP, "x", "y"))
	r := h.must(1_010, OK, reserve("a", "pair", 1, 100_000, withStart(100_000)))
	h.must(1_020, OK, setMat(matUp("a", matMaterialized, "", unitsOf(r.GetReservation(), "pair"), 100_000, 200_000)))
	return snapshotBytes(tb, h.f)
}

// TestRecordInSnapshotChecked: restore accepts a stored record only in
// the deterministic encoding with a known state; anything else is refused
// naming the field, never a panic later.
func TestRecordInSnapshotChecked(t *testing.T) {
	good, err := marshalOpts.Marshal(&fsmv1.Reservation{Id: "a", State: COMMITTED,
		Materialization: &fsmv1.Materialization{State: matFailed, Message: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	var sc rowScan
	if err := scanRow(string(good), &sc); err != nil || !sc.hasRecord {
		t.Fatalf("a good row: %v (record %v)", err, sc.hasRecord)
	}
	for name, rec := range map[string][]byte{
		"garbage":       {0xff, 0xff, 0xff},
		"unknown field": protowire.AppendString(protowire.AppendTag(nil, 99, protowire.BytesType), "x"),
		"no state":      protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "m"),
		"zero scalar":   protowire.AppendVarint(protowire.AppendTag(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1), 7, protowire.VarintType), 0),
	} {
		row := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "a")
		row = protowire.AppendVarint(protowire.AppendTag(row, 7, protowire.VarintType), uint64(COMMITTED))
		row = protowire.AppendBytes(protowire.AppendTag(row, resvMaterialization, protowire.BytesType), rec)
		if err := scanRow(string(row), &sc); err == nil || !strings.Contains(err.Error(), "materialization") {
			t.Errorf("%s: %v, want a refusal naming materialization", name, err)
		}
	}
	// A snapshot with a pinned booking restores and re-encodes alike.
	snap := materializedSnapshot(t)
	g := restored(t, snap)
	if !pinnedOn(g, "pair", "a") {
		t.Error("not pinned after restore")
	}
	if again := snapshotBytes(t, g); !bytes.Equal(again, snap) {
		t.Error("restored snapshot re-encodes differently")
	}
}
