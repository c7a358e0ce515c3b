package replicated

import (
	"context"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// CoReserve implements Ledger.
func (l *Ledger) CoReserve(ctx context.Context, a ledger.CoReserveArgs) (*ledgerdv1.CoReserveResponse, error) {
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
