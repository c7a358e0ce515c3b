package fsm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ledgerd/ledgerd/internal/stepsort"
)

// usageFromEdges is usageFromSorted of edges in any order (sorted first,
// as build sorts them).
func usageFromEdges(es []usageEdge) *usage {
	stepsort.Sort(es, nil)
	return usageFromSorted(es)
}

// usageSteps lists u's steps.
func usageSteps(u *usage) []ustep {
	var out []ustep
	for _, ch := range u.chunks {
		out = append(out, ch.steps...)
	}
	return out
}

// TestUsageFromEdgesMatchesAdd: building a usage in bulk from the edges of
// random rectangles (some negative, some cancelling, some at the extremes
// of int64 so that levels wrap) gives exactly the steps that adding them
// one by one gives.
func TestUsageFromEdgesMatchesAdd(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 11))
		u := newUsage()
		var es []usageEdge
		for range rng.IntN(60) {
			s := int64(rng.IntN(100)) - 20
			e := s + int64(rng.IntN(30))
			a := int64(rng.IntN(9)) - 2
			switch rng.IntN(20) {
			case 0:
				a = math.MaxInt64
			case 1:
				s = math.MinInt64
			}
			u.add(s, e, a)
			if e > s && a != 0 {
				es = append(es, usageEdge{At: s, Delta: a}, usageEdge{At: e, Delta: -a})
			}
		}
		got, want := usageSteps(usageFromEdges(es)), usageSteps(u)
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d steps in bulk, %d added: %v vs %v", seed, len(got), len(want), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("seed %d: step %d = %v in bulk, %v added", seed, i, got[i], want[i])
			}
		}
		checkUsageShape(t, usageFromEdges(es))
	}
}

// TestUsageBuilderMatchesAccount: the builder records for every row what
// account adds (parts, a pending modification overlapping the same
// resource, uncounted states), so the usages equal those of account.
func TestUsageBuilderMatchesAccount(t *testing.T) {
	states := []rowMeta{
		{state: COMMITTED}, {state: HELD}, {state: ACTIVE}, {state: CANCELLED}, {state: EXPIRED},
	}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 13))
		var l limitState
		l.use = make(map[limitKey]*usage)
		b := newUsageBuilder()
		// The same rows split over three builders, merged (as the scan
		// chunks of a restore are, some with room for their edges).
		thirds := [3]*usageBuilder{newUsageBuilder(), newUsageBuilderFor(1), newUsageBuilderFor(20)}
		res := []string{"cpu", "gpu", "net"}
		for row := range 1 + rng.IntN(40) {
			m := states[rng.IntN(len(states))]
			m.start = int64(rng.IntN(100))
			m.end = m.start + 1 + int64(rng.IntN(40))
			var parts, pend []scanPart
			for _, r := range res {
				if rng.IntN(2) == 0 {
					parts = append(parts, scanPart{resource: r, amount: 1 + int64(rng.IntN(5))})
				}
			}
			if rng.IntN(3) == 0 {
				m.hasPending = true
				m.pendStart = int64(rng.IntN(100))
				m.pendEnd = m.pendStart + 1 + int64(rng.IntN(40))
				for _, r := range res {
					if rng.IntN(2) == 0 {
						pend = append(pend, scanPart{resource: r, amount: 1 + int64(rng.IntN(5))})
					}
				}
			}
			owner := []string{"alice", "bob"}[rng.IntN(2)]
			l.account(owner, &m, parts, pend, 1)
			b.account(owner, &m, parts, pend)
			thirds[row%3].account(owner, &m, parts, pend)
		}
		thirds[0].merge(thirds[1], thirds[2])
		for _, got := range []map[limitKey]*usage{b.build(), thirds[0].build()} {
			if len(got) != len(l.use) {
				t.Fatalf("seed %d: %d usages built, %d accounted", seed, len(got), len(l.use))
			}
			for k, u := range l.use {
				g, ok := got[k]
				if !ok {
					t.Fatalf("seed %d: usage %v not built", seed, k)
				}
				gs, ws := usageSteps(g), usageSteps(u)
				if len(gs) != len(ws) {
					t.Fatalf("seed %d %v: %v built, %v accounted", seed, k, gs, ws)
				}
				for i := range gs {
					if gs[i] != ws[i] {
						t.Fatalf("seed %d %v: %v built, %v accounted", seed, k, gs, ws)
					}
				}
			}
		}
	}
}
