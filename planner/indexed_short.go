package planner

import (
	"fmt"
	"math"
)

// The short layout of the indexed timeline.
//
// A timeline of at most shortMax blocks (every timeline of the seed
// papers' cluster experiment, which holds a few dozen) keeps its canonical
// blocks in one flat slice of (start, free) pairs stored latest first: the
// open-ended last block at index 0, the block that starts at the origin at
// the end. The order is what makes it cheap:
//   - Advance drops the blocks that ended by shortening the slice: nothing
//     is copied and no offset is kept;
//   - requests look at the near future, the end of the slice, so the blocks
//     an insertion or a removal moves are the few between the origin and
//     the booking, not the many behind it;
//   - one slice of pairs is one bounds check and one cache line per block
//     visited, with no chunk pointer and no tree in between.
//
// Memory: 16 bytes per block, at most about twice that with the slice's
// room to grow, well within the chunks' bound of 64.
//
// A block's end is the start of the block below it in the slice (MaxTime
// for index 0). When an insertion would take the timeline past shortMax
// blocks it moves into chunks (toChunks) of at most three quarters of
// chunkCap; when the chunks shrink back to one (maybeShort), which holds
// at most chunkCap <= shortMax blocks, into this layout again. Between
// the two moves lie at least shortMax-chunkCap insertions or removals, so
// their O(n) copy is amortised.
const (
	// shortMax is the most blocks the short layout holds. Beyond a few
	// hundred blocks, an insertion far from the head moves more than a
	// chunk's tail would.
	shortMax = 512
	// shortInitCap is the capacity of a new timeline's slice: room for
	// the few dozen blocks a busy resource holds, without regrowing.
	shortInitCap = 32
	// shortScan is how many blocks shortFind walks from the head before
	// it switches to a binary search.
	shortScan = 16
)

// A lone chunk must fit the short layout (toShort); this fails to compile
// otherwise.
var _ [shortMax - chunkCap]struct{}

// sblock is one block of the short layout: it starts at start and ends
// where the block before it in the slice starts.
type sblock struct {
	start, free int64
}

// shortFind returns the index in rev of the block containing x >= origin.
// Lookups are mostly near the head (the end of the slice), where a short
// walk with predictable branches beats a binary search.
func (t *IndexedTimeline) shortFind(x int64) int {
	b := t.rev
	i := len(b) - 1
	for stop := max(i-shortScan, 0); i > stop; i-- {
		if b[i-1].start > x {
			return i
		}
	}
	if i == 0 {
		return 0
	}
	// Binary search over b[0:i+1], whose starts decrease: the smallest
	// index whose start is <= x (b[i].start <= x holds).
	lo, hi := 0, i
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if b[mid].start <= x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// shortWindow returns, for the window [start, end) whose start lies in
// block at, the index last of the block containing end-1 and the min and
// max free over the window.
func (t *IndexedTimeline) shortWindow(at int, end int64) (last int, mn, mx int64) {
	b := t.rev
	mn, mx = math.MaxInt64, math.MinInt64
	for last = at; ; last-- {
		mn, mx = min(mn, b[last].free), max(mx, b[last].free)
		if last == 0 || b[last-1].start >= end {
			return last, mn, mx
		}
	}
}

// Earliest returns the earliest start s in [notBefore, latestStart] such that
// free >= amount over [s, s+duration). A notBefore before the origin is
// treated as the origin. Invalid arguments yield ok == false.
//
// In the short layout it is the candidate walk of the plain list, from the
// head; the chunked layout has its own search (chunkedEarliest). The walk is
// written here rather than in a helper: one call less per search is a few
// per cent of an admission at these sizes.
//
// One loop both finds notBefore and walks on from it, so that a search
// costs one loop exit, not two (each is a mispredicted branch, which at
// a few dozen blocks costs more than the steps themselves): a block with
// too little free moves the candidate to its end if that is later, which
// leaves the candidate at notBefore for the blocks that end before it;
// the candidate fits once a block ends at least duration after it. The
// move is written so that the compiler can use a conditional move, as
// whether a block has enough free is as good as random.
func (t *IndexedTimeline) Earliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	if amount <= 0 || duration <= 0 {
		return 0, false
	}
	if o := t.Origin(); notBefore < o {
		notBefore = o
	}
	if notBefore > latestStart || latestStart > MaxTime-duration {
		return 0, false
	}
	b := t.rev
	if b == nil {
		return t.chunkedEarliest(amount, duration, notBefore, latestStart)
	}
	cand, at := notBefore, len(b)-1
	for i := len(b) - 1; i > 0; i-- {
		// at follows the block containing cand, for Book.
		if b[i].start <= cand {
			at = i
		}
		next := b[i-1].start
		if b[i].free < amount {
			cand = max(cand, next)
		}
		if cand > latestStart {
			return 0, false
		}
		// cand <= latestStart <= MaxTime-duration: no overflow.
		if next >= cand+duration {
			t.setFit(cand, cand+duration, amount, at, i)
			return cand, true
		}
	}
	// Block 0 runs to MaxTime.
	if b[0].free < amount {
		return 0, false
	}
	if b[0].start <= cand {
		at = 0
	}
	t.setFit(cand, cand+duration, amount, at, 0)
	return cand, true
}

// setFit remembers the window [start, end) Earliest found for amount,
// from block rev[at] to block rev[last]. (Field by field: a composite
// literal is built on the stack and copied.)
func (t *IndexedTimeline) setFit(start, end, amount int64, at, last int) {
	f := &t.fit
	f.ok, f.short = true, true
	f.start, f.end, f.amount, f.at, f.last = start, end, amount, at, last
}

// shortBook is Book in the short layout; s is start clipped to the origin
// and the window [s, end) is not empty, amount > 0.
func (t *IndexedTimeline) shortBook(start, s, end, amount int64) error {
	t.fit.ok = false
	at := t.shortFind(s)
	last, mn, _ := t.shortWindow(at, end)
	if mn < amount {
		return fmt.Errorf("indexed timeline: book %d over [%d,%d): only %d free: %w", amount, start, end, mn, ErrNoCapacity)
	}
	t.shortAdd(s, end, at, last, -amount)
	return nil
}

// shortRelease is Release in the short layout; s is start clipped to the
// origin and the window [s, end) is not empty, amount > 0.
func (t *IndexedTimeline) shortRelease(start, s, end, amount int64) error {
	at := t.shortFind(s)
	last, _, mx := t.shortWindow(at, end)
	if mx > math.MaxInt64-amount {
		return fmt.Errorf("indexed timeline: release %d over [%d,%d): %w", amount, start, end,
			&FieldError{Field: "amount", Reason: "free capacity would overflow int64"})
	}
	t.shortAdd(s, end, at, last, amount)
	return nil
}

// shortAdd adds delta (non-zero) over [start, end), origin <= start < end,
// whose start lies in block rev[at] and end-1 in block rev[last], and
// restores canonical form. When
// the two blocks the window may add would take the timeline past
// shortMax, it moves into chunks first.
//
// The result is written in one pass: each block moves at most once (the
// blocks before the window in time by dh, the window's by dw), and only
// the edges are looked at for merging, since inside the window every
// block moved by the same delta. A new edge block differs from its outer
// neighbour by delta, so an edge merges only where no boundary was added.
func (t *IndexedTimeline) shortAdd(start, end int64, at, last int, delta int64) {
	b := t.rev
	n := len(b)
	if n+2 > shortMax {
		t.toChunks()
		t.add(start, end, delta)
		t.maybeShort()
		return
	}
	if n+2 > cap(b) {
		nb := make([]sblock, n, 2*n+4)
		copy(nb, b)
		t.rev, b = nb, nb
	}
	splitE := end < MaxTime && (last == 0 || b[last-1].start != end)
	splitS := b[at].start != start
	mergeS := !splitS && at+1 < n && b[at].free+delta == b[at+1].free
	mergeE := !splitE && last > 0 && b[last-1].free == b[last].free+delta
	ps, fs, fe := b[at].start, b[at].free, b[last].free
	// Blocks [last, top] of the window stay (block at goes when its
	// start edge merges) and move by dw; the blocks above at move by dh.
	top := at - b2i(mergeS)
	dw := b2i(splitE) - b2i(mergeE)
	dh := dw + b2i(splitS) - b2i(mergeS)
	m := n + dh
	b = b[:max(n, m)]
	if dh > 0 {
		shiftBlocks(b, at+1, n, dh)
	}
	if dw != 0 {
		shiftBlocks(b, last, top+1, dw)
	}
	w := b[last+dw : top+1+dw]
	for k := range w {
		w[k].free += delta
	}
	if dh < 0 {
		shiftBlocks(b, at+1, n, dh)
	}
	if splitE {
		b[last] = sblock{start: end, free: fe}
	}
	if splitS {
		// Block at, now at top+dw, starts at start; its part before
		// start keeps the old free amount.
		b[top+dw].start = start
		b[top+dw+1] = sblock{start: ps, free: fs}
	}
	// Same backing array: only the length is stored (no write barrier).
	t.rev = t.rev[:m]
	t.n = m
}

// shortBookFit books amount over the window [start, end) that
// Earliest found, from block rev[at] to block rev[last]: every block of
// it has at least amount free and start >= origin.
//
// The usual booking lands inside blocks at both ends (a new boundary at
// start and at end): the blocks before the window in time move up by two
// places, the window's by one. That case, the one where the window starts
// on a boundary (the blocks before it move by one place, or stay when the
// window's first block merges into the block before it) and the one
// ending in the open-ended last block are written straight; the others
// (an end on a boundary or at MaxTime, a full slice) go to shortAdd.
func (t *IndexedTimeline) shortBookFit(start, end, amount int64, at, last int) {
	b := t.rev
	n := len(b)
	// Past shortMax blocks shortAdd moves the timeline into chunks.
	if n+2 > cap(b) || n+2 > shortMax || end == MaxTime || at >= n || last > at || last < 0 {
		t.shortAdd(start, end, at, last, -amount)
		return
	}
	// The block after the window in time starts at end: no new boundary
	// there, maybe a merge.
	if last > 0 && b[last-1].start == end {
		t.shortAdd(start, end, at, last, -amount)
		return
	}
	ps, fs, fe := b[at].start, b[at].free, b[last].free
	// d is how far the blocks before the window in time move: two places
	// when start splits block at, one when the window starts on a
	// boundary, none when it also merges there.
	d := 2
	if ps == start {
		if at+1 < n && fs-amount == b[at+1].free {
			t.shortBookMerged(end, amount, fe, at, last)
			return
		}
		d = 1
	}
	b = b[:n+d]
	shiftBlocks(b, at+1, n, d)
	// The window [last, at] moves up by one place and loses amount.
	w := b[last : at+2]
	for k := len(w) - 2; k >= 0; k-- {
		w[k+1] = sblock{start: w[k].start, free: w[k].free - amount}
	}
	if d == 2 {
		// Block at's part before start keeps its free amount.
		b[at+2] = sblock{start: ps, free: fs}
		b[at+1].start = start
	}
	b[last] = sblock{start: end, free: fe}
	// Same backing array: only the length is stored (no write barrier).
	t.rev = t.rev[:n+d]
	t.n = n + d
}

// shortBookMerged is shortBookFit for a window that starts where block
// at starts and whose first block, having lost amount, has the free
// amount of the block before it: block at merges into that block, the
// blocks before the window stay, the window's other blocks move up by one
// place and lose amount, and the new boundary at end (free fe) takes
// index last. The count of blocks does not change.
func (t *IndexedTimeline) shortBookMerged(end, amount, fe int64, at, last int) {
	b := t.rev
	w := b[last : at+1]
	for k := len(w) - 2; k >= 0; k-- {
		w[k+1] = sblock{start: w[k].start, free: w[k].free - amount}
	}
	b[last] = sblock{start: end, free: fe}
}

// b2i is 1 for true and 0 for false.
func b2i(x bool) int {
	if x {
		return 1
	}
	return 0
}

// shiftBlocks moves b[from:to] by d places (the ranges may overlap). A few
// blocks are moved by a loop, more by copy: the runtime's vector memmove
// is faster beyond a handful of 16-byte moves, slower below (a call).
func shiftBlocks(b []sblock, from, to, d int) {
	if to-from > 4 {
		copy(b[from+d:to+d], b[from:to])
		return
	}
	if d > 0 {
		for k := to - 1; k >= from; k-- {
			b[k+d] = b[k]
		}
		return
	}
	for k := from; k < to; k++ {
		b[k+d] = b[k]
	}
}

// Advance forgets every block that ends at or before now; the block that
// contains now is clipped to start at now.
//
// In the short layout the blocks that end are cut off the end of the
// slice. Whether now passes the first block's end is as good as random
// (the blocks near the head are short: bookings start there), so the
// usual case counts the boundaries now reaches among the next four
// without a branch: starts decrease with the index, so those boundaries
// are a suffix of the slice and their count is how many blocks go. The
// remembered fit stays: block indices count from the far end and do not
// move, and Book's use of it checks that the window does not start before
// the origin.
func (t *IndexedTimeline) Advance(now int64) {
	if now <= t.origin {
		return
	}
	b := t.rev
	if b == nil || now >= MaxTime {
		t.chunkedAdvance(now)
		return
	}
	if n := len(b); n >= 5 {
		c := b2i(b[n-2].start <= now) + b2i(b[n-3].start <= now) + b2i(b[n-4].start <= now) + b2i(b[n-5].start <= now)
		if c < 4 {
			n -= c
			b[n-1].start = now
			// Same backing array: only the length is stored (no
			// write barrier).
			t.rev = t.rev[:n]
			t.n = n
			t.origin = now
			return
		}
	}
	t.shortAdvance(now)
}

// shortAdvance is Advance in the short layout (origin < now < MaxTime):
// the blocks that end at or before now are cut off the end of the slice.
func (t *IndexedTimeline) shortAdvance(now int64) {
	b := t.rev
	n := len(b)
	for n > 1 && b[n-2].start <= now {
		n--
	}
	t.rev = t.rev[:n]
	b[n-1].start = now
	t.n = n
	t.origin = now
}

// shortNextChange is NextChange in the short layout (x >= origin).
func (t *IndexedTimeline) shortNextChange(x int64) (int64, bool) {
	i := t.shortFind(x)
	if i == 0 {
		return 0, false
	}
	return t.rev[i-1].start, true
}

// shortFirstEnd returns the end of the first block.
func (t *IndexedTimeline) shortFirstEnd() int64 {
	if n := len(t.rev); n > 1 {
		return t.rev[n-2].start
	}
	return MaxTime
}

// toChunks moves the blocks from the short layout into chunks.
func (t *IndexedTimeline) toChunks() {
	b := t.rev
	n := len(b)
	t.buildChunks(n, func(i int) (int64, int64) { return b[n-1-i].start, b[n-1-i].free })
	t.spare, t.rev = b[:0], nil
}

// maybeShort moves the blocks of a timeline whose chunks have shrunk to
// one into the short layout.
func (t *IndexedTimeline) maybeShort() {
	if t.rev == nil && len(t.chunks) == 1 {
		t.toShort()
	}
}

// toShort moves the blocks of a lone chunk into the short layout.
func (t *IndexedTimeline) toShort() {
	t.chunks[0].dup = countDup(t.chunks[0].start)
	t.compact(0, 0)
	c := t.chunks[0]
	n := len(c.start)
	b := t.spare
	if cap(b) < n+shortInitCap {
		b = make([]sblock, 0, n+shortInitCap)
	}
	b = b[:n]
	for i := range n {
		b[n-1-i] = sblock{start: c.start[i], free: c.free[i]}
	}
	t.rev, t.spare = b, nil
	t.clearChunks()
	t.hint, t.hintBi = 0, 0
	t.fit.ok = false
}

// buildChunks replaces the blocks by n blocks, block i being (start,
// free) = at(i), cut into chunks of at most three quarters of chunkCap so
// that the first insertions into a chunk do not split it, each with a
// quarter of its length to grow into.
func (t *IndexedTimeline) buildChunks(n int, at func(int) (int64, int64)) {
	k := (n + chunkCap*3/4 - 1) / (chunkCap * 3 / 4)
	t.clearChunks()
	for c := range k {
		lo, hi := c*n/k, (c+1)*n/k
		room := hi - lo + (hi-lo)/4 + 4
		ch := makeChunk(hi-lo, room)
		for i := range hi - lo {
			ch.start[i], ch.free[i] = at(lo + i)
		}
		t.chunks = append(t.chunks, ch)
		t.firsts = append(t.firsts, ch.start[0])
		t.runs = append(t.runs, chunkRun{})
		t.samp = append(t.samp, maxSamples[:]...)
		t.summarize(c)
	}
	t.n = n
	t.hint, t.hintBi = 0, 0
	t.fit.ok = false
	t.seg.build(t.chunks)
}

// checkShort verifies the short layout's invariants (see rev).
func (t *IndexedTimeline) checkShort() error {
	b := t.rev
	switch {
	case len(b) == 0 || len(b) != t.n:
		return fmt.Errorf("short layout: %d blocks, recorded %d", len(b), t.n)
	case len(b) > shortMax:
		return fmt.Errorf("short layout: %d blocks, more than %d", len(b), shortMax)
	case len(t.chunks) != 0 || len(t.firsts) != 0:
		return fmt.Errorf("short layout beside %d chunks", len(t.chunks))
	case b[len(b)-1].start != t.origin:
		return fmt.Errorf("first block starts at %d, origin is %d", b[len(b)-1].start, t.origin)
	}
	for i := len(b) - 2; i >= 0; i-- {
		if b[i].start <= b[i+1].start {
			return fmt.Errorf("short layout block %d: start %d not after %d", len(b)-1-i, b[i].start, b[i+1].start)
		}
		if b[i].free == b[i+1].free {
			return fmt.Errorf("short layout block %d: free %d equals its predecessor's", len(b)-1-i, b[i].free)
		}
	}
	return nil
}
