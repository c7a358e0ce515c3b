package rpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
)

// waitApplied waits until every server has applied what leader has.
func waitApplied(t *testing.T, c *agenttest.Cluster, leader *agenttest.Server) {
	t.Helper()
	want := leader.FSM.AppliedIndex()
	for _, s := range c.Servers {
		waitFSM(t, s.FSM, 10*time.Second, fmt.Sprintf("%s applies index %d", s.Name, want), func() bool { return s.FSM.AppliedIndex() >= want })
	}
}

// TestPoliciesOnRealCluster runs variable jobs on a MOVE_VARIABLE resource
// through a real three-node Raft cluster: writes through followers, every
// replica's scheduler reaching the same plan, and the plan surviving the
// loss of the leader (the new leader moves the other job the same way).
func TestPoliciesOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	ctx := context.Background()
	c := agenttest.NewCluster(t, 3, rpc.Options{Auth: agenttest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), agenttest.TokenOps)
	if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "batch", Capacity: 10, Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE}); err != nil {
		t.Fatal(err)
	}
	// Two jobs of the whole resource, submitted through different nodes:
	// [1h, 3h) and [3h, 4h) from base.
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	var jobs []*ledgerdv1.Reservation
	for i, d := range []time.Duration{2 * time.Hour, time.Hour} {
		acme := clusterClient(t, []string{c.Addrs()[i+1]}, agenttest.TokenAcme)
		j, err := acme.SubmitJob(ctx, &ledgerdv1.SubmitJobRequest{Resource: "batch", Amount: 10, Duration: durationpb.New(d), NotBefore: timestamppb.New(base)})
		if err != nil {
			t.Fatalf("submit via node %d: %v", i+1, err)
		}
		jobs = append(jobs, j)
	}
	acme := clusterClient(t, c.Addrs(), agenttest.TokenAcme)
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
	waitApplied(t, c, leader)
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

// TestCoReserveOnRealCluster books co-reservations through a follower of a
// real three-node Raft cluster: every replica holds the same
// sub-reservations, and after the leader is lost the new one places the
// next request from the replicated state (a is full, so it goes to b) and
// still knows the IDs already taken.
func TestCoReserveOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	ctx := context.Background()
	c := agenttest.NewCluster(t, 3, rpc.Options{Auth: agenttest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), agenttest.TokenOps)
	for _, r := range []*ledgerdv1.Resource{{Name: "a", Capacity: 4}, {Name: "b", Capacity: 8}} {
		if _, err := ops.CreateResource(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	req := func(id string) *ledgerdv1.CoReserveRequest {
		return &ledgerdv1.CoReserveRequest{Id: id, Candidates: []string{"a", "b"}, Subs: []*ledgerdv1.CoSubRequest{
			{Amount: 4, Start: timestamppb.New(base), Duration: durationpb.New(time.Hour)},
			{Amount: 3, Start: timestamppb.New(base), Duration: durationpb.New(time.Hour)},
		}}
	}
	leader := c.WaitLeader(10 * time.Second)
	var follower string
	for i, s := range c.Servers {
		if s != leader {
			follower = c.Addrs()[i]
		}
	}
	viaFollower := clusterClient(t, []string{follower}, agenttest.TokenAcme)
	out, err := viaFollower.CoReserve(ctx, req("co"))
	if err != nil || out.Placements[0].Resource != "a" || out.Placements[1].Resource != "b" {
		t.Fatalf("co-reserve via a follower: %v, %v", out, err)
	}
	waitApplied(t, c, leader)
	for _, s := range c.Servers {
		for _, id := range []string{"co/0", "co/1"} {
			ref, _ := leader.FSM.Get(id)
			if got, ok := s.FSM.Get(id); !ok || !proto.Equal(got, ref) {
				t.Fatalf("%s has %s as %v, the leader as %v", s.Name, id, got, ref)
			}
		}
	}

	c.Stop(leader)
	c.WaitLeader(15 * time.Second)
	acme := clusterClient(t, c.Addrs(), agenttest.TokenAcme)
	if _, err := acme.CoReserve(ctx, req("co")); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("the same id after the fail-over: %v, want already_exists", err)
	}
	next := req("co2")
	next.Subs = next.Subs[:1]
	if out, err := acme.CoReserve(ctx, next); err != nil || out.Placements[0].Resource != "b" {
		t.Fatalf("co-reserve after the fail-over: %v, %v", out, err)
	}
}
