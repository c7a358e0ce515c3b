package rpc_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

func coSub(amount int64, start, dur time.Duration) *ledgerdv1.CoSubRequest {
	return &ledgerdv1.CoSubRequest{Amount: amount, Start: ts(start), Duration: durationpb.New(dur)}
}

// TestCoReserveOverConnect: over a RELAXED resource lab (10 units, v* =
// 0.5, a learned release model with P = 0.5 that a booking of acme has
// ended by half its time) and gpu (8 units, REJECT), a co-reservation
// takes gpu where it fits rigidly and lab by overlap only where nothing
// does, with the probabilities and the joint probability in the response;
// a higher min_joint refuses it and changes nothing; the sub-reservations
// are ordinary reservations afterwards (Get, Cancel by their "<id>/i").
func TestCoReserveOverConnect(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	createPolicyResource(t, ops, &ledgerdv1.Resource{Name: "lab", Capacity: 10, Policy: ledgerdv1.Policy_POLICY_RELAXED, MinSuccessPermille: 500})
	for range 20 {
		r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("lab", 1, s.Clock.Now().Sub(t0), 2*time.Hour)}))).Msg.Reservation
		s.Clock.Advance(time.Hour)
		must[*connect.Response[ledgerdv1.CompleteResponse]](t)(acme.res.Complete(ctx, connect.NewRequest(&ledgerdv1.CompleteRequest{Id: r.Id})))
	}
	now := s.Clock.Now().Sub(t0)
	// lab and gpu are full over [now+1h, now+3h).
	must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("lab", 10, now+time.Hour, 2*time.Hour)})))
	must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("gpu", 8, now+time.Hour, 2*time.Hour)})))

	req := func(minJoint uint32) *ledgerdv1.CoReserveRequest {
		return &ledgerdv1.CoReserveRequest{Id: "co", Candidates: []string{"lab", "gpu"}, MinJointPermille: minJoint,
			Labels: map[string]string{"run": "7"},
			Subs:   []*ledgerdv1.CoSubRequest{coSub(4, now+5*time.Hour, time.Hour), coSub(10, now+2*time.Hour, 2*time.Hour)}}
	}
	refusal(t, ops, func() error {
		_, err := acme.res.CoReserve(ctx, connect.NewRequest(req(501)))
		return err
	}, connect.CodeFailedPrecondition, "")

	out := must[*connect.Response[ledgerdv1.CoReserveResponse]](t)(acme.res.CoReserve(ctx, connect.NewRequest(req(500)))).Msg
	want := []struct {
		id, res string
		p       uint32
		relaxed bool
	}{{"co/0", "lab", 1000, false}, {"co/1", "lab", 500, true}}
	if out.JointPermille != 500 || len(out.Placements) != len(want) {
		t.Fatalf("co-reservation = %v", out)
	}
	for i, w := range want {
		p := out.Placements[i]
		r := p.Reservation
		if p.Resource != w.res || p.ProbabilityPermille != w.p || r.Id != w.id || r.Relaxed != w.relaxed || r.ProbabilityPermille != w.p ||
			r.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED || r.Labels["run"] != "7" || r.Parts[0].Resource != w.res {
			t.Fatalf("placement %d = %v, want %+v", i, p, w)
		}
	}
	// The first sub-request fits gpu too, but lab is the first candidate;
	// with gpu first it goes there.
	gpuFirst := &ledgerdv1.CoReserveRequest{Candidates: []string{"gpu", "lab"}, Subs: []*ledgerdv1.CoSubRequest{coSub(4, now+5*time.Hour, time.Hour)}}
	if p := must[*connect.Response[ledgerdv1.CoReserveResponse]](t)(acme.res.CoReserve(ctx, connect.NewRequest(gpuFirst))).Msg.Placements; p[0].Resource != "gpu" || p[0].ProbabilityPermille != 1000 {
		t.Fatalf("gpu-first placement = %v", p)
	}

	got := must[*connect.Response[ledgerdv1.CancelResponse]](t)(acme.res.Cancel(ctx, connect.NewRequest(&ledgerdv1.CancelRequest{Id: "co/0"}))).Msg.Reservation
	if got.State != ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED {
		t.Fatalf("cancelled co/0 = %v", got)
	}
	if got := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: "co/1"}))).Msg.Reservation; got.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("co/1 after cancelling co/0 = %v", got)
	}
	refusal(t, ops, func() error {
		_, err := acme.res.CoReserve(ctx, connect.NewRequest(req(0)))
		return err
	}, connect.CodeAlreadyExists, "")
}

// TestCoReserveBadInputs: every malformed co-reservation names the field
// at fault and changes nothing.
func TestCoReserveBadInputs(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	now := s.Clock.Now().Sub(t0)
	ok := func() *ledgerdv1.CoReserveRequest {
		return &ledgerdv1.CoReserveRequest{Candidates: []string{"cpu", "gpu"}, Subs: []*ledgerdv1.CoSubRequest{coSub(1, now+time.Hour, time.Hour)}}
	}
	cases := []struct {
		name  string
		edit  func(*ledgerdv1.CoReserveRequest)
		field string
	}{
		{"no subs", func(r *ledgerdv1.CoReserveRequest) { r.Subs = nil }, "subs"},
		{"no candidates", func(r *ledgerdv1.CoReserveRequest) { r.Candidates = nil }, "candidates"},
		{"bad candidate name", func(r *ledgerdv1.CoReserveRequest) { r.Candidates[1] = "has space" }, "candidates[1]"},
		{"unknown candidate", func(r *ledgerdv1.CoReserveRequest) { r.Candidates[1] = "tpu" }, "candidates[1]"},
		{"candidate twice", func(r *ledgerdv1.CoReserveRequest) { r.Candidates[1] = "cpu" }, "candidates[1]"},
		{"min joint above 1", func(r *ledgerdv1.CoReserveRequest) { r.MinJointPermille = 1001 }, "min_joint_permille"},
		{"zero amount", func(r *ledgerdv1.CoReserveRequest) { r.Subs[0].Amount = 0 }, "subs[0].amount"},
		{"no start", func(r *ledgerdv1.CoReserveRequest) { r.Subs[0].Start = nil }, "subs[0].start"},
		{"start in the past", func(r *ledgerdv1.CoReserveRequest) { r.Subs[0].Start = ts(now - time.Hour) }, "subs[0].start"},
		{"no duration", func(r *ledgerdv1.CoReserveRequest) { r.Subs[0].Duration = nil }, "subs[0].duration"},
		{"bad id", func(r *ledgerdv1.CoReserveRequest) { r.Id = "a/b" }, "id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.edit(r)
			refusal(t, ops, func() error {
				_, err := acme.res.CoReserve(ctx, connect.NewRequest(r))
				return err
			}, connect.CodeInvalidArgument, tc.field)
		})
	}
}
