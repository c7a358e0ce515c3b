package rpc

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

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
	out, err := h.l.CoReserve(ctx, a)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(out), nil
}

// coReserveArgs validates a CoReserveRequest. Whether the starts lie in
// the past is decided by the ledger, against its log time.
func coReserveArgs(m *ledgerdv1.CoReserveRequest) (ledger.CoReserveArgs, error) {
	a := ledger.CoReserveArgs{ID: m.Id, Candidates: m.Candidates, MinJoint: m.MinJointPermille, Labels: m.Labels}
	if m.Id != "" {
		if err := checkID("id", m.Id); err != nil {
			return a, err
		}
	}
	switch {
	case len(m.Subs) == 0:
		return a, &ledger.FieldError{Field: "subs", Reason: "required"}
	case len(m.Subs) > maxParts:
		return a, &ledger.FieldError{Field: "subs", Reason: fmt.Sprintf("more than %d sub-requests", maxParts)}
	case len(m.Candidates) == 0:
		return a, &ledger.FieldError{Field: "candidates", Reason: "required"}
	case len(m.Candidates) > maxParts:
		return a, &ledger.FieldError{Field: "candidates", Reason: fmt.Sprintf("more than %d candidates", maxParts)}
	case m.MinJointPermille > maxPermille:
		return a, &ledger.FieldError{Field: "min_joint_permille", Reason: fmt.Sprintf("must be at most %d (a probability of 1)", maxPermille)}
	}
	for i, c := range m.Candidates {
		if err := checkName(fmt.Sprintf("candidates[%d]", i), c); err != nil {
			return a, err
		}
	}
	for i, s := range m.Subs {
		f := fmt.Sprintf("subs[%d].", i)
		if s.GetAmount() <= 0 {
			return a, &ledger.FieldError{Field: f + "amount", Reason: "must be > 0"}
		}
		if s.GetStart() == nil {
			return a, &ledger.FieldError{Field: f + "start", Reason: "required"}
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
			return a, &ledger.FieldError{Field: f + "duration", Reason: "start + duration lies after 9999"}
		}
		a.Subs = append(a.Subs, ledger.CoSub{Amount: s.GetAmount(), Start: start, Duration: d})
	}
	if err := checkLabels("labels", m.Labels); err != nil {
		return a, err
	}
	return a, nil
}
