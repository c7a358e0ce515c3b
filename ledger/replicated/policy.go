package replicated

import (
	"context"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// SetPolicy implements Ledger.
func (l *Ledger) SetPolicy(ctx context.Context, a ledger.PolicyArgs) (*ledgerdv1.Resource, error) {
	cmd := envelope(fsmv1.Command_TYPE_SET_POLICY, a.Write)
	cmd.Payload = &fsmv1.Command_SetPolicy{SetPolicy: &fsmv1.SetPolicy{Name: a.Name, Policy: policySpec(a.Policy, a.MinSuccess, a.MaxPushes)}}
	res, err := l.apply(ctx, "set policy", cmd)
	if err != nil {
		return nil, err
	}
	return resourceToAPI(res.GetResource()), nil
}

// SubmitJob implements Ledger.
func (l *Ledger) SubmitJob(ctx context.Context, a ledger.JobArgs) (*ledgerdv1.Reservation, error) {
	cmd := envelope(fsmv1.Command_TYPE_SUBMIT_JOB, a.Write)
	cmd.Payload = &fsmv1.Command_SubmitJob{SubmitJob: &fsmv1.SubmitJob{
		Id:              a.ID,
		Part:            &fsmv1.Part{Resource: a.Resource, Amount: a.Amount},
		DurationMillis:  a.Duration,
		NotBeforeMillis: a.NotBefore,
		Labels:          a.Labels,
	}}
	res, err := l.apply(ctx, "submit job", cmd)
	if err != nil {
		return nil, err
	}
	return reservationToAPI(res.GetReservation()), nil
}

// policySpec converts the public policy to the log's; the enums share their
// numbers, and REJECT without parameters is left absent as the log expects
// of resources that never had a policy.
func policySpec(p ledgerdv1.Policy, minSuccess, maxPushes uint32) *fsmv1.PolicySpec {
	if (p == ledgerdv1.Policy_POLICY_UNSPECIFIED || p == ledgerdv1.Policy_POLICY_REJECT) && minSuccess == 0 && maxPushes == 0 {
		return nil
	}
	return &fsmv1.PolicySpec{Policy: fsmv1.AdmissionPolicy(p), MinSuccessPermille: minSuccess, MaxPushes: maxPushes}
}

// policyToAPI fills the public resource's policy fields from the log's.
func policyToAPI(out *ledgerdv1.Resource, ps *fsmv1.PolicySpec) {
	out.Policy = ledgerdv1.Policy(ps.GetPolicy())
	if out.Policy == ledgerdv1.Policy_POLICY_UNSPECIFIED {
		out.Policy = ledgerdv1.Policy_POLICY_REJECT
	}
	out.MinSuccessPermille = ps.GetMinSuccessPermille()
	out.MaxPushes = ps.GetMaxPushes()
}

// schedulerToAPI fills the public reservation's policy fields from the
// log's row.
func schedulerToAPI(out *ledgerdv1.Reservation, r *fsmv1.Reservation) {
	out.Kind = ledgerdv1.ReservationKind_RESERVATION_KIND_RESERVATION
	if r.GetKind() == fsmv1.Reservation_KIND_VARIABLE_JOB {
		out.Kind = ledgerdv1.ReservationKind_RESERVATION_KIND_VARIABLE_JOB
	}
	out.ProbabilityPermille = r.GetProbabilityPermille()
	out.Relaxed = r.GetRelaxed()
	out.Pushes = r.GetPushes()
	out.ShortUnits = r.GetShortUnits()
	if ms := r.GetNotBeforeMillis(); ms != 0 {
		out.NotBefore = ledger.MsToTimestamp(ms)
	}
}

// movesToAPI converts the variable jobs an entry moved.
func movesToAPI(ms []*fsmv1.Move) []*ledgerdv1.MovedJob {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*ledgerdv1.MovedJob, len(ms))
	for i, m := range ms {
		out[i] = &ledgerdv1.MovedJob{Id: m.GetId(), From: ledger.MsToTimestamp(m.GetFromMillis()), To: ledger.MsToTimestamp(m.GetToMillis())}
	}
	return out
}

// policyEventType maps the fsm's policy event types to the public ones; ok
// is false for every other type.
func policyEventType(t fsmv1.Event_Type) (ledgerdv1.EventType, bool) {
	switch t {
	case fsmv1.Event_TYPE_REPLANNED:
		return ledgerdv1.EventType_EVENT_TYPE_REPLANNED, true
	case fsmv1.Event_TYPE_VIOLATED:
		return ledgerdv1.EventType_EVENT_TYPE_VIOLATED, true
	case fsmv1.Event_TYPE_JOB_SUBMITTED:
		return ledgerdv1.EventType_EVENT_TYPE_JOB_SUBMITTED, true
	case fsmv1.Event_TYPE_POLICY_CHANGED:
		return ledgerdv1.EventType_EVENT_TYPE_POLICY_CHANGED, true
	}
	return ledgerdv1.EventType_EVENT_TYPE_UNSPECIFIED, false
}
