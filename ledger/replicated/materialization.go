package replicated

import (
	"context"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

var _ ledger.MaterializationLedger = (*Ledger)(nil)

// SetMaterialization implements ledger.MaterializationLedger. Like every
// write it goes through apply, which refuses it (ErrUnavailable,
// ErrMidUpgrade) while some server cannot apply envelope version 4.
func (l *Ledger) SetMaterialization(ctx context.Context, w ledger.Write, updates []ledger.MaterializationUpdate) error {
	cmd := envelope(fsmv1.Command_TYPE_SET_MATERIALIZATION, w)
	sm := &fsmv1.SetMaterialization{Updates: make([]*fsmv1.MaterializationUpdate, len(updates))}
	for i, u := range updates {
		sm.Updates[i] = &fsmv1.MaterializationUpdate{Id: u.ID, Materialization: &fsmv1.Materialization{
			State: fsmMaterializationState(u.State), Message: u.Message, Name: u.Name, Units: u.Units,
			StartMillis: u.Start, EndMillis: u.End}}
	}
	cmd.Payload = &fsmv1.Command_SetMaterialization{SetMaterialization: sm}
	_, err := l.apply(ctx, "set materialization", cmd)
	return err
}

func fsmMaterializationState(s ledgerdv1.MaterializationState) fsmv1.Materialization_State {
	switch s {
	case ledgerdv1.MaterializationState_MATERIALIZATION_STATE_PENDING:
		return fsmv1.Materialization_STATE_PENDING
	case ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED:
		return fsmv1.Materialization_STATE_MATERIALIZED
	case ledgerdv1.MaterializationState_MATERIALIZATION_STATE_FAILED:
		return fsmv1.Materialization_STATE_FAILED
	case ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED:
		return fsmv1.Materialization_STATE_REMOVED
	}
	// The state machine refuses it, naming the field.
	return fsmv1.Materialization_State(s)
}

func apiMaterializationState(s fsmv1.Materialization_State) ledgerdv1.MaterializationState {
	switch s {
	case fsmv1.Materialization_STATE_PENDING:
		return ledgerdv1.MaterializationState_MATERIALIZATION_STATE_PENDING
	case fsmv1.Materialization_STATE_MATERIALIZED:
		return ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED
	case fsmv1.Materialization_STATE_FAILED:
		return ledgerdv1.MaterializationState_MATERIALIZATION_STATE_FAILED
	case fsmv1.Materialization_STATE_REMOVED:
		return ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED
	}
	return ledgerdv1.MaterializationState_MATERIALIZATION_STATE_UNSPECIFIED
}

// materializationToAPI fills in a reservation's materialization record.
func materializationToAPI(out *ledgerdv1.Reservation, r *fsmv1.Reservation) {
	m := r.GetMaterialization()
	if m == nil {
		return
	}
	a := &ledgerdv1.Materialization{State: apiMaterializationState(m.GetState()), Message: m.GetMessage(), Name: m.GetName(),
		Units: m.GetUnits(), Version: m.GetVersion(), Recorded: ledger.MsToTimestamp(m.GetAtMillis())}
	if m.GetEndMillis() > 0 {
		a.Start, a.End = ledger.MsToTimestamp(m.GetStartMillis()), ledger.MsToTimestamp(m.GetEndMillis())
	}
	out.Materialization = a
}
