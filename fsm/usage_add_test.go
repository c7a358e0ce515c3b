package fsm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// splitMergeUsage is the usage's earlier add, kept as the reference for
// the one-walk add: split the steps at s and e, raise every step in
// [s, e), then merge each end with the step before it when their levels
// repeat. Obviously canonical, about ten tree searches per add.
type splitMergeUsage struct{ u *usage }

func (r splitMergeUsage) split(t int64) {
	if _, ok := r.u.steps.Get(&ustep{at: t}); ok {
		return
	}
	r.u.steps.ReplaceOrInsert(&ustep{at: t, level: r.u.levelAt(t)})
}

func (r splitMergeUsage) merge(t int64) {
	st, ok := r.u.steps.Get(&ustep{at: t})
	if !ok {
		return
	}
	var prev int64
	r.u.steps.DescendLessOrEqual(&ustep{at: t - 1}, func(p *ustep) bool {
		prev = p.level
		return false
	})
	if t == math.MinInt64 {
		prev = 0
	}
	if st.level == prev {
		r.u.steps.Delete(st)
	}
}

func (r splitMergeUsage) add(s, e, a int64) {
	if e <= s || a == 0 {
		return
	}
	r.split(s)
	r.split(e)
	r.u.steps.AscendRange(&ustep{at: s}, &ustep{at: e}, func(st *ustep) bool {
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
		got, want := newUsage(), splitMergeUsage{newUsage()}
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
			g, w := usageSteps(got), usageSteps(want.u)
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
