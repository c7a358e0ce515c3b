package fsm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/btree"
)

// splitMergeUsage is the usage's earlier add, kept as the reference for
// the one-walk add: split the steps at s and e, raise every step in
// [s, e), then merge each end with the step before it when their levels
// repeat. Obviously canonical, about ten tree searches per add. It keeps
// its steps in a B-tree of its own, as the usage did.
type splitMergeUsage struct{ steps *btree.BTreeG[*ustep] }

func newSplitMergeUsage() splitMergeUsage {
	return splitMergeUsage{btree.NewG(16, func(a, b *ustep) bool { return a.at < b.at })}
}

func (r splitMergeUsage) levelAt(t int64) int64 {
	var lv int64
	r.steps.DescendLessOrEqual(&ustep{at: t}, func(st *ustep) bool {
		lv = st.level
		return false
	})
	return lv
}

func (r splitMergeUsage) list() []ustep {
	var out []ustep
	r.steps.Ascend(func(st *ustep) bool {
		out = append(out, *st)
		return true
	})
	return out
}

func (r splitMergeUsage) split(t int64) {
	if _, ok := r.steps.Get(&ustep{at: t}); ok {
		return
	}
	r.steps.ReplaceOrInsert(&ustep{at: t, level: r.levelAt(t)})
}

func (r splitMergeUsage) merge(t int64) {
	st, ok := r.steps.Get(&ustep{at: t})
	if !ok {
		return
	}
	var prev int64
	r.steps.DescendLessOrEqual(&ustep{at: t - 1}, func(p *ustep) bool {
		prev = p.level
		return false
	})
	if t == math.MinInt64 {
		prev = 0
	}
	if st.level == prev {
		r.steps.Delete(st)
	}
}

func (r splitMergeUsage) add(s, e, a int64) {
	if e <= s || a == 0 {
		return
	}
	r.split(s)
	r.split(e)
	r.steps.AscendRange(&ustep{at: s}, &ustep{at: e}, func(st *ustep) bool {
		st.level += a
		return true
	})
	r.merge(e)
	r.merge(s)
}

// TestUsageAddMatchesSplitMerge adds and removes random rectangles, some
// touching or sharing ends, some at the extremes of int64 (levels wrap),
// to a usage and to the split-and-merge reference, and compares the steps
// after every change.
func TestUsageAddMatchesSplitMerge(t *testing.T) {
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 23))
		got, want := newUsage(), newSplitMergeUsage()
		var live []rect
		pick := func() int64 {
			if rng.IntN(8) == 0 {
				return edges[rng.IntN(len(edges))]
			}
			return int64(rng.IntN(60)) - 10
		}
		for step := range 80 {
			var x rect
			if len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				x = rect{live[i].s, live[i].e, -live[i].a}
				live = slices.Delete(live, i, i+1)
			} else {
				x = rect{pick(), pick(), int64(rng.IntN(7)) - 2}
				switch rng.IntN(16) {
				case 0:
					x.a = math.MaxInt64
				case 1:
					x.a = math.MinInt64
				}
				if x.s > x.e && rng.IntN(2) == 0 {
					x.s, x.e = x.e, x.s
				}
				live = append(live, x)
			}
			got.add(x.s, x.e, x.a)
			want.add(x.s, x.e, x.a)
			g, w := usageSteps(got), want.list()
			if !slices.Equal(g, w) {
				t.Fatalf("seed %d step %d: add(%d, %d, %d): steps %v, want %v", seed, step, x.s, x.e, x.a, g, w)
			}
			checkUsageShape(t, got)
		}
	}
}

// TestUsageMaxUnitsOneRect: the one-rectangle path of maxUnits (a new
// booking) answers what the cutting path answers, which the reference
// test holds to the brute-force model.
func TestUsageMaxUnitsOneRect(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 29))
		u := newUsage()
		for range 30 {
			s := int64(rng.IntN(100))
			u.add(s, s+1+int64(rng.IntN(30)), int64(rng.IntN(9))-3)
		}
		for range 40 {
			s := int64(rng.IntN(120)) - 10
			r := rect{s, s + int64(rng.IntN(40)) - 3, int64(rng.IntN(9)) - 2}
			gp, ga, gok := u.maxUnits([]rect{r}, nil)
			// The same rectangle as two halves goes through the cuts.
			mid := r.s + (r.e-r.s)/2
			wp, wa, wok := u.maxUnits([]rect{{r.s, mid, r.a}, {mid, r.e, r.a}}, nil)
			if r.s >= r.e {
				wp, wa, wok = 0, 0, false
			}
			if gp != wp || ga != wa || gok != wok {
				t.Fatalf("seed %d: maxUnits(%v) = %d,%d,%v, want %d,%d,%v", seed, r, gp, ga, gok, wp, wa, wok)
			}
		}
	}
}

// TestUsageChunksMatchReference: usages of thousands of steps, so many
// chunks (split as they fill, shrunk, joined and dropped as they empty),
// hold the steps of the reference and answer its reads, after every add
// and every removal; built in bulk from the same rectangles they hold
// the same steps.
func TestUsageChunksMatchReference(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 31))
		got, want := newUsage(), newSplitMergeUsage()
		n := 2000 + rng.IntN(1000)
		span := int64(n * 4)
		// Odd seeds book in ascending order, as new bookings mostly come:
		// the last chunk fills and splits.
		ascending := seed%2 == 1
		var live []rect
		peakChunks, shrank := 0, false
		ops := 0
		check := func(op string, x rect) {
			t.Helper()
			// The whole of the steps every few changes (a chunk's
			// changes show in its reads meanwhile), so that the test
			// stays short.
			if ops++; ops%8 == 0 {
				if g, w := usageSteps(got), want.list(); !slices.Equal(g, w) {
					t.Fatalf("seed %d: %s %v: %d steps, want %d", seed, op, x, len(g), len(w))
				}
				checkUsageShape(t, got)
			}
			if len(got.chunks) < peakChunks && !got.empty() {
				shrank = true
			}
			peakChunks = max(peakChunks, len(got.chunks))
			lo := int64(rng.IntN(int(span)+100)) - 50
			hi := lo + 1 + int64(rng.IntN(200))
			if g, w := got.levelAt(lo), want.levelAt(lo); g != w {
				t.Fatalf("seed %d: levelAt(%d) = %d, want %d", seed, lo, g, w)
			}
			wantSegs := []ustep{{at: lo, level: want.levelAt(lo)}}
			want.steps.AscendRange(&ustep{at: lo + 1}, &ustep{at: hi}, func(st *ustep) bool {
				wantSegs = append(wantSegs, *st)
				return true
			})
			wantSegs = append(wantSegs, ustep{at: hi})
			if g := got.segs(lo, hi, nil); !slices.Equal(g, wantSegs) {
				t.Fatalf("seed %d: segs(%d, %d) = %v, want %v", seed, lo, hi, g, wantSegs)
			}
			var peak int64
			for i, st := range wantSegs[:len(wantSegs)-1] {
				if i == 0 || st.level > peak {
					peak = st.level
				}
			}
			if p, at, ok := got.maxUnits([]rect{{lo, hi, 3}}, nil); !ok || p != peak+3 || at != peak {
				t.Fatalf("seed %d: maxUnits over [%d, %d) = %d, %d, %v, want %d", seed, lo, hi, p, at, ok, peak+3)
			}
		}
		for i := range n {
			s := int64(rng.IntN(int(span)))
			if ascending {
				s = int64(i*4 + rng.IntN(8))
			}
			x := rect{s, s + 1 + int64(rng.IntN(40)), 1 + int64(rng.IntN(9))}
			got.add(x.s, x.e, x.a)
			want.add(x.s, x.e, x.a)
			live = append(live, x)
			check("add", x)
		}
		var es []usageEdge
		for _, x := range live {
			es = append(es, usageEdge{At: x.s, Delta: x.a}, usageEdge{At: x.e, Delta: -x.a})
		}
		bulk := usageFromEdges(es)
		checkUsageShape(t, bulk)
		if !slices.Equal(usageSteps(bulk), usageSteps(got)) {
			t.Fatalf("seed %d: the bulk build differs from the adds", seed)
		}
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		for _, x := range live {
			got.add(x.s, x.e, -x.a)
			want.add(x.s, x.e, -x.a)
			check("remove", x)
		}
		if !got.empty() || want.steps.Len() != 0 {
			t.Fatalf("seed %d: %d steps left after removing everything", seed, len(usageSteps(got)))
		}
		if peakChunks < 5 || !shrank {
			t.Fatalf("seed %d: at most %d chunks, shrank %v: the test misses the chunk layout", seed, peakChunks, shrank)
		}
	}
}
