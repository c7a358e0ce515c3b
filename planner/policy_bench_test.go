package planner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSchedulerReserve measures one reservation request that
// collides with a plan of 200 variable jobs and 200 reservations on a
// 64-unit resource, per policy: the full refusal path (REJECT: the rigid
// check; MOVE_VARIABLE: lifting the overlapping jobs and putting them back;
// RELAXED: the probability estimate). admitted/op reports how often it was
// admitted (then it is cancelled so the plan stays comparable).
func BenchmarkSchedulerReserve(b *testing.B) {
	for _, pol := range []ResourcePolicy{
		{Policy: PolicyReject},
		{Policy: PolicyMoveVariable},
		{Policy: PolicyRelaxed, MinSuccess: 0.5},
	} {
		b.Run(pol.Policy.String(), func(b *testing.B) {
			p := New(NewIndexed)
			if err := p.AddResource("cpu", 64); err != nil {
				b.Fatal(err)
			}
			s := NewScheduler(p)
			if err := s.SetPolicy("cpu", pol); err != nil {
				b.Fatal(err)
			}
			for range 200 {
				s.Releases.Record("", 100, 60)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 200 {
				if _, err := s.Submit(fmt.Sprint("v", i), "", Part{"cpu", 1 + rng.Int64N(32)}, 10+rng.Int64N(90), rng.Int64N(1000)); err != nil {
					b.Fatal(err)
				}
				_, _ = s.Reserve(fmt.Sprint("r", i), "", Part{"cpu", 1 + rng.Int64N(32)}, rng.Int64N(2000), 10+rng.Int64N(90))
			}
			var admitted int
			for b.Loop() {
				if _, err := s.Reserve("probe", "", Part{"cpu", 24}, 500, 50); err == nil {
					admitted++
					if err := s.Cancel("probe"); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
		})
	}
}
