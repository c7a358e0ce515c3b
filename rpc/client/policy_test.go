package client

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// TestPolicyCalls drives SetPolicy, SubmitJob (retried through an
// election, booked once), HoldMoving and ReserveMoving: a hold inside a
// job's slot moves it, aborting the hold lets it move back, and a
// reservation moves it again.
func TestPolicyCalls(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, 1)
	ops, acme := newClient(t, s, agenttest.TokenOps), newClient(t, s, agenttest.TokenAcme)
	acme.opts.MaxAttempts = 50
	res, err := ops.SetPolicy(ctx, &ledgerdv1.SetPolicyRequest{Name: "gpu", Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE, MaxPushes: 3})
	if err != nil || res.Policy != ledgerdv1.Policy_POLICY_MOVE_VARIABLE || res.MaxPushes != 3 {
		t.Fatalf("set policy: %v, %v", res, err)
	}

	downBriefly(s)
	job, err := acme.SubmitJob(ctx, &ledgerdv1.SubmitJobRequest{Resource: "gpu", Amount: 8, Duration: durationpb.New(time.Hour), NotBefore: timestamppb.New(t0.Add(time.Hour))})
	if err != nil {
		t.Fatalf("submit across an election: %v", err)
	}
	if n := countLive(t, acme); n != 1 {
		t.Fatalf("%d live jobs, want 1", n)
	}
	startOf := func() time.Duration {
		t.Helper()
		r, err := acme.Get(ctx, job.Id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Start.AsTime().Sub(t0)
	}

	inside := &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: 2}}, Duration: durationpb.New(30 * time.Minute), ExactStart: timestamppb.New(t0.Add(75 * time.Minute))}
	held, err := acme.HoldMoving(ctx, &ledgerdv1.HoldRequest{Shape: inside})
	if err != nil || len(held.Moved) != 1 || held.Moved[0].Id != job.Id || held.Moved[0].To.AsTime().Sub(t0) != 105*time.Minute {
		t.Fatalf("hold inside the job: %v, %v", held, err)
	}
	if _, err := acme.Abort(ctx, held.Reservation.Id, ""); err != nil {
		t.Fatal(err)
	}
	if got := startOf(); got != time.Hour {
		t.Fatalf("job starts at %v after the abort, want back at 1h", got)
	}
	booked, err := acme.ReserveMoving(ctx, &ledgerdv1.ReserveRequest{Shape: inside})
	if err != nil || len(booked.Moved) != 1 || booked.Reservation.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("reserve inside the job: %v, %v", booked, err)
	}
	if r, _ := acme.Get(ctx, job.Id); r.Pushes != 2 || r.Start.AsTime().Sub(t0) != 105*time.Minute {
		t.Fatalf("job after two pushes = %v", r)
	}
}
