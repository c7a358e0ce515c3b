package planner

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkTimelineLookup measures the lookup of a random instant in the
// bare indexed timeline of the admission fixture (the free capacity at
// that instant): the first step of every admission, and at a million
// blocks a chain of cache misses.
func BenchmarkTimelineLookup(b *testing.B) {
	for _, live := range benchLive {
		b.Run("live="+live.name, func(b *testing.B) {
			_, ix := fixtures(b, live.n)
			rng := rand.New(rand.NewPCG(benchReqSeed, 1))
			xs := make([]int64, 1<<16)
			for i := range xs {
				xs[i] = rng.Int64N(int64(live.n) * benchSpread)
			}
			var sink int64
			i := 0
			cpu := startCPU()
			for b.Loop() {
				x := xs[i&(len(xs)-1)]
				i++
				sink += ix.tl.MinFree(x, x)
			}
			cpu.stop(b)
			if sink == 0 {
				b.Log(sink)
			}
		})
	}
}
