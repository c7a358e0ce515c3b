package fsm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// The reference model of tenant usage: a plain list of rectangles,
// evaluated instant by instant and window by window. It shares nothing
// with usage but the rect type.

type refUsage []rect

func (r refUsage) level(t int64) int64 {
	var lv int64
	for _, x := range r {
		if x.s <= t && t < x.e {
			lv += x.a
		}
	}
	return lv
}

// delta is the sum of rs at instant t.
func deltaAt(rs []rect, t int64) int64 { return refUsage(rs).level(t) }

// windowSum is the unit-time of r in [x, x+w).
func (r refUsage) windowSum(x, w int64) int64 {
	var sum int64
	for _, q := range r {
		sum += q.a * overlap(x, x+w, q.s, q.e)
	}
	return sum
}

func span(rs []rect) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, r := range rs {
		lo, hi = min(lo, r.s), max(hi, r.e)
	}
	return lo, hi
}

// refMaxUnits is usage.maxUnits by brute force.
func (r refUsage) maxUnits(rs []rect) (peak, at int64, ok bool) {
	lo, hi := span(rs)
	for t := lo; t < hi; t++ {
		d := deltaAt(rs, t)
		if d <= 0 {
			continue
		}
		if v := r.level(t) + d; !ok || v > peak {
			peak, at, ok = v, r.level(t), true
		}
	}
	return peak, at, ok
}

// refMaxWindow is usage.maxWindow by brute force over every window start.
func (r refUsage) maxWindow(rs []rect, w, limit int64) (ok bool, after, before, use, fits int64) {
	lo, hi := span(rs)
	fits = math.MaxInt64
	for x := lo - w; x < hi; x++ {
		g := refUsage(rs).windowSum(x, w)
		if g <= 0 {
			continue
		}
		f := r.windowSum(x, w)
		if !ok || f+g > after {
			after, before = f+g, f
		}
		if !ok || f > use {
			use = f
		}
		ok = true
		if ov := overlap(x, x+w, rs[0].s, rs[0].e); ov > 0 {
			q := (limit - f) / ov
			if (limit-f)%ov != 0 && limit-f < 0 {
				q--
			}
			fits = min(fits, q)
		}
	}
	return ok, after, before, use, max(fits, 0)
}

// TestUsageMatchesReference adds and removes random rectangles and asks
// both implementations the same questions after every change.
func TestUsageMatchesReference(t *testing.T) {
	for seed := range uint64(16) {
		rng := rand.New(rand.NewPCG(seed, 7))
		u := newUsage()
		var ref refUsage
		for step := range 120 {
			if len(ref) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(ref))
				u.add(ref[i].s, ref[i].e, -ref[i].a)
				ref = slices.Delete(ref, i, i+1)
			} else {
				s := int64(rng.IntN(200))
				x := rect{s, s + 1 + int64(rng.IntN(40)), 1 + int64(rng.IntN(9))}
				u.add(x.s, x.e, x.a)
				ref = append(ref, x)
			}
			for tt := int64(-5); tt < 250; tt++ {
				if got, want := u.levelAt(tt), ref.level(tt); got != want {
					t.Fatalf("seed %d step %d: level at %d = %d, want %d", seed, step, tt, got, want)
				}
			}
			checkUsageShape(t, u)
			// A query: a new booking, sometimes less a part of an old one.
			s := int64(rng.IntN(220)) - 10
			rs := []rect{{s, s + 1 + int64(rng.IntN(50)), 1 + int64(rng.IntN(6))}}
			if rng.IntN(3) == 0 {
				a, b := rs[0].s+int64(rng.IntN(10)), rs[0].e-int64(rng.IntN(10))
				if a < b {
					rs = append(rs, rect{a, b, -int64(1 + rng.IntN(int(rs[0].a)))})
				}
			}
			gp, ga, gok := u.maxUnits(rs, nil)
			wp, wa, wok := ref.maxUnits(rs)
			if gp != wp || ga != wa || gok != wok {
				t.Fatalf("seed %d step %d: maxUnits(%v) = %d,%d,%v, want %d,%d,%v", seed, step, rs, gp, ga, gok, wp, wa, wok)
			}
			w := 1 + int64(rng.IntN(60))
			limit := int64(rng.IntN(1500))
			wc := u.maxWindow(rs, w, limit, &windowScratch{})
			ok, after, before, use, fits := ref.maxWindow(rs, w, limit)
			if wc.ok != ok || ok && (wc.after.clamp() != after || wc.before.clamp() != before || wc.usage.clamp() != use || wc.fits != fits) {
				t.Fatalf("seed %d step %d: maxWindow(%v, w=%d, limit=%d) = %v/%d/%d/%d/%d, want %v/%d/%d/%d/%d",
					seed, step, rs, w, limit, wc.ok, wc.after.clamp(), wc.before.clamp(), wc.usage.clamp(), wc.fits, ok, after, before, use, fits)
			}
		}
		for _, x := range ref {
			u.add(x.s, x.e, -x.a)
		}
		if !u.empty() {
			t.Fatalf("seed %d: %d steps left after removing everything", seed, len(usageSteps(u)))
		}
	}
}

// checkUsageShape checks usage's invariant: steps sorted, no two
// adjacent steps with the same level, the first not 0; and its chunks'
// (none empty or over maxChunk, each one's first its first step's at).
func checkUsageShape(t testing.TB, u *usage) {
	t.Helper()
	for c, ch := range u.chunks {
		if len(ch.steps) == 0 || len(ch.steps) > maxChunk {
			t.Fatalf("chunk %d of %d holds %d steps", c, len(u.chunks), len(ch.steps))
		}
		if ch.first != ch.steps[0].at {
			t.Fatalf("chunk %d: first %d, first step at %d", c, ch.first, ch.steps[0].at)
		}
	}
	steps := usageSteps(u)
	prev := int64(0)
	for i, st := range steps {
		if st.level == prev {
			t.Fatalf("redundant step at %d (level %d)", st.at, st.level)
		}
		if i > 0 && st.at <= steps[i-1].at {
			t.Fatalf("step %d at %d after one at %d", i, st.at, steps[i-1].at)
		}
		prev = st.level
	}
}

func TestI128(t *testing.T) {
	for _, tc := range []struct{ a, b int64 }{{3, 4}, {-3, 4}, {math.MaxInt64, math.MaxInt64}, {math.MinInt64, 1}, {-7, -9}, {0, 5}} {
		p := mul128(tc.a, tc.b)
		if tc.a > -1<<31 && tc.a < 1<<31 && p.clamp() != tc.a*tc.b {
			t.Errorf("%d*%d = %v", tc.a, tc.b, p)
		}
		if got := p.sub(p); got != (i128{}) {
			t.Errorf("x-x = %v", got)
		}
		if got := p.add(from64(1)).sub(from64(1)); got != p {
			t.Errorf("x+1-1 = %v, want %v", got, p)
		}
	}
	if from64(math.MaxInt64).add(from64(1)).clamp() != math.MaxInt64 {
		t.Error("clamp above")
	}
	if mul128(math.MaxInt64, 4).divFloor(4) != math.MaxInt64 {
		t.Error("divFloor of a large quotient")
	}
	if from64(17).divFloor(5) != 3 || from64(-1).divFloor(5) != -1 {
		t.Error("divFloor")
	}
}

// refContribution is a row's contribution to its tenant's usage on res,
// computed from the row alone: its shape, or with a pending modification
// the larger of the two shapes at every instant.
func refContribution(r *fsmv1.Reservation, res string) refUsage {
	if !countsState(r.GetState()) {
		return nil
	}
	amt := func(ps []*fsmv1.Part) int64 {
		for _, p := range ps {
			if p.GetResource() == res {
				return p.GetAmount()
			}
		}
		return 0
	}
	a, s, e := amt(r.GetParts()), r.GetStartMillis(), r.GetEndMillis()
	p := r.GetPending()
	if p == nil {
		return refUsage{{s, e, a}}
	}
	b, ps, pe := amt(p.GetParts()), p.GetStartMillis(), p.GetEndMillis()
	// Cut at every edge and take the larger amount in each piece.
	cuts := []int64{s, e, ps, pe}
	slices.Sort(cuts)
	var out refUsage
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		if lo == hi {
			continue
		}
		var x, y int64
		if s <= lo && hi <= e {
			x = a
		}
		if ps <= lo && hi <= pe {
			y = b
		}
		out = append(out, rect{lo, hi, max(x, y)})
	}
	return out
}

// checkLimitUsage compares the tracked usage with the reference computed
// from the rows, at every edge of every row (the profiles are step
// functions with edges there only).
func checkLimitUsage(t testing.TB, s *state, rows map[string]*fsmv1.Reservation) {
	t.Helper()
	if !s.lim.limited() {
		if len(s.lim.table) > 0 {
			t.Fatal("limits set but usage not tracked")
		}
		return
	}
	ref := map[limitKey]refUsage{}
	var edges []int64
	for _, r := range rows {
		seen := map[string]bool{}
		for _, ps := range [][]*fsmv1.Part{r.GetParts(), r.GetPending().GetParts()} {
			for _, p := range ps {
				if seen[p.GetResource()] {
					continue
				}
				seen[p.GetResource()] = true
				k := limitKey{r.GetOwner(), p.GetResource()}
				ref[k] = append(ref[k], refContribution(r, p.GetResource())...)
			}
		}
		edges = append(edges, r.GetStartMillis(), r.GetEndMillis(), r.GetPending().GetStartMillis(), r.GetPending().GetEndMillis())
	}
	for k, u := range s.lim.use {
		if u.empty() {
			t.Fatalf("empty usage kept for %v", k)
		}
		checkUsageShape(t, u)
		if _, ok := ref[k]; !ok {
			t.Fatalf("usage of %v tracked, but no row of it", k)
		}
	}
	for k, r := range ref {
		u := s.lim.use[k]
		for _, e := range edges {
			for _, x := range [2]int64{e - 1, e} {
				var got int64
				if u != nil {
					got = u.levelAt(x)
				}
				if want := r.level(x); got != want {
					t.Fatalf("usage of %s on %s at %d: tracked %d, rows say %d", k.tenant, k.resource, x, got, want)
				}
			}
		}
	}
}

// breakLimits breaks a field of a limits or approval command (by k).
func breakLimits(c *fsmv1.Command, k int, long string) {
	if sl := c.GetSetLimits(); sl != nil {
		if sl.Spec == nil {
			sl.Spec = &fsmv1.LimitSpec{}
		}
		[]func(){
			func() { sl.Tenant = "" }, func() { sl.Tenant = long + long }, func() { sl.Resource = "bad name" },
			func() { sl.Spec.MaxUnits = -1 }, func() { sl.Spec.WindowMillis = 10 }, func() { sl.Spec.MaxUnitMillis, sl.Spec.WindowMillis = 5, maxLimitWindow+1 },
			func() { sl.Spec.ApprovalTtlMillis = -2 },
		}[k%7]()
		return
	}
	d := c.GetDecision()
	[]func(){
		func() { d.Id = "" }, func() { d.Reason = long + long + long + long + long + long + long + long },
	}[k%2]()
	if c.GetType() == fsmv1.Command_TYPE_DENY && k%3 == 0 {
		d.Reason = ""
	}
}

// limitsCommand makes c (by k in 0..5) a limits or approval command for
// the random streams: limits that often bite (approval above 4 units, a
// few units, a window), approvals and denials of recent IDs.
func (g *gen) limitsCommand(c *fsmv1.Command, k int) {
	c.Privileged = g.r.IntN(8) > 0
	switch {
	case k < 1:
		sl := &fsmv1.SetLimits{Tenant: g.pick([]string{"alice", "bob", "*"}), Resource: g.pick([]string{"cpu", "gpu", "*", "net"})}
		if g.r.IntN(5) > 1 {
			sp := &fsmv1.LimitSpec{}
			switch g.r.IntN(6) {
			case 0:
				sp.MaxUnits = int64(2 + g.r.IntN(12))
			case 1:
				sp.MaxUnitMillis, sp.WindowMillis = int64(100+g.r.IntN(2000)), int64(20+g.r.IntN(300))
			case 2, 3, 4:
				sp.ApprovalAboveUnits = int64(5 + g.r.IntN(4))
				sp.ApprovalTtlMillis = int64(1 + g.r.IntN(400))
			default:
				sp.MaxDurationMillis, sp.MaxAheadMillis, sp.MaxHoldTtlMillis = int64(g.r.IntN(300)), int64(g.r.IntN(2000)), int64(g.r.IntN(300))
				sp.ApprovalRequired = g.r.IntN(4) == 0
			}
			if g.r.IntN(25) == 0 {
				sp.MaxUnits = -1
			}
			sl.Spec = sp
		}
		c.Type = fsmv1.Command_TYPE_SET_LIMITS
		c.Payload = &fsmv1.Command_SetLimits{SetLimits: sl}
	default:
		c.Type = fsmv1.Command_TYPE_APPROVE
		d := &fsmv1.Decision{Id: g.id()}
		if n := len(g.ids); n > 0 && g.r.IntN(2) == 0 {
			// Pending requests are the newest rows.
			d.Id = g.ids[n-1]
		}
		if g.r.IntN(2) == 0 {
			c.Type = fsmv1.Command_TYPE_DENY
			if g.r.IntN(10) > 0 {
				d.Reason = fmt.Sprintf("reason %d", g.r.IntN(3))
			}
		}
		c.Payload = &fsmv1.Command_Decision{Decision: d}
	}
}
