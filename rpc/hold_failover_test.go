package rpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestHoldExpiresAcrossLeaderChange: a hold taken through the old leader
// expires under the new one (expiry is driven by the leader's ticks through
// the log, so it must survive the leader that granted it), and the capacity
// it held is bookable again.
func TestHoldExpiresAcrossLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	ctx := context.Background()
	c := agenttest.NewCluster(t, 3, rpc.Options{Auth: agenttest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), agenttest.TokenOps)
	if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "gpu", Capacity: 8}); err != nil {
		t.Fatal(err)
	}
	old := c.WaitLeader(15 * time.Second)
	acme := clusterClient(t, []string{old.Addr}, agenttest.TokenAcme)
	const ttl = 2 * time.Second
	shape := realShape(8, time.Hour)
	held, err := acme.Hold(ctx, &ledgerdv1.HoldRequest{Shape: shape, HoldTtl: durationpb.New(ttl)})
	if err != nil {
		t.Fatal(err)
	}
	if held.State != ledgerdv1.ReservationState_RESERVATION_STATE_HELD {
		t.Fatalf("hold state %v", held.State)
	}
	c.Stop(old)
	var rest []string
	for _, a := range c.Addrs() {
		if a != old.Addr {
			rest = append(rest, a)
		}
	}
	survivors := clusterClient(t, rest, agenttest.TokenAcme)

	// Every surviving node must see the hold expire: TTL, plus an election,
	// plus one tick interval, with generous slack for a loaded machine.
	// Each node's state machine says when it applies an entry.
	for _, s := range c.Servers {
		if s == old {
			continue
		}
		waitFSM(t, s.FSM, 30*time.Second, fmt.Sprintf("node %s: the hold expires after its %v TTL and a leader change", s.Name, ttl), func() bool {
			r, ok := s.FSM.Get(held.Id)
			return ok && r.GetState() == fsmv1.Reservation_STATE_EXPIRED
		})
	}
	// And the API of every survivor says so.
	for _, addr := range rest {
		one := clusterClient(t, []string{addr}, agenttest.TokenAcme)
		if r, err := one.Get(ctx, held.Id); err != nil || r.State != ledgerdv1.ReservationState_RESERVATION_STATE_EXPIRED {
			t.Fatalf("node %s: %v %v, want EXPIRED", addr, r.GetState(), err)
		}
	}
	// The capacity it held is free again: the same full-capacity shape fits.
	r, err := survivors.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: shape})
	if err != nil {
		t.Fatalf("reserve after expiry: %v", err)
	}
	if !r.Start.AsTime().Equal(shape.NotBefore.AsTime().Truncate(time.Millisecond)) {
		t.Fatalf("reserve after expiry starts at %v, want %v (the expired hold's slot)", r.Start.AsTime(), shape.NotBefore.AsTime())
	}
}
