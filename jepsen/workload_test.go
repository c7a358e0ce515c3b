package jepsen

import (
	"context"
	"testing"
	"time"
)

// runFake drives the real workload against an in-process ledger and
// returns the recorded history.
func runFake(t *testing.T, stale bool, unknownRate float64, d time.Duration) (History, *memLedger) {
	t.Helper()
	cfg := WorkloadConfig{Clients: 6, Groups: 2, Seed: 7, Base: 1_000_000, Unit: 10, Retries: 2}
	var ml *memLedger
	w, err := NewWorkload(cfg, NewRecorder(), []string{"n1", "n2", "n3"}, func(string) Client { return ml })
	if err != nil {
		t.Fatal(err)
	}
	caps, _ := w.Config().Resources()
	ml = newMemLedger(caps, stale, unknownRate, 3)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	w.Run(ctx)
	h := w.History()
	if len(h.Ops) < 50 {
		t.Fatalf("only %d operations recorded", len(h.Ops))
	}
	return h, ml
}

// TestWorkloadAgainstLinearizableFake: a correct ledger with lost answers
// (applied or not) must check linearizable, and the invariants must hold.
func TestWorkloadAgainstLinearizableFake(t *testing.T) {
	h, ml := runFake(t, false, 0.05, 400*time.Millisecond)
	vs, err := Check(h, CheckOptions{Timeout: 30 * time.Second, VisualDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !Linearizable(vs) {
		t.Fatalf("correct fake judged non-linearizable: %+v", vs)
	}
	unknown := 0
	for _, op := range h.Ops {
		if op.Output.Code == CodeUnknown {
			unknown++
		}
	}
	if unknown == 0 {
		t.Fatal("no indeterminate operations: the test does not exercise them")
	}
	list, _ := ml.List(context.Background())
	inv := CheckInvariants(h, map[string][]Reservation{"n1": list, "n2": list}, InvariantOptions{Now: time.Now()})
	for _, v := range inv {
		if !v.OK {
			t.Errorf("invariant %s failed: %v", v.Name, v.Violations)
		}
	}
	t.Logf("%d ops, %d unknown, verdicts %+v", len(h.Ops), unknown, vs)
}

// TestWorkloadAgainstStaleFake: stale reads must be caught, with an HTML
// visualization for the failing group.
func TestWorkloadAgainstStaleFake(t *testing.T) {
	h, _ := runFake(t, true, 0, 400*time.Millisecond)
	vs, err := Check(h, CheckOptions{Timeout: 30 * time.Second, VisualDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if Linearizable(vs) {
		t.Fatalf("stale-read fake judged linearizable: %+v", vs)
	}
}
