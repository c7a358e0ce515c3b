package rpc_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
)

func reserveOp(amount int64) *ledgerdv1.BatchOperation {
	return &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Reserve{Reserve: &ledgerdv1.ReserveRequest{
		Shape: shape("gpu", amount, time.Hour, time.Hour, 2*time.Hour),
	}}}
}

// TestBatchLimits: a batch over the size limit is refused as a whole,
// naming the field; an operation without a request fails on its own,
// naming its index; the rate limit charges every operation.
func TestBatchLimits(t *testing.T) {
	ctx := context.Background()
	s, _ := newSite(t, agenttest.Options{API: rpc.Options{MaxBatch: 3, RateLimit: 0.001, RateBurst: 3}})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)

	_, err := acme.res.Batch(ctx, connect.NewRequest(&ledgerdv1.BatchRequest{Operations: []*ledgerdv1.BatchOperation{reserveOp(1), reserveOp(1), reserveOp(1), reserveOp(1)}}))
	if f, _ := rpc.BadField(err); connect.CodeOf(err) != connect.CodeInvalidArgument || f != "operations" {
		t.Fatalf("oversized batch: %v (field %q), want InvalidArgument naming operations", err, f)
	}
	// The refused call spent one token: two are left for three operations.
	resp, err := acme.res.Batch(ctx, connect.NewRequest(&ledgerdv1.BatchRequest{Operations: []*ledgerdv1.BatchOperation{reserveOp(1), {}, reserveOp(1)}}))
	if err != nil {
		t.Fatal(err)
	}
	rs := resp.Msg.Results
	if len(rs) != 3 {
		t.Fatalf("%d results for 3 operations", len(rs))
	}
	if rs[0].GetReserve().GetReservation().GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Errorf("operation 0 = %v, want a committed reservation", rs[0])
	}
	if e := rs[1].GetError(); e == nil || connect.Code(e.Code) != connect.CodeInvalidArgument || len(e.Details) == 0 {
		t.Errorf("empty operation = %v, want InvalidArgument with details", rs[1])
	} else if want := "invalid operations[1].op: exactly one operation must be set"; e.Message != want {
		t.Errorf("empty operation message %q, want %q", e.Message, want)
	}
	if e := rs[2].GetError(); e == nil || connect.Code(e.Code) != connect.CodeResourceExhausted {
		t.Errorf("operation beyond the rate limit = %v, want ResourceExhausted", rs[2])
	}
}

// TestBatchOnRealCluster: on a leader and through a follower's forwarding,
// a batch answers every operation in order as its unary call would: the
// writes enter the log in the given order, an overbooking operation is
// rejected with its own Rejection while the others commit, and an unknown
// id fails alone.
func TestBatchOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	ctx := context.Background()
	c := agenttest.NewCluster(t, 3, rpc.Options{Auth: agenttest.NewAuth(t)})
	leader := c.WaitLeader(10 * time.Second)
	var follower *agenttest.Server
	for _, s := range c.Servers {
		if s != leader {
			follower = s
		}
	}
	ops := newAPI("http://"+leader.Addr, agenttest.TokenOps)
	if _, err := ops.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "gpu", Capacity: 8}})); err != nil {
		t.Fatal(err)
	}
	soon := func(amount int64) *ledgerdv1.Shape {
		s := realShape(amount, time.Hour)
		s.Deadline = timestamppb.New(s.NotBefore.AsTime().Add(time.Hour))
		return s
	}
	acme := newAPI("http://"+leader.Addr, agenttest.TokenAcme)
	resp, err := acme.res.Batch(ctx, connect.NewRequest(&ledgerdv1.BatchRequest{Operations: []*ledgerdv1.BatchOperation{
		{Op: &ledgerdv1.BatchOperation_Hold{Hold: &ledgerdv1.HoldRequest{Shape: soon(2)}}},
		{Op: &ledgerdv1.BatchOperation_Reserve{Reserve: &ledgerdv1.ReserveRequest{Shape: soon(3)}}},
		{Op: &ledgerdv1.BatchOperation_Reserve{Reserve: &ledgerdv1.ReserveRequest{Shape: soon(4)}}},
		{Op: &ledgerdv1.BatchOperation_Cancel{Cancel: &ledgerdv1.CancelRequest{Id: "r-404"}}},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	rs := resp.Msg.Results
	held, booked := rs[0].GetHold().GetReservation(), rs[1].GetReserve().GetReservation()
	if held.GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_HELD || booked.GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("hold, reserve = %v, %v", rs[0], rs[1])
	}
	// Log order is (version, then member of a group entry): the leader
	// may put both in one group entry, whose reservations are named in
	// member order (fsm.GroupAutoID).
	if hv, bv := held.CreatedVersion, booked.CreatedVersion; hv > bv || hv == bv && held.Id >= booked.Id {
		t.Errorf("hold %s at version %d, reserve %s at %d: writes left the given order", held.Id, hv, booked.Id, bv)
	}
	if e := rs[2].GetError(); e == nil || connect.Code(e.Code) != connect.CodeFailedPrecondition {
		t.Errorf("overbooking reserve = %v, want FailedPrecondition", rs[2])
	}
	if e := rs[3].GetError(); e == nil || connect.Code(e.Code) != connect.CodeNotFound {
		t.Errorf("cancel of an unknown id = %v, want NotFound", rs[3])
	}
	// Through a follower: commit the hold, read both, cancel the booking.
	viaFollower := newAPI("http://"+follower.Addr, agenttest.TokenAcme)
	resp, err = viaFollower.res.Batch(ctx, connect.NewRequest(&ledgerdv1.BatchRequest{Operations: []*ledgerdv1.BatchOperation{
		{Op: &ledgerdv1.BatchOperation_Commit{Commit: &ledgerdv1.CommitRequest{Id: held.Id}}},
		{Op: &ledgerdv1.BatchOperation_Get{Get: &ledgerdv1.GetRequest{Id: booked.Id}}},
		{Op: &ledgerdv1.BatchOperation_Cancel{Cancel: &ledgerdv1.CancelRequest{Id: booked.Id}}},
		{Op: &ledgerdv1.BatchOperation_Modify{Modify: &ledgerdv1.ModifyRequest{Id: held.Id, Shape: soon(1)}}},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	rs = resp.Msg.Results
	if got := rs[0].GetCommit().GetReservation().GetState(); got != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Errorf("commit via follower = %v", rs[0])
	}
	if got := rs[1].GetGet().GetReservation(); got.GetId() != booked.Id {
		t.Errorf("get via follower = %v", rs[1])
	}
	if got := rs[2].GetCancel().GetReservation().GetState(); got != ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED {
		t.Errorf("cancel via follower = %v", rs[2])
	}
	// The modify ran concurrently with the commit: it sees the hold
	// either before (wrong state) or after the commit (pending shape).
	if rs[3].GetModify().GetReservation().GetPending() == nil && connect.Code(rs[3].GetError().GetCode()) != connect.CodeFailedPrecondition {
		t.Errorf("modify via follower = %v", rs[3])
	}
}
