package planner

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkShortTimeline measures admission on a timeline of a few dozen
// free blocks, the size the seed papers' cluster experiment produces (one
// 128-CPU resource): one operation advances the origin, finds the earliest
// fit of a request and books it, on a resource whose bookings expire as
// time moves on, so the timeline stays short. Both timelines see the same
// request stream and make the same decisions.
func BenchmarkShortTimeline(b *testing.B) {
	const (
		capacity = 128
		n        = 4096 // requests in the cycled stream
	)
	type req struct{ arrival, amount, duration, delay int64 }
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([]req, n)
	var now int64
	for i := range reqs {
		now += 1 + rng.Int64N(200)
		reqs[i] = req{arrival: now, amount: 1 + rng.Int64N(64), duration: 1 + rng.Int64N(3000), delay: rng.Int64N(1000)}
	}
	span := now + 1
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			tl := impl.f(capacity, 0)
			var base int64 // shifts each pass over the stream into the future
			blocks, ops := 0, 0
			m := startCPU()
			for i := 0; b.Loop(); i++ {
				if i%n == 0 && i > 0 {
					base += span
				}
				r := reqs[i%n]
				at := base + r.arrival
				tl.Advance(at)
				if s, ok := tl.Earliest(r.amount, r.duration, at+r.delay, at+2*r.delay+r.duration); ok {
					if err := tl.Book(s, s+r.duration, r.amount); err != nil {
						b.Fatal(err)
					}
				}
				blocks += tl.Len()
				ops++
			}
			m.stop(b)
			b.ReportMetric(float64(blocks)/float64(max(ops, 1)), "blocks")
		})
	}
}
