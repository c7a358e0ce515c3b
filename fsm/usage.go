package fsm

import (
	"math"
	"math/bits"
	"slices"
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
//
// The steps are stored by value in sorted chunks (see stepChunk): a
// B-tree of pointers kept a 16-byte object per step besides its slot in
// a node (about 30 bytes a step in all, every one a pointer for the
// collector to scan), and a B-tree of values cannot change a level in
// place, which made add's raise of the steps in [s, e) a tree update per
// step. Most usages fit in one chunk, a plain sorted slice.
type usage struct {
	// chunks hold the steps in order. Invariant: no chunk is empty, each
	// holds at most maxChunk steps and its first is its first step's at.
	// An empty usage has no chunk; the array of its last one may stay
	// past the end of chunks, for the next insert (see clear).
	chunks []stepChunk
}

// stepChunk is a sorted run of a usage's steps.
type stepChunk struct {
	// first is steps[0].at: a search reads the chunk headers alone.
	first int64
	steps []ustep
}

// ustep is u(t) = level for t in [at, next step's at).
type ustep struct {
	at    int64
	level int64
}

// maxChunk bounds the steps of one chunk: an insert or a delete moves up
// to that many (8 KiB), and the usages of a tenant with bookings spread
// over many resources (a few hundred steps each) stay in one chunk.
const maxChunk = 512

func newUsage() *usage { return &usage{} }

// empty reports whether u is 0 everywhere.
func (u *usage) empty() bool { return len(u.chunks) == 0 }

// clear removes every step. A small array is kept for the next insert: a
// usage is created and dropped about once per booking, most often with
// two steps.
func (u *usage) clear() {
	var keep []ustep
	if len(u.chunks) == 1 && cap(u.chunks[0].steps) <= 16 {
		keep = u.chunks[0].steps[:0]
	}
	clear(u.chunks)
	u.chunks = u.chunks[:0]
	if keep != nil {
		u.chunks[:1][0].steps = keep
	}
}

// upper returns the position of the first step after t: chunk c, index i
// in it (i may be its length). c is the last chunk whose first is at or
// before t (0 if none), so a step at or before t is at i-1 in c when
// i > 0, and there is none when i == 0. u must not be empty.
func (u *usage) upper(t int64) (c, i int) {
	cs := u.chunks
	// The first chunk whose first is after t, less one.
	c = max(firstAfter(len(cs), t, func(k int) int64 { return cs[k].first }), 1) - 1
	steps := cs[c].steps
	return c, firstAfter(len(steps), t, func(k int) int64 { return steps[k].at })
}

// firstAfter returns the first k in [0, n) whose key(k) is after t, or n;
// the keys must be ascending. Written out rather than sort.Search: it
// inlines into upper with its key, which runs at every admission's
// limits check.
func firstAfter(n int, t int64, key func(k int) int64) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if key(m) <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// ceil returns the position of the first step at or after t (c ==
// len(u.chunks) when there is none). u must not be empty.
func (u *usage) ceil(t int64) (c, i int) {
	if t == math.MinInt64 {
		return 0, 0
	}
	c, i = u.upper(t - 1)
	if i == len(u.chunks[c].steps) {
		c, i = c+1, 0
	}
	return c, i
}

// descend calls f on the steps at or before t, from t down, until f
// returns false. f may change a step's level, never its at.
func (u *usage) descend(t int64, f func(st *ustep) bool) {
	if len(u.chunks) == 0 {
		return
	}
	c, i := u.upper(t)
	for {
		steps := u.chunks[c].steps
		for j := i - 1; j >= 0; j-- {
			if !f(&steps[j]) {
				return
			}
		}
		if c == 0 {
			return
		}
		c--
		i = len(u.chunks[c].steps)
	}
}

// levelAt returns u(t).
func (u *usage) levelAt(t int64) int64 {
	if len(u.chunks) == 0 {
		return 0
	}
	c, i := u.upper(t)
	if i == 0 {
		// Before the first step (see upper).
		return 0
	}
	return u.chunks[c].steps[i-1].level
}

// stepsFor returns a new array holding steps, with room for about a
// quarter more (at most maxChunk in all): growing by a quarter keeps the
// unused room of the arrays small, where append doubles them.
func stepsFor(steps []ustep) []ustep {
	n := len(steps)
	return append(stepArray(max(min(maxChunk, n+n/4+2), n)), steps...)
}

// stepArray returns an empty array with room for at least n steps.
// Appended, not made: the capacity is rounded up to the size class of the
// allocation, which would otherwise go unused.
func stepArray(n int) []ustep {
	return append([]ustep(nil), make([]ustep, n)...)[:0]
}

// insert adds st, whose at has no step.
func (u *usage) insert(st ustep) {
	if len(u.chunks) == 0 {
		if cap(u.chunks) == 0 {
			u.chunks = make([]stepChunk, 1)
		} else {
			u.chunks = u.chunks[:1]
		}
		ch := &u.chunks[0]
		ch.first, ch.steps = st.at, append(ch.steps[:0], st)
		return
	}
	c, i := u.upper(st.at)
	ch := &u.chunks[c]
	if len(ch.steps) == maxChunk {
		// Split in halves, each in an array of its own with room to grow.
		h := maxChunk / 2
		right := stepChunk{first: ch.steps[h].at, steps: stepsFor(ch.steps[h:])}
		ch.steps = stepsFor(ch.steps[:h])
		u.chunks = slices.Insert(u.chunks, c+1, right)
		if i > h {
			c, i = c+1, i-h
		}
		ch = &u.chunks[c]
	}
	if len(ch.steps) == cap(ch.steps) {
		ch.steps = stepsFor(ch.steps)
	}
	ch.steps = slices.Insert(ch.steps, i, st)
	ch.first = ch.steps[0].at
}

// remove deletes the step at at, which exists.
func (u *usage) remove(at int64) {
	c, i := u.upper(at)
	ch := &u.chunks[c]
	ch.steps = slices.Delete(ch.steps, i-1, i)
	switch n := len(ch.steps); {
	case n == 0:
		if len(u.chunks) == 1 {
			u.clear()
			return
		}
		u.chunks = slices.Delete(u.chunks, c, c+1)
		return
	case n < maxChunk/4 && c+1 < len(u.chunks) && n+len(u.chunks[c+1].steps) <= maxChunk/2:
		// A chunk this small joins the next one, so that a usage that
		// shrank does not keep many small chunks.
		ch.steps = stepsFor(append(ch.steps, u.chunks[c+1].steps...))
		u.chunks = slices.Delete(u.chunks, c+1, c+2)
	case n < maxChunk/4 && c > 0 && n+len(u.chunks[c-1].steps) <= maxChunk/2:
		prev := &u.chunks[c-1]
		prev.steps = stepsFor(append(prev.steps, ch.steps...))
		u.chunks = slices.Delete(u.chunks, c, c+1)
		return
	case cap(ch.steps) > 32 && n < cap(ch.steps)/2:
		// Give back the room of an array that shrank to less than half.
		ch.steps = stepsFor(ch.steps)
	}
	ch.first = ch.steps[0].at
}

// add adds a units over [s, e) (a may be negative to remove a booking).
//
// One walk down from e visits the step at e, raises the steps in [s, e)
// and stops at the first step before s, whose level is the one before s;
// it notes the steps at s and at e, and at most two inserts or deletes
// restore the invariant: a step at s is needed unless its new level
// repeats the one before s, and a step at e unless the one already there
// repeats the new level before e. (This replaced a split of s and e, a
// range walk and a merge of each, about ten searches of the tree; a step
// function has one canonical form, so the steps are the same.)
func (u *usage) add(s, e, a int64) {
	if e <= s || a == 0 {
		return
	}
	// before is u(s-1), 0 before the first step; last is u(e-1) before
	// the change; levelS and levelE are the levels of the steps at s
	// (after the change) and at e, if there are such steps.
	var before, last, levelS, levelE int64
	hasS, hasE, inside := false, false, false
	u.descend(e, func(st *ustep) bool {
		switch {
		case st.at == e:
			levelE, hasE = st.level, true
		case st.at >= s:
			if !inside {
				last, inside = st.level, true
			}
			// The at is unchanged, so the order holds.
			st.level += a
			if st.at == s {
				levelS, hasS = st.level, true
			}
		default:
			before = st.level
			return false
		}
		return true
	})
	if !inside {
		last = before
	}
	switch {
	case !hasE:
		// u(e) was last and stays so, after a different level.
		u.insert(ustep{at: e, level: last})
	case levelE == last+a:
		u.remove(e)
	}
	switch {
	case !hasS:
		u.insert(ustep{at: s, level: before + a})
	case levelS == before:
		u.remove(s)
	}
}

// segs returns the steps that cover [lo, hi) as (at, level) pairs: the
// first one starts at lo (with u(lo)), and a last one at hi closes them.
func (u *usage) segs(lo, hi int64, buf []ustep) []ustep {
	buf = append(buf[:0], ustep{at: lo, level: u.levelAt(lo)})
	if len(u.chunks) > 0 {
		// The steps in [lo+1, hi), a run of each chunk at a time.
		for c, i := u.ceil(lo + 1); c < len(u.chunks); c, i = c+1, 0 {
			steps := u.chunks[c].steps[i:]
			j := 0
			for j < len(steps) && steps[j].at < hi {
				j++
			}
			buf = append(buf, steps[:j]...)
			if j < len(steps) {
				break
			}
		}
	}
	return append(buf, ustep{at: hi})
}

// rect is a units over [s, e): one piece of what a booking adds.
type rect struct{ s, e, a int64 }

// maxUnits returns the largest u(t)+d(t) over the instants t where the
// delta d (the sum of rs) is positive, and u at that instant; ok is false
// when d is nowhere positive.
func (u *usage) maxUnits(rs []rect, buf []ustep) (peak, at int64, ok bool) {
	if len(rs) == 1 {
		// A new booking: one rectangle, so the peak is the highest level
		// over it, found in one walk down from its end without cutting
		// or copying: the steps in [s, e), then the level at s from the
		// step before s unless one starts at s (0 before the first).
		// Equal peaks have equal levels, so the order of the walk does
		// not change the answer.
		r := rs[0]
		if r.s >= r.e || r.a <= 0 {
			return 0, 0, false
		}
		var lv int64
		atS := false
		u.descend(r.e-1, func(st *ustep) bool {
			if st.at < r.s {
				lv = st.level
				return false
			}
			atS = st.at == r.s
			if v := st.level + r.a; !ok || v > peak {
				peak, at, ok = v, st.level, true
			}
			return !atS
		})
		if !atS {
			if v := lv + r.a; !ok || v > peak {
				peak, at, ok = v, lv, true
			}
		}
		return peak, at, ok
	}
	var cutBuf [8]int64
	cuts := cutBuf[:0]
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
