package rpc_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// TestCompleteOverConnect ends an active reservation early at now and
// announces an early end for a committed one; the freed capacity is
// bookable at once and the reservation keeps its requested duration.
func TestCompleteOverConnect(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	globex := newAPI(s.URLs[0], agenttest.TokenGlobex)
	complete := func(c api, id string, at *timestamppb.Timestamp) (*ledgerdv1.Reservation, error) {
		r, err := c.res.Complete(ctx, connect.NewRequest(&ledgerdv1.CompleteRequest{Id: id, At: at}))
		if err != nil {
			return nil, err
		}
		return r.Msg.Reservation, nil
	}

	// All 8 GPUs for two hours, starting now.
	a := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 8, 2*time.Hour, 0, 0)}))).Msg.Reservation
	if a.State != ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE {
		t.Fatalf("reserve = %v", a)
	}
	// A future one on all GPUs, from 3h to 5h.
	b := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 8, 2*time.Hour, 3*time.Hour, 0)}))).Msg.Reservation

	refusals := []struct {
		name  string
		c     api
		id    string
		at    *timestamppb.Timestamp
		code  connect.Code
		field string
	}{
		{"other tenant", globex, a.Id, nil, connect.CodePermissionDenied, ""},
		{"unknown id", acme, "nope", nil, connect.CodeNotFound, ""},
		{"empty id", acme, "", nil, connect.CodeInvalidArgument, "id"},
		{"not begun", acme, b.Id, nil, connect.CodeInvalidArgument, "at"},
		{"at the booked end", acme, a.Id, ts(2 * time.Hour), connect.CodeInvalidArgument, "at"},
		{"invalid timestamp", acme, a.Id, &timestamppb.Timestamp{Seconds: -1 << 62}, connect.CodeInvalidArgument, "at"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			refusal(t, ops, func() error { _, err := complete(tc.c, tc.id, tc.at); return err }, tc.code, tc.field)
		})
	}

	// Announce that b ends after 30 minutes: it stays committed, shortened.
	got := must[*ledgerdv1.Reservation](t)(complete(acme, b.Id, ts(3*time.Hour+30*time.Minute)))
	if got.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED || !got.End.AsTime().Equal(t0.Add(3*time.Hour+30*time.Minute)) ||
		got.RequestedDuration.AsDuration() != 2*time.Hour || !got.ActualEnd.AsTime().Equal(got.End.AsTime()) {
		t.Fatalf("announced completion = %v", got)
	}

	// Complete a after 40 minutes: COMPLETED now, the GPUs are free again.
	s.Clock.Advance(40 * time.Minute)
	got = must[*ledgerdv1.Reservation](t)(complete(acme, a.Id, nil))
	if got.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMPLETED || !got.End.AsTime().Equal(t0.Add(40*time.Minute)) ||
		got.RequestedDuration.AsDuration() != 2*time.Hour || !got.ActualEnd.AsTime().Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("completion = %v", got)
	}
	if _, err := complete(acme, a.Id, nil); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("second completion: %v, want FailedPrecondition", err)
	}
	// The freed hour before b and the freed tail after it are bookable.
	for _, nb := range []time.Duration{40 * time.Minute, 3*time.Hour + 30*time.Minute} {
		r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 8, 90*time.Minute, nb, 0)}))).Msg.Reservation
		if !r.Start.AsTime().Equal(t0.Add(nb)) {
			t.Fatalf("reserve from %v starts at %v", nb, r.Start.AsTime().Sub(t0))
		}
	}

	// Watchers see the completion in the history.
	h := must[*connect.Response[ledgerdv1.HistoryResponse]](t)(acme.res.History(ctx, connect.NewRequest(&ledgerdv1.HistoryRequest{})))
	actions := map[string]bool{}
	for _, e := range h.Msg.Events {
		if e.Reservation.GetId() == a.Id || e.Reservation.GetId() == b.Id {
			actions[e.Action] = true
		}
	}
	if !actions["shortened"] || !actions["completed"] {
		t.Fatalf("history actions %v, want shortened and completed", actions)
	}
}
