package follow_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/bridge/slurm"
	"github.com/ledgerd/ledgerd/bridge/slurm/slurmtest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/ledger"
)

// TestSlurmFollowsPartitionNodes: the resource imported from a real
// partition follows its nodes. The partition starts with n1–n3 of the
// four nodes; a booking is materialized on one of them; then the
// partition is changed with `scontrol update PartitionName=… Nodes=…` to
// drop that node and take n4. The bridge must make the resource's units
// equal the partition's nodes, move the booking off the removed node in
// the ledger (a UNITS_REMAPPED event) and update its Slurm reservation
// to the new node.
func TestSlurmFollowsPartitionNodes(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{})
	c.Run(t, "scontrol", "update", "PartitionName="+c.Partition, "Nodes=n[1-3]")
	ctx := context.Background()
	d, err := slurm.New(slurm.Config{Prefix: "ledgerd-", Env: c.Env(), User: c.SlurmUser,
		Scontrol: slurmtest.Bin("scontrol"), Sinfo: slurmtest.Bin("sinfo")})
	if err != nil {
		t.Fatal(err)
	}
	partNodes := func() []string {
		t.Helper()
		nodes, err := d.Nodes(ctx, c.Partition)
		if err != nil {
			t.Fatalf("nodes of %s: %v", c.Partition, err)
		}
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		slices.Sort(names)
		return slices.Compact(names)
	}
	// The import: a resource with the partition's nodes as units.
	imported := partNodes()
	if !slices.Equal(imported, []string{"n1", "n2", "n3"}) {
		t.Fatalf("partition %s has %v after the update, want n1–n3", c.Partition, imported)
	}
	a := slurmAgent(t, c)
	l := a.Ledger()
	op := ledger.Write{Tenant: "ops", Operator: true}
	if _, err := l.CreateResource(ctx, op, &ledgerdv1.Resource{Name: "batch", Unit: "nodes", Units: imported}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Hour).UnixMilli()
	r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: ledger.Write{Tenant: "physics"}, Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "batch", Amount: 1}}, Duration: time.Hour.Milliseconds(), NotBefore: start, Deadline: start + time.Hour.Milliseconds()}})
	if err != nil {
		t.Fatal(err)
	}
	r = waitRecord(t, a, r.GetId(), ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED)
	checkSlurmHolds(t, c, r)
	gone := r.GetMaterialization().GetUnits()[0]

	// The node under the booking leaves the partition, n4 joins.
	var next []string
	for _, n := range imported {
		if n != gone {
			next = append(next, n)
		}
	}
	next = append(next, "n4")
	c.Run(t, "scontrol", "update", "PartitionName="+c.Partition, "Nodes="+strings.Join(next, ","))
	if got := partNodes(); !slices.Equal(got, next) {
		t.Fatalf("partition %s has %v after the update, want %v", c.Partition, got, next)
	}
	testwait.Until(t, deadline, "the resource's units to equal the partition's nodes "+strings.Join(next, ","), func() bool {
		rs, err := l.Resources(ctx, false)
		if err != nil || len(rs) != 1 {
			return false
		}
		return slices.Equal(slices.Sorted(slices.Values(rs[0].GetUnits())), next)
	})
	testwait.Until(t, deadline, "the booking on "+gone+" to be re-mapped and its Slurm reservation rewritten", func() bool {
		got, err := l.Get(ctx, r.GetId(), false)
		if err != nil || slices.Contains(got.GetUnits(), gone) {
			return false
		}
		m := got.GetMaterialization()
		if m.GetState() != ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED || !slices.Equal(m.GetUnits(), got.GetUnits()) {
			return false
		}
		r = got
		return true
	})
	checkSlurmHolds(t, c, r)
	if slices.Contains(r.GetUnits(), gone) || !slices.Contains(next, r.GetUnits()[0]) {
		t.Fatalf("booking on %v after %s left the partition %v", r.GetUnits(), gone, next)
	}
	t.Logf("booking %s moved from %s to %v; Slurm: %v", r.GetId(), gone, r.GetUnits(), c.ShowReservations(t)["ledgerd-"+r.GetId()]["Nodes"])
	evs, err := l.History(ctx, 0, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e *ledgerdv1.Event) bool {
		return e.GetType() == ledgerdv1.EventType_EVENT_TYPE_UNITS_REMAPPED && e.GetReservation().GetId() == r.GetId()
	}) {
		t.Error("no UNITS_REMAPPED event for the booking")
	}
}
