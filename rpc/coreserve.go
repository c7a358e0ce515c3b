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
	w, _, err := h.s.write(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	a, err := coReserveArgs(m)
	if err != nil {
		return nil, h.s.fail(err)
	}
	a.Write = w
	out, err := h.l.CoReserve(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(out), nil
}

// coReserveArgs validates a CoReserveRequest. Whether the starts lie in
// the past is decided by the ledger, against its log time.
func coReserveArgs(m *ledgerdv1.CoReserveRequest) (ledger.CoReserveArgs, error) {
	a := ledger.CoReserveArgs{ID: m.Id, Candidates: m.Candidates, MinJoint: m.MinJointPermille, Labels: m.Labels}
	// The ID, the counts, the candidates, amounts, the end of time and
	// the labels are the ledger's to check (the state machine's Check);
	// the edge converts the wire's times.
	for i, s := range m.Subs {
		f := fmt.Sprintf("subs[%d].", i)
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
		a.Subs = append(a.Subs, ledger.CoSub{Amount: s.GetAmount(), Start: start, Duration: d})
	}
	return a, nil
}
