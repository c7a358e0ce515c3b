package planner

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkChunkShift splits the cost of the first lookup and the shift of
// an admission at a million blocks, on the bare indexed timeline of the
// admission fixture: at a random instant, the lookup alone (locateFree,
// what a layout that moves no cold neighbours would still pay), the
// admission's first lookup with its read-ahead of the shorter side
// (locateWarm), and either lookup followed by the insertion of two blocks
// into the found block and their removal (insert2 then delete2: the shifts
// of a Book and of the Remove after it), or the lookup followed by the
// same two insertions and removals moving only the blocks up to the end
// of the found run (lookup+local: what a layout with room in every run
// would move). The timeline is left as it was found. It reports CPU ns per instant, the share of instants where a
// shift was made, the mean number of blocks on the shorter side of the
// change, and the mean number of blocks per chunk.
func BenchmarkChunkShift(b *testing.B) {
	for _, live := range benchLive {
		if live.n < 100_000 {
			continue
		}
		b.Run("live="+live.name, func(b *testing.B) {
			_, ix := fixtures(b, live.n)
			t, ok := ix.tl.(*IndexedTimeline)
			if !ok || t.rev != nil {
				b.Fatalf("fixture timeline is not chunked")
			}
			rng := rand.New(rand.NewPCG(benchReqSeed, 2))
			xs := make([]int64, 1<<16)
			for i := range xs {
				xs[i] = rng.Int64N(int64(live.n) * benchSpread)
			}
			for _, v := range []struct {
				name               string
				warm, shift, local bool
			}{
				{"lookup", false, false, false}, {"warm", true, false, false},
				{"lookup+local", false, false, true},
				{"lookup+shift", false, true, false}, {"warm+shift", true, true, false},
			} {
				b.Run("op="+v.name, func(b *testing.B) {
					var sink int64
					shifted, i, side := 0, 0, 0
					cpu := startCPU()
					for b.Loop() {
						x := xs[i&(len(xs)-1)]
						i++
						t.hint = len(t.firsts) // no chunk remembered: a cold lookup
						var ci, bi int
						var f int64
						if v.warm {
							ci, bi, f = t.locateWarm(x)
						} else {
							ci, bi, f = t.locateFree(x)
						}
						sink += f
						if v.local {
							// What a layout with room in every run would
							// move: the blocks after bi up to the end of
							// bi's run of sampleStep slots, two places
							// out and back, in both arrays.
							// The arrays come from the run descriptor the
							// lookup read, not from the chunk object.
							r := &t.runs[ci]
							end := min(((r.off+bi)|(sampleStep-1))+1, r.off+r.n) - r.off
							if end-(bi+1) < 3 {
								continue
							}
							for _, a := range [2][]int64{r.sb[r.off : r.off+r.n], r.fb[r.off : r.off+r.n]} {
								u, w := a[end-2], a[end-1]
								copy(a[bi+3:end], a[bi+1:end-2])
								a[bi+1], a[bi+2] = a[bi]+1, a[bi]+2
								copy(a[bi+1:end-2], a[bi+3:end])
								a[end-2], a[end-1] = u, w
							}
							shifted++
							continue
						}
						if !v.shift {
							continue
						}
						c := t.chunks[ci]
						side += min(bi, len(c.start)-1-bi)
						if bi+1 >= len(c.start) || len(c.start)+2 > chunkCap || c.start[bi+1]-c.start[bi] < 3 {
							continue
						}
						s := c.start[bi]
						t.insert2(ci, bi+1, bi+1, s+1, f, s+2, f)
						t.delete2(ci, bi+1, bi+2)
						shifted++
					}
					cpu.stop(b)
					b.ReportMetric(float64(shifted)/float64(max(i, 1)), "shifted")
					if v.shift {
						// The blocks on the shorter side of the
						// change: what insert2 and delete2 move.
						b.ReportMetric(float64(side)/float64(max(i, 1)), "side")
					}
					b.ReportMetric(float64(t.n)/float64(len(t.chunks)), "fill")
					if sink == 42 {
						b.Log(sink)
					}
				})
			}
			if err := t.checkInvariants(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// delete2 removes the blocks at indices i < j of chunk ci by moving the
// shorter side of the chunk: what a Remove did before a merged block
// became a copy (see copies), kept to measure that path.
func (t *IndexedTimeline) delete2(ci, i, j int) {
	c := t.chunks[ci]
	n := len(c.start)
	o := c.off
	a, b := c.sb[o:o+n], c.fb[o:o+n]
	if i < n-1-j {
		for _, a := range [2][]int64{a, b} {
			copy(a[i+2:j+1], a[i+1:j])
			copy(a[2:i+2], a[0:i])
		}
		c.off = o + 2
		c.view(n - 2)
		t.resample(ci, o, o+j+1)
		return
	}
	for _, a := range [2][]int64{a, b} {
		copy(a[i:], a[i+1:j])
		copy(a[j-1:], a[j+1:])
	}
	c.view(n - 2)
	t.resample(ci, o+i, o+n)
}
