package follow

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
)

// TestNodeDiff: the change is the partition's nodes against the units,
// sorted, duplicates of the node list (a node listed in two states)
// counted once.
func TestNodeDiff(t *testing.T) {
	nodes := func(names ...string) []bridge.Node {
		var out []bridge.Node
		for _, n := range names {
			out = append(out, bridge.Node{Name: n, State: "idle"})
		}
		return out
	}
	for _, c := range []struct {
		units, nodes, add, remove []string
	}{
		{[]string{"n1", "n2"}, []string{"n1", "n2"}, nil, nil},
		{[]string{"n1", "n2"}, []string{"n2", "n1", "n3", "n3"}, []string{"n3"}, nil},
		{[]string{"n3", "n1", "n2"}, []string{"n2"}, nil, []string{"n1", "n3"}},
		{[]string{"a"}, []string{"c", "b"}, []string{"b", "c"}, []string{"a"}},
	} {
		add, remove := nodeDiff(c.units, nodes(c.nodes...))
		if !slices.Equal(add, c.add) || !slices.Equal(remove, c.remove) {
			t.Errorf("units %v, nodes %v: add %v remove %v, want %v %v", c.units, c.nodes, add, remove, c.add, c.remove)
		}
	}
}

// TestFollowPartitionNodes: a node added to the partition becomes a
// unit; a node removed from it stops being one, and the booking it held
// moves to a spare unit and its Slurm reservation is updated in the same
// round. A removal the ledger refuses (the booking on the node has
// started) is logged, counted and retried each round until it can be
// made; the additions of that round go in regardless. An empty node list
// changes nothing.
func TestFollowPartitionNodes(t *testing.T) {
	w := newWorld(t)
	w.f.cfg.Partition = "debug"
	setNodes := func(names ...string) {
		w.d.nodes = nil
		for _, n := range names {
			w.d.nodes = append(w.d.nodes, bridge.Node{Name: n, State: "idle"})
		}
	}
	units := func() []string {
		rs, err := w.l.Resources(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(slices.Values(rs[0].GetUnits()))
	}
	setNodes("n1", "n2", "n3", "n4")
	r := w.book("alice", 1, time.Hour, time.Hour)
	if rep := w.round(); rep.UnitsAdded+rep.UnitsRemoved != 0 {
		t.Fatalf("units changed with the partition equal to them: %+v", rep)
	}
	held := w.record(r.GetId()).GetUnits()[0]

	// The node under r leaves, n5 joins.
	var rest []string
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		if n != held {
			rest = append(rest, n)
		}
	}
	setNodes(append(slices.Clone(rest), "n5")...)
	rep := w.round()
	if rep.UnitsAdded != 1 || rep.UnitsRemoved != 1 || len(rep.UnitsRefused) != 0 {
		t.Fatalf("added %d removed %d refused %v, want 1 1 none", rep.UnitsAdded, rep.UnitsRemoved, rep.UnitsRefused)
	}
	if got, want := units(), slices.Sorted(slices.Values(append(slices.Clone(rest), "n5"))); !slices.Equal(got, want) {
		t.Fatalf("units %v, want the partition's %v", got, want)
	}
	m := w.record(r.GetId())
	if m.GetState() != stMaterialized || slices.Contains(m.GetUnits(), held) {
		t.Fatalf("record after the node left: %v", m)
	}
	w.checkHeld(r.GetId())
	if got := value(w.f.metrics.units.WithLabelValues("removed")); got != 1 {
		t.Errorf("removed units metric %v", got)
	}

	// r starts; its node leaves: refused while it runs, n6 joins anyway.
	w.now = w.now.Add(90 * time.Minute)
	now := w.record(r.GetId()).GetUnits()[0]
	var left []string
	for _, n := range units() {
		if n != now {
			left = append(left, n)
		}
	}
	setNodes(append(slices.Clone(left), "n6")...)
	rep = w.round()
	if rep.UnitsAdded != 1 || rep.UnitsRemoved != 0 || len(rep.UnitsRefused) != 1 || !slices.Equal(rep.UnitsRefused[0].Remove, []string{now}) {
		t.Fatalf("while r runs: added %d removed %d refused %+v", rep.UnitsAdded, rep.UnitsRemoved, rep.UnitsRefused)
	}
	if !slices.Contains(units(), now) || !slices.Contains(units(), "n6") {
		t.Fatalf("units %v: want %s kept (in use) and n6 added", units(), now)
	}
	if got := value(w.f.metrics.units.WithLabelValues("refused")); got != 1 {
		t.Errorf("refused unit changes metric %v", got)
	}
	if rep := w.round(); len(rep.UnitsRefused) != 1 {
		t.Fatalf("the refused removal was not retried: %+v", rep.UnitsRefused)
	}
	// r is over: the removal goes through.
	w.now = w.now.Add(time.Hour)
	if rep := w.round(); rep.UnitsRemoved != 1 || slices.Contains(units(), now) {
		t.Fatalf("after r ended: removed %d, units %v", rep.UnitsRemoved, units())
	}

	// An empty node list is not followed.
	before := units()
	setNodes()
	if rep := w.round(); rep.UnitsAdded+rep.UnitsRemoved+len(rep.UnitsRefused) != 0 || !slices.Equal(units(), before) {
		t.Fatalf("an empty partition changed the units: %+v %v", rep, units())
	}
}
