package jepsen

import (
	"os"
	"testing"
)

func TestZZDebug(t *testing.T) {
	p := os.Getenv("JHIST")
	if p == "" {
		t.Skip()
	}
	h, err := LoadHistory(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]Decider{"ref": ReferenceDecide, "planner": PlannerDecide} {
		vs, err := Check(h, CheckOptions{Decide: d})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", name, vs)
	}
	// Sequential replay in return order, reporting the first mismatch.
	l := &Ledger{Capacity: h.Capacity, Decide: ReferenceDecide, Grain: h.Grain}
	ops := append([]Op(nil), h.Ops...)
	s := State{}
	for i, op := range ops {
		want, next := l.predict(s, op.Input)
		if len(l.Steps(s, op.Input, op.Output)) == 0 {
			t.Logf("op %d client %d [%d,%d] %s: want %+v", i, op.Client, op.Call/1e6, op.Return/1e6, DescribeOperation(op.Input, op.Output), want)
		}
		s = next
		_ = want
		if i > 120 {
			break
		}
	}
}
