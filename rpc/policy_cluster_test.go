package rpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/rpctest"
)

// TestPoliciesOnRealCluster runs variable jobs on a MOVE_VARIABLE resource
// through a real three-node Raft cluster: writes through followers, every
// replica's scheduler reaching the same plan, and the plan surviving the
// loss of the leader (the new leader moves the other job the same way).
func TestPoliciesOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	ctx := context.Background()
	c := rpctest.NewCluster(t, 3, rpc.Options{Auth: rpctest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), rpctest.TokenOps)
	if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "batch", Capacity: 10, Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE}); err != nil {
		t.Fatal(err)
	}
	// Two jobs of the whole resource, submitted through different nodes:
	// [1h, 3h) and [3h, 4h) from base.
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	var jobs []*ledgerdv1.Reservation
	for i, d := range []time.Duration{2 * time.Hour, time.Hour} {
		acme := clusterClient(t, []string{c.Addrs()[i+1]}, rpctest.TokenAcme)
		j, err := acme.SubmitJob(ctx, &ledgerdv1.SubmitJobRequest{Resource: "batch", Amount: 10, Duration: durationpb.New(d), NotBefore: timestamppb.New(base)})
		if err != nil {
			t.Fatalf("submit via node %d: %v", i+1, err)
		}
		jobs = append(jobs, j)
	}
	acme := clusterClient(t, c.Addrs(), rpctest.TokenAcme)
	reserveInside := func(j *ledgerdv1.Reservation) *ledgerdv1.ReserveResponse {
		t.Helper()
		resp, err := acme.ReserveMoving(ctx, &ledgerdv1.ReserveRequest{Shape: &ledgerdv1.Shape{
			Parts:      []*ledgerdv1.ResourceAmount{{Resource: "batch", Amount: 4}},
			Duration:   durationpb.New(30 * time.Minute),
			ExactStart: timestamppb.New(j.Start.AsTime().Add(15 * time.Minute)),
		}})
		if err != nil || len(resp.Moved) == 0 || resp.Moved[0].Id != j.Id {
			t.Fatalf("reserve inside %s: %v, %v", j.Id, resp, err)
		}
		return resp
	}
	first := reserveInside(jobs[0])

	// Every replica has applied the move the same way.
	leader := c.WaitLeader(10 * time.Second)
	want := leader.FSM.AppliedIndex()
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range c.Servers {
		for s.FSM.AppliedIndex() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s stuck at index %d < %d", s.Name, s.FSM.AppliedIndex(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, j := range jobs {
		ref, _ := leader.FSM.Get(j.Id)
		for _, s := range c.Servers {
			if got, ok := s.FSM.Get(j.Id); !ok || !proto.Equal(got, ref) {
				t.Fatalf("%s has %s as %v, the leader as %v", s.Name, j.Id, got, ref)
			}
		}
	}
	if got, _ := leader.FSM.Get(jobs[0].Id); got.GetPushes() != 1 || got.GetStartMillis() != first.Moved[0].To.AsTime().UnixMilli() {
		t.Fatalf("moved job = %v, want pushed once to %v", got, first.Moved[0].To.AsTime())
	}

	// Without the old leader, the new one plans from the replicated
	// scheduler state: a reservation inside the second job moves it.
	c.Stop(leader)
	c.WaitLeader(15 * time.Second)
	j2, err := acme.Get(ctx, jobs[1].Id)
	if err != nil {
		t.Fatal(err)
	}
	second := reserveInside(j2)
	if got, err := acme.Get(ctx, jobs[1].Id); err != nil || got.Pushes != 1 || !got.Start.AsTime().Equal(second.Moved[0].To.AsTime()) {
		t.Fatalf("second job after the fail-over: %v, %v", got, err)
	}
}
