package rpc

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// CoSub is one sub-request of a co-reservation: Amount units over
// [Start, Start+Duration) (Unix ms).
type CoSub struct {
	Amount, Start, Duration int64
}

// CoReserveArgs are the arguments of Ledger.CoReserve.
type CoReserveArgs struct {
	Write
	ID         string // empty: the ledger assigns one
	Subs       []CoSub
	Candidates []string
	MinJoint   uint32 // permille
	Labels     map[string]string
}

// CoReserve implements ReservationService.CoReserve.
func (h *reservations) CoReserve(ctx context.Context, req *connect.Request[ledgerdv1.CoReserveRequest]) (*connect.Response[ledgerdv1.CoReserveResponse], error) {
	m := req.Msg
	w, _, err := h.s.write(ctx, m.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	a, err := coReserveArgs(m)
	if err != nil {
		return nil, toConnect(err)
	}
	a.Write = w
	out, err := h.s.opts.Ledger.CoReserve(ctx, a)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(out), nil
}

// coReserveArgs validates a CoReserveRequest. Whether the starts lie in
// the past is decided by the ledger, against its log time.
func coReserveArgs(m *ledgerdv1.CoReserveRequest) (CoReserveArgs, error) {
	a := CoReserveArgs{ID: m.Id, Candidates: m.Candidates, MinJoint: m.MinJointPermille, Labels: m.Labels}
	if m.Id != "" {
		if err := checkID("id", m.Id); err != nil {
			return a, err
		}
	}
	switch {
	case len(m.Subs) == 0:
		return a, &FieldError{Field: "subs", Reason: "required"}
	case len(m.Subs) > maxParts:
		return a, &FieldError{Field: "subs", Reason: fmt.Sprintf("more than %d sub-requests", maxParts)}
	case len(m.Candidates) == 0:
		return a, &FieldError{Field: "candidates", Reason: "required"}
	case len(m.Candidates) > maxParts:
		return a, &FieldError{Field: "candidates", Reason: fmt.Sprintf("more than %d candidates", maxParts)}
	case m.MinJointPermille > maxPermille:
		return a, &FieldError{Field: "min_joint_permille", Reason: fmt.Sprintf("must be at most %d (a probability of 1)", maxPermille)}
	}
	for i, c := range m.Candidates {
		if err := checkName(fmt.Sprintf("candidates[%d]", i), c); err != nil {
			return a, err
		}
	}
	for i, s := range m.Subs {
		f := fmt.Sprintf("subs[%d].", i)
		if s.GetAmount() <= 0 {
			return a, &FieldError{Field: f + "amount", Reason: "must be > 0"}
		}
		if s.GetStart() == nil {
			return a, &FieldError{Field: f + "start", Reason: "required"}
		}
		start, err := tsMs(f+"start", s.GetStart())
		if err != nil {
			return a, err
		}
		d, err := durMs(f+"duration", s.GetDuration())
		if err != nil {
			return a, err
		}
		if start > maxTimestampMs-d {
			return a, &FieldError{Field: f + "duration", Reason: "start + duration lies after 9999"}
		}
		a.Subs = append(a.Subs, CoSub{Amount: s.GetAmount(), Start: start, Duration: d})
	}
	if err := checkLabels("labels", m.Labels); err != nil {
		return a, err
	}
	return a, nil
}

// CoReserve implements Ledger.
func (l *FSMLedger) CoReserve(ctx context.Context, a CoReserveArgs) (*ledgerdv1.CoReserveResponse, error) {
	cmd := envelope(fsmv1.Command_TYPE_CO_RESERVE, a.Write)
	c := &fsmv1.CoReserve{Id: a.ID, Candidates: a.Candidates, MinJointPermille: a.MinJoint, Labels: a.Labels}
	for _, s := range a.Subs {
		c.Subs = append(c.Subs, &fsmv1.CoSub{Amount: s.Amount, StartMillis: s.Start, DurationMillis: s.Duration})
	}
	cmd.Payload = &fsmv1.Command_CoReserve{CoReserve: c}
	res, err := l.apply(ctx, "co-reserve", cmd)
	if err != nil {
		return nil, err
	}
	ca := res.GetCoAdmission()
	out := &ledgerdv1.CoReserveResponse{JointPermille: ca.GetJointPermille()}
	for _, p := range ca.GetPlacements() {
		out.Placements = append(out.Placements, &ledgerdv1.CoPlacement{
			Resource: p.GetResource(), ProbabilityPermille: p.GetProbabilityPermille(), Reservation: reservationToAPI(p.GetReservation()),
		})
	}
	return out, nil
}
