package replicated

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/fsm"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/rpc"
)

// TestUnitsNeedVersion4: in a cluster where some server applies only
// envelope version 3, a resource with units and a unit down window are
// refused as unavailable (mid-upgrade) before anything is proposed, while
// a resource without units is still created; once every server applies
// version 4 the same calls succeed.
func TestUnitsNeedVersion4(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	vl := &versionedLog{fakeLog: fl, common: 3}
	l := New(vl, fl.f)
	nodes := &ledgerdv1.Resource{Name: "batch", Unit: "nodes", Units: []string{"n1", "n2"}}
	_, err := l.CreateResource(ctx, op(), nodes)
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, ErrMidUpgrade) || !strings.Contains(err.Error(), "needs version 4") {
		t.Fatalf("create with units at common version 3: %v, want unavailable (mid-upgrade, needs version 4)", err)
	}
	if _, _, err := l.UnitDown(ctx, ledger.UnitDownArgs{Write: op(), Name: "batch", Unit: "n1", To: t0 + 1000}); !errors.Is(err, ErrMidUpgrade) {
		t.Fatalf("unit down at common version 3: %v", err)
	}
	if _, err := l.UnitUp(ctx, op(), "batch", "x"); !errors.Is(err, ErrMidUpgrade) {
		t.Fatalf("unit up at common version 3: %v", err)
	}
	if _, err := l.ChangeUnits(ctx, op(), "batch", []string{"n3"}, nil); !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, ErrMidUpgrade) ||
		!strings.Contains(err.Error(), "needs version 4") {
		t.Fatalf("change units at common version 3: %v, want unavailable (mid-upgrade, needs version 4)", err)
	}
	if len(fl.cmds) != 0 {
		t.Fatalf("%d commands proposed to a cluster that cannot apply them", len(fl.cmds))
	}
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "cpu", Capacity: 4}); err != nil {
		t.Fatalf("plain create at common version 3: %v", err)
	}
	if v := fl.cmds[0].GetVersion(); v != 3 {
		t.Fatalf("plain create written as version %d, want 3", v)
	}
	vl.common = 4
	if _, err := l.CreateResource(ctx, op(), nodes); err != nil {
		t.Fatalf("create with units at common version 4: %v", err)
	}
	if v := fl.cmds[len(fl.cmds)-1].GetVersion(); v != 4 {
		t.Fatalf("create with units written as version %d", v)
	}
}

// TestUnitsThroughLedger: units come back on reservations, resources,
// events and UnitBookings; REFUSE rejections carry the UNMAPPABLE reason
// with the earliest start that maps; a refused down window names the
// booking in the way.
func TestUnitsThroughLedger(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	res, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "pair", Unit: "nodes", Units: []string{"a", "b"}, UnitPolicy: ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.GetUnits(), []string{"a", "b"}) || res.GetCapacity() != 2 || res.GetUnitPolicy() != ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE {
		t.Fatalf("created %v", res)
	}
	book := func(amount, start, dur int64, deadline int64) (*ledgerdv1.Reservation, error) {
		r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{
			Parts: []ledger.Part{{Resource: "pair", Amount: amount}}, Duration: dur, NotBefore: start, Deadline: deadline}})
		return r, err
	}
	a, err := book(1, t0+100, 1000, t0+1100)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.GetUnits()) != 1 {
		t.Fatalf("reservation units %v", a.GetUnits())
	}
	if _, err := book(1, t0+3000, 1000, t0+4000); err != nil {
		t.Fatal(err)
	}
	// Best fit puts both on one unit, so one unit for the whole
	// [t0+100, t0+4000) maps on the other; then two units fit in sum
	// nowhere in [t0+100, t0+300).
	if _, err := book(1, t0+100, 3900, t0+4000); err != nil {
		t.Fatalf("whole window on the free unit: %v", err)
	}
	_, err = book(2, t0+100, 200, t0+300)
	var rj *ledger.RejectedError
	if !errors.As(err, &rj) || rj.Reason != ledger.ReasonNoCapacity {
		t.Fatalf("two units while both are booked: %v", err)
	}
	books, downs, err := l.UnitBookings(ctx, "pair", false)
	if err != nil || len(books) != 3 || len(downs) != 0 {
		t.Fatalf("UnitBookings: %v %v %v", books, downs, err)
	}
	for _, b := range books {
		if len(b.Units) != 1 || b.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
			t.Errorf("booking %+v", b)
		}
	}
	if _, _, err := l.UnitDown(ctx, ledger.UnitDownArgs{Write: op(), Name: "pair", Unit: books[2].Units[0], From: t0 + 50, To: t0 + 200}); !errors.Is(err, ledger.ErrInUse) || !strings.Contains(err.Error(), books[2].ID) {
		t.Fatalf("down window over a booking under REFUSE: %v", err)
	}
	if _, _, err := l.UnitBookings(ctx, "nope", false); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown resource: %v", err)
	}
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "cpu", Capacity: 4}); err != nil {
		t.Fatal(err)
	}
	var fe *ledger.FieldError
	if _, _, err := l.UnitBookings(ctx, "cpu", false); !errors.As(err, &fe) || fe.Field != "name" {
		t.Fatalf("resource without units: %v", err)
	}
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "dup", Units: []string{"x", "x"}}); !errors.As(err, &fe) || fe.Field != "resource.units[1]" {
		t.Fatalf("duplicate unit: %v", err)
	}
	evs, err := l.History(ctx, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].GetType() != ledgerdv1.EventType_EVENT_TYPE_RESOURCE || len(evs[0].GetResource().GetUnits()) != 2 {
		t.Errorf("first event %v", evs[0])
	}
}

// TestUnmappableReason: under REFUSE a count-feasible request that no set
// of units can take is rejected as UNMAPPABLE with the earliest start
// that maps.
func TestUnmappableReason(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "pair", Units: []string{"a", "b"}, UnitPolicy: ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE}); err != nil {
		t.Fatal(err)
	}
	hold := func(id string, start, dur, deadline int64) error {
		_, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), ID: id, Commit: true, Shape: ledger.Shape{
			Parts: []ledger.Part{{Resource: "pair", Amount: 1}}, Duration: dur, NotBefore: start, Deadline: deadline}})
		return err
	}
	for _, b := range []struct {
		id    string
		start int64
	}{{"A", t0 + 1000}, {"X", t0 + 3000}, {"B", t0 + 3000}} {
		if err := hold(b.id, b.start, 1000, b.start+1000); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Cancel(ctx, op(), "X"); err != nil {
		t.Fatal(err)
	}
	err := hold("C", t0+1000, 3000, t0+4000)
	var rj *ledger.RejectedError
	if !errors.As(err, &rj) || rj.Reason != ledger.ReasonUnmappable || !rj.LaterOK || rj.LaterStart != t0+2000 {
		t.Fatalf("hard case under REFUSE: %v (%+v)", err, rj)
	}
}

// TestMaxUnitsMatchesFSM: the edge's bound on a resource's units is the
// state machine's.
func TestMaxUnitsMatchesFSM(t *testing.T) {
	if rpc.MaxUnits != fsm.MaxUnits {
		t.Fatalf("rpc.MaxUnits %d != fsm.MaxUnits %d", rpc.MaxUnits, fsm.MaxUnits)
	}
}

// TestChangeUnitsThroughLedger: a unit change comes back on the resource
// and as events (the moved booking's UNITS_REMAPPED, the resource's
// RESOURCE event); a removal that cannot move a booking is ErrInUse
// naming it, and a bad name a FieldError.
func TestChangeUnitsThroughLedger(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "part", Unit: "nodes", Units: []string{"n1", "n2"}}); err != nil {
		t.Fatal(err)
	}
	r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "part", Amount: 1}}, Duration: 1000, NotBefore: t0 + 100, Deadline: t0 + 1100}})
	if err != nil {
		t.Fatal(err)
	}
	gone := r.GetUnits()[0]
	res, err := l.ChangeUnits(ctx, op(), "part", []string{"n3"}, []string{gone})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetUnits()) != 2 || slices.Contains(res.GetUnits(), gone) || res.GetCapacity() != 2 {
		t.Fatalf("resource after the change: %v", res)
	}
	got, err := l.Get(ctx, r.GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.GetUnits(), gone) {
		t.Fatalf("reservation still on %s: %v", gone, got.GetUnits())
	}
	evs, err := l.History(ctx, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.GetType() != ledgerdv1.EventType_EVENT_TYPE_RESOURCE || last.GetAction() != "units_changed" ||
		evs[len(evs)-2].GetType() != ledgerdv1.EventType_EVENT_TYPE_UNITS_REMAPPED {
		t.Errorf("last events %v, %v", evs[len(evs)-2], last)
	}
	// A second booking over the same window takes the other unit: the
	// first one's unit cannot go now.
	if _, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "part", Amount: 1}}, Duration: 1000, NotBefore: t0 + 100, Deadline: t0 + 1100}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ChangeUnits(ctx, op(), "part", nil, got.GetUnits()); !errors.Is(err, ledger.ErrInUse) || !strings.Contains(err.Error(), r.GetId()) {
		t.Fatalf("removing a booked unit without a spare: %v", err)
	}
	var fe *ledger.FieldError
	if _, err := l.ChangeUnits(ctx, op(), "part", []string{"n3"}, nil); !errors.As(err, &fe) || fe.Field != "add[0]" {
		t.Fatalf("adding a unit it has: %v", err)
	}
}
