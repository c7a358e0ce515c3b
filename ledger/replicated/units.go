package replicated

import (
	"context"
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

var _ ledger.UnitLedger = (*Ledger)(nil)

// UnitDown implements ledger.UnitLedger. Like every write it goes through
// apply, which refuses it (ErrUnavailable, ErrMidUpgrade) while some
// server cannot apply envelope version 4.
func (l *Ledger) UnitDown(ctx context.Context, a ledger.UnitDownArgs) (*ledgerdv1.Resource, string, error) {
	cmd := envelope(fsmv1.Command_TYPE_UNIT_DOWN, a.Write)
	cmd.Payload = &fsmv1.Command_UnitDown{UnitDown: &fsmv1.UnitDown{Resource: a.Name, Unit: a.Unit, FromMillis: a.From, ToMillis: a.To, Id: a.ID}}
	res, err := l.apply(ctx, "unit down", cmd)
	if err != nil {
		return nil, "", err
	}
	r := res.GetResource()
	id := a.ID
	if id == "" {
		id = fmt.Sprintf("down-%020d", res.GetVersion())
	}
	return resourceToAPI(r), id, nil
}

// UnitUp implements ledger.UnitLedger.
func (l *Ledger) UnitUp(ctx context.Context, w ledger.Write, name, id string) (*ledgerdv1.Resource, error) {
	cmd := envelope(fsmv1.Command_TYPE_UNIT_UP, w)
	cmd.Payload = &fsmv1.Command_UnitUp{UnitUp: &fsmv1.UnitUp{Resource: name, Id: id}}
	res, err := l.apply(ctx, "unit up", cmd)
	if err != nil {
		return nil, err
	}
	return resourceToAPI(res.GetResource()), nil
}

// ChangeUnits implements ledger.UnitLedger. Like UnitDown it needs every
// server to apply envelope version 4.
func (l *Ledger) ChangeUnits(ctx context.Context, w ledger.Write, name string, add, remove []string) (*ledgerdv1.Resource, error) {
	cmd := envelope(fsmv1.Command_TYPE_CHANGE_UNITS, w)
	cmd.Payload = &fsmv1.Command_ChangeUnits{ChangeUnits: &fsmv1.ChangeUnits{Resource: name, Add: add, Remove: remove}}
	res, err := l.apply(ctx, "change units", cmd)
	if err != nil {
		return nil, err
	}
	return resourceToAPI(res.GetResource()), nil
}

// UnitBookings implements ledger.UnitLedger.
func (l *Ledger) UnitBookings(ctx context.Context, resource string, stale bool) ([]ledger.UnitBooking, []*ledgerdv1.UnitWindow, error) {
	if err := l.barrier(ctx, "unit bookings", stale); err != nil {
		return nil, nil, err
	}
	books, downs, ok := l.fsm.UnitBookings(resource)
	if !ok {
		if _, found := l.fsm.Resource(resource); !found {
			return nil, nil, fmt.Errorf("unit bookings: %w", outcome{fmt.Sprintf("resource %q not found", resource), ledger.ErrNotFound})
		}
		return nil, nil, fmt.Errorf("unit bookings: %w", &ledger.FieldError{Field: "name", Reason: fmt.Sprintf("resource %q has no units", resource)})
	}
	out := make([]ledger.UnitBooking, len(books))
	for i, b := range books {
		out[i] = ledger.UnitBooking{ID: b.ID, Pending: b.Pending, State: ledgerdv1.ReservationState(b.State), Start: b.Start, End: b.End, Units: b.Units}
	}
	ws := make([]*ledgerdv1.UnitWindow, len(downs))
	for i, d := range downs {
		ws[i] = unitWindowToAPI(d)
	}
	return out, ws, nil
}

func unitWindowToAPI(d *fsmv1.UnitDown) *ledgerdv1.UnitWindow {
	return &ledgerdv1.UnitWindow{Id: d.GetId(), Unit: d.GetUnit(), Start: ledger.MsToTimestamp(d.GetFromMillis()), End: ledger.MsToTimestamp(d.GetToMillis())}
}

// unitsToAPI fills in the units of a reservation (and of its pending new
// shape): the parts' units in the order of the parts.
func unitsToAPI(out *ledgerdv1.Reservation, r *fsmv1.Reservation) {
	for _, p := range r.GetParts() {
		out.Units = append(out.Units, p.GetUnits()...)
	}
	if out.Pending != nil {
		for _, p := range r.GetPending().GetParts() {
			out.Pending.Units = append(out.Pending.Units, p.GetUnits()...)
		}
	}
}

// resourceUnitsToAPI fills in a resource's units, unit policy and down
// windows (those not yet ended as of the resource's last change).
func resourceUnitsToAPI(out *ledgerdv1.Resource, r *fsmv1.Resource) {
	if len(r.GetUnits()) == 0 {
		return
	}
	out.Units = r.GetUnits()
	out.UnitPolicy = ledgerdv1.UnitPolicy_UNIT_POLICY_REMAP
	if r.GetUnitPolicy() == fsmv1.UnitPolicy_UNIT_POLICY_REFUSE {
		out.UnitPolicy = ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE
	}
	for _, d := range r.GetUnitDowns() {
		out.UnitDowns = append(out.UnitDowns, unitWindowToAPI(d))
	}
}

// unitEventType maps the unit events to the public event types.
func unitEventType(t fsmv1.Event_Type) (ledgerdv1.EventType, bool) {
	switch t {
	case fsmv1.Event_TYPE_UNITS_REMAPPED:
		return ledgerdv1.EventType_EVENT_TYPE_UNITS_REMAPPED, true
	case fsmv1.Event_TYPE_UNIT_DOWN, fsmv1.Event_TYPE_UNIT_UP:
		return ledgerdv1.EventType_EVENT_TYPE_UNIT_WINDOW, true
	}
	return 0, false
}

// fsmUnitPolicy is the fsm form of a public unit policy.
func fsmUnitPolicy(p ledgerdv1.UnitPolicy) fsmv1.UnitPolicy {
	switch p {
	case ledgerdv1.UnitPolicy_UNIT_POLICY_REMAP:
		return fsmv1.UnitPolicy_UNIT_POLICY_REMAP
	case ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE:
		return fsmv1.UnitPolicy_UNIT_POLICY_REFUSE
	}
	return fsmv1.UnitPolicy(p)
}
