package fsm

import (
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Approval: a request that a limit entry routes to a person is admitted
// as PENDING_APPROVAL. It holds its capacity like a hold (planner
// booking, usage, an expiry timer at hold_expires_millis that the
// leader's expiry tick fires) until an operator approves it (COMMITTED),
// denies it with a reason (DENIED, capacity released), its owner aborts
// it (ABORTED), or nobody answers in time (EXPIRED).

// decide applies TYPE_APPROVE (approve) and TYPE_DENY.
func (s *state) decide(cmd *fsmv1.Command, approve bool) *fsmv1.Result {
	if !cmd.GetPrivileged() {
		return &fsmv1.Result{Status: fsmv1.Result_STATUS_PERMISSION_DENIED, Message: "only an operator may approve or deny a request"}
	}
	d := cmd.GetDecision()
	if fe := checkDecision(d, approve, s.ver); fe != nil {
		return fe.result()
	}
	r, found := s.resv.get(d.GetId())
	if !found {
		return notFound(fmt.Sprintf("reservation %q not found", d.GetId()))
	}
	if r.GetState() != fsmv1.Reservation_STATE_PENDING_APPROVAL {
		if approve {
			return wrongState(r, "approve")
		}
		return wrongState(r, "deny")
	}
	if !approve {
		s.releaseRow(r)
	}
	n := s.change(r)
	n.HoldExpiresMillis = 0
	n.DecisionReason = d.GetReason()
	if approve {
		n.State = fsmv1.Reservation_STATE_COMMITTED
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_APPROVED, n, nil)
		return okResult(n)
	}
	n.State = fsmv1.Reservation_STATE_DENIED
	s.put(n.Id, n)
	s.emit(fsmv1.Event_TYPE_DENIED, n, nil)
	return okResult(n)
}

// checkDecision is the stateless check of an approval or denial.
func checkDecision(d *fsmv1.Decision, approve bool, ver uint32) *FieldError {
	if fe := checkTargetID("decision.id", d.GetId(), ver); fe != nil {
		return fe
	}
	switch {
	case !approve && d.GetReason() == "":
		return fieldErr("decision.reason", "a denial needs a reason")
	case len(d.GetReason()) > maxReasonLen:
		return fieldErr("decision.reason", fmt.Sprintf("longer than %d bytes", maxReasonLen))
	}
	return nil
}
