package fsm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkUsageHeap reports the heap the usages of one tenant keep per
// step, built in bulk (usageBuilder, as a restore or the first SetLimits
// does) and by one account per booking in a shuffled order (as applies
// do): many small usages, as with bookings spread over many resources,
// and one large one. The figure is the in-use heap after a collection,
// the way BenchmarkLoad reports it per reservation.
func BenchmarkUsageHeap(b *testing.B) {
	for _, tc := range []struct {
		resources, perResource int
	}{{2_000, 128}, {1, 100_000}} {
		for _, build := range []string{"bulk", "apply"} {
			b.Run(fmt.Sprintf("resources=%d/bookings=%d/%s", tc.resources, tc.resources*tc.perResource, build), func(b *testing.B) {
				names := make([]string, tc.resources)
				for i := range names {
					names[i] = fmt.Sprintf("res-%05d", i)
				}
				type booking struct {
					m   rowMeta
					res string
					a   int64
				}
				rng := rand.New(rand.NewPCG(1, 2))
				var bs []booking
				for r := range tc.resources {
					for i := range tc.perResource {
						s := int64(i*7 + rng.IntN(5))
						bs = append(bs, booking{rowMeta{state: COMMITTED, start: s, end: s + 10 + int64(rng.IntN(50))}, names[r], 1 + int64(rng.IntN(64))})
					}
				}
				rng.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
				var perStep float64
				b.ReportAllocs()
				for b.Loop() {
					grown, use := heapGrowth(func() map[limitKey]*usage {
						if build == "bulk" {
							ub := newUsageBuilder()
							for _, x := range bs {
								ub.account("alice", &x.m, []scanPart{{resource: x.res, amount: x.a}}, nil)
							}
							return ub.build()
						}
						l := &limitState{use: make(map[limitKey]*usage)}
						for _, x := range bs {
							l.account("alice", &x.m, []scanPart{{resource: x.res, amount: x.a}}, nil, 1)
						}
						return l.use
					})
					steps := 0
					for _, u := range use {
						steps += len(usageSteps(u))
					}
					perStep = float64(grown) / float64(steps)
					b.ReportMetric(float64(steps)/float64(len(use)), "steps/usage")
					runtime.KeepAlive(use)
				}
				b.ReportMetric(perStep, "heap-bytes/step")
			})
		}
	}
}

// BenchmarkUsageOps measures a usage's own operations on one usage of
// many steps (bookings every 7 ms, as in loaded) and on a small one: a
// booking's add and its removal, and the checks of an admission.
func BenchmarkUsageOps(b *testing.B) {
	for _, n := range []int{128, 100_000} {
		rng := rand.New(rand.NewPCG(3, 4))
		var es []usageEdge
		for i := range n {
			s := int64(i*7 + rng.IntN(5))
			a := 1 + int64(rng.IntN(64))
			es = append(es, usageEdge{At: s, Delta: a}, usageEdge{At: s + 10 + int64(rng.IntN(50)), Delta: -a})
		}
		u := usageFromEdges(es)
		span := int64(n * 7)
		var at []int64
		for range 1024 {
			at = append(at, int64(rng.Int64N(span)))
		}
		b.Run(fmt.Sprintf("steps=%d/add+remove", len(usageSteps(u))), func(b *testing.B) {
			i := 0
			for b.Loop() {
				s := at[i%len(at)]
				i++
				u.add(s, s+40, 32)
				u.add(s, s+40, -32)
			}
		})
		b.Run(fmt.Sprintf("steps=%d/maxUnits", len(usageSteps(u))), func(b *testing.B) {
			i := 0
			for b.Loop() {
				s := at[i%len(at)]
				i++
				u.maxUnits([]rect{{s, s + 40, 32}}, nil)
			}
		})
		for _, w := range []int64{1_000, 100_000} {
			b.Run(fmt.Sprintf("steps=%d/maxWindow=%d", len(usageSteps(u)), w), func(b *testing.B) {
				var sc windowScratch
				i := 0
				for b.Loop() {
					s := at[i%len(at)]
					i++
					u.maxWindow([]rect{{s, s + 40, 32}}, w, 1<<60, &sc)
				}
			})
		}
	}
}
