package fsm

import (
	"math"
	"math/bits"
	"slices"

	"github.com/google/btree"
)

// usage is one tenant's booked units on one resource as a step function
// of reservation time: u(t) = level of the last step at or before t (0
// before the first). It answers the two questions the usage limits ask
// of a new booking without looking at any reservation:
//
//   - the most units held at any instant the booking covers (max_units);
//   - the most unit-time booked in any window of length W that the
//     booking overlaps (max_unit_millis over window_millis).
//
// Both cost O(log n + k), k being the steps within [s−W, e+W) of the
// booking [s, e): the structure is kept up to date on every change of a
// row (add), never rebuilt from the table.
//
// Invariant: steps are sorted by at, adjacent steps have different
// levels, and the first step's level is not 0 (a step function that
// returns to 0 after its last booking ends with a level-0 step).
//
// Levels are sums of int64 amounts with wrapping arithmetic, so a removal
// exactly undoes its add whatever the values; integrals are 128-bit.
type usage struct {
	steps *btree.BTreeG[*ustep]
}

// ustep is u(t) = level for t in [at, next step's at).
type ustep struct {
	at    int64
	level int64
}

func stepLess(a, b *ustep) bool { return a.at < b.at }

func newUsage() *usage { return &usage{steps: btree.NewG(16, stepLess)} }

// empty reports whether u is 0 everywhere.
func (u *usage) empty() bool { return u.steps.Len() == 0 }

// levelAt returns u(t).
func (u *usage) levelAt(t int64) int64 {
	var lv int64
	u.steps.DescendLessOrEqual(&ustep{at: t}, func(st *ustep) bool {
		lv = st.level
		return false
	})
	return lv
}

// split makes sure a step starts at t and returns it.
func (u *usage) split(t int64) *ustep {
	if st, ok := u.steps.Get(&ustep{at: t}); ok {
		return st
	}
	st := &ustep{at: t, level: u.levelAt(t)}
	u.steps.ReplaceOrInsert(st)
	return st
}

// add adds a units over [s, e) (a may be negative to remove a booking).
func (u *usage) add(s, e, a int64) {
	if e <= s || a == 0 {
		return
	}
	u.split(s)
	u.split(e)
	u.steps.AscendRange(&ustep{at: s}, &ustep{at: e}, func(st *ustep) bool {
		st.level += a
		return true
	})
	u.merge(e)
	u.merge(s)
}

// merge removes the step at t when it repeats the level before it.
func (u *usage) merge(t int64) {
	st, ok := u.steps.Get(&ustep{at: t})
	if !ok {
		return
	}
	var prev int64
	u.steps.DescendLessOrEqual(&ustep{at: t - 1}, func(p *ustep) bool {
		prev = p.level
		return false
	})
	if t == math.MinInt64 {
		prev = 0
	}
	if st.level == prev {
		u.steps.Delete(st)
	}
}

// segs returns the steps that cover [lo, hi) as (at, level) pairs: the
// first one starts at lo (with u(lo)), and a last one at hi closes them.
func (u *usage) segs(lo, hi int64, buf []ustep) []ustep {
	buf = append(buf[:0], ustep{at: lo, level: u.levelAt(lo)})
	u.steps.AscendRange(&ustep{at: lo + 1}, &ustep{at: hi}, func(st *ustep) bool {
		buf = append(buf, *st)
		return true
	})
	return append(buf, ustep{at: hi})
}

// rect is a units over [s, e): one piece of what a booking adds.
type rect struct{ s, e, a int64 }

// maxUnits returns the largest u(t)+d(t) over the instants t where the
// delta d (the sum of rs) is positive, and u at that instant; ok is false
// when d is nowhere positive.
func (u *usage) maxUnits(rs []rect, buf []ustep) (peak, at int64, ok bool) {
	var cuts []int64
	for _, r := range rs {
		cuts = append(cuts, r.s, r.e)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		var d int64
		for _, r := range rs {
			if r.s <= lo && hi <= r.e {
				d += r.a
			}
		}
		if d <= 0 {
			continue
		}
		buf = u.segs(lo, hi, buf)
		for _, st := range buf[:len(buf)-1] {
			if v := st.level + d; !ok || v > peak {
				peak, at, ok = v, st.level, true
			}
		}
	}
	return peak, at, ok
}

// windowCheck is the answer of maxWindow.
type windowCheck struct {
	// ok is false when the delta overlaps no window (it is empty).
	ok bool
	// after is the most unit-time in one window the delta overlaps, with
	// the delta; before is that window's unit-time without it.
	after, before i128
	// usage is the most unit-time without the delta over the windows it
	// overlaps.
	usage i128
	// fits is the most units a booking over rs[0]'s interval could have
	// and keep every window it overlaps at or below limit (clamped to
	// [0, MaxInt64]).
	fits int64
}

// maxWindow looks at every window [x, x+w) that the delta (the sum of
// rs) overlaps with positive unit-time and returns the largest unit-time
// in such a window with the delta added. Windows start at integer
// instants. Both the booked unit-time F(x) and the delta's G(x) are
// piecewise linear in x, F with corners at the step edges t and t−w, G
// at the rectangle edges and those minus w; between two corners F+G is
// linear, so its largest value over the integers where G > 0 is at a
// corner, or one instant inside a corner where G becomes 0. Those are
// the only candidates: about 2k of them for k steps in [lo−w, hi+w),
// evaluated in one sweep.
func (u *usage) maxWindow(rs []rect, w int64, limit int64, sc *windowScratch) windowCheck {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range rs {
		lo, hi = min(lo, r.s), max(hi, r.e)
	}
	// Windows starting in [lo-w, hi) can overlap the delta; they read u
	// over [lo-w, hi+w).
	segs := u.segs(lo-w, hi+w, sc.segs)
	sc.segs = segs
	// prefix[i] = ∫ u from segs[0].at to segs[i].at.
	prefix := sc.prefix[:0]
	prefix = append(prefix, i128{})
	for i := 1; i < len(segs); i++ {
		prefix = append(prefix, prefix[i-1].add(mul128(segs[i-1].level, segs[i].at-segs[i-1].at)))
	}
	sc.prefix = prefix
	cands := sc.cands[:0]
	for _, st := range segs {
		if st.at < hi {
			cands = append(cands, st.at)
		}
		if x := st.at - w; x >= lo-w && x < hi {
			cands = append(cands, x)
		}
	}
	for _, r := range rs {
		for _, c := range [4]int64{r.s, r.e, r.s - w, r.e - w} {
			for _, x := range [3]int64{c - 1, c, c + 1} {
				if x >= lo-w && x < hi {
					cands = append(cands, x)
				}
			}
		}
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	sc.cands = cands
	out := windowCheck{fits: math.MaxInt64}
	lim := from64(limit)
	// i and j index the segments holding x and x+w; both only advance.
	i, j := 0, 0
	integral := func(k *int, t int64) i128 {
		for *k+1 < len(segs) && segs[*k+1].at <= t {
			*k++
		}
		return prefix[*k].add(mul128(segs[*k].level, t-segs[*k].at))
	}
	for _, x := range cands {
		var g i128
		for _, r := range rs {
			if ov := overlap(x, x+w, r.s, r.e); ov > 0 {
				g = g.add(mul128(r.a, ov))
			}
		}
		if !g.pos() {
			continue
		}
		f := integral(&j, x+w).sub(integral(&i, x))
		if v := f.add(g); !out.ok || out.after.less(v) {
			out.after, out.before = v, f
		}
		if !out.ok || out.usage.less(f) {
			out.usage = f
		}
		out.ok = true
		// Units over rs[0] that would fit beside this window's usage.
		if ov := overlap(x, x+w, rs[0].s, rs[0].e); ov > 0 {
			out.fits = min(out.fits, lim.sub(f).divFloor(ov))
		}
	}
	out.fits = max(out.fits, 0)
	return out
}

// windowScratch is maxWindow's reusable memory.
type windowScratch struct {
	segs   []ustep
	prefix []i128
	cands  []int64
}

// overlap returns |[a, b) ∩ [c, d)|.
func overlap(a, b, c, d int64) int64 { return max(0, min(b, d)-max(a, c)) }

// i128 is a two's-complement 128-bit integer: unit-time integrals of
// int64 levels over int64 spans overflow int64.
type i128 struct {
	hi int64
	lo uint64
}

func from64(v int64) i128 { return i128{hi: v >> 63, lo: uint64(v)} }

func mul128(a, b int64) i128 {
	neg := (a < 0) != (b < 0)
	ua, ub := absU(a), absU(b)
	hi, lo := bits.Mul64(ua, ub)
	r := i128{hi: int64(hi), lo: lo}
	if neg {
		r = r.neg()
	}
	return r
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-v) // -MinInt64 wraps to itself, which as uint64 is 2^63
	}
	return uint64(v)
}

func (x i128) add(y i128) i128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	return i128{hi: x.hi + y.hi + int64(c), lo: lo}
}

func (x i128) sub(y i128) i128 { return x.add(y.neg()) }

func (x i128) neg() i128 {
	lo, b := bits.Sub64(0, x.lo, 0)
	return i128{hi: -x.hi - int64(b), lo: lo}
}

func (x i128) pos() bool { return x.hi > 0 || x.hi == 0 && x.lo > 0 }

func (x i128) less(y i128) bool {
	if x.hi != y.hi {
		return x.hi < y.hi
	}
	return x.lo < y.lo
}

// clamp returns x limited to the int64 range.
func (x i128) clamp() int64 {
	switch {
	case x.less(from64(math.MinInt64)):
		return math.MinInt64
	case from64(math.MaxInt64).less(x):
		return math.MaxInt64
	}
	return int64(x.lo)
}

// divFloor returns floor(x / d) for d > 0, clamped to the int64 range.
func (x i128) divFloor(d int64) int64 {
	if x.hi < 0 {
		// Negative: no unit fits; the caller clamps to 0.
		return -1
	}
	if uint64(x.hi) >= uint64(d) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(uint64(x.hi), x.lo, uint64(d))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}
