// This file is a frozen copy of planner/indexed.go as of commit ee65182:
// the indexed timeline before the changes measured by this experiment.
// The experiment runs it side by side with the current one (contender
// "indexed@ee65182"), so that one run shows what the changes bought; the
// two must decide identically. Only names changed (package, types,
// helpers, the planner package qualifiers) and the invariant checks that
// only tests call were left out; its logic must not be edited.

package seed

import (
	"fmt"
	"github.com/ledgerd/ledgerd/planner"
	"math"
	"slices"
)

// Layout of the indexed timeline.
//
// The canonical free-block list is cut into chunks of at most fzChunkCap
// consecutive blocks. A fzChunk keeps its blocks as two flat int64 slices
// (start times and free amounts; a block ends where the next one starts, the
// last block of the timeline ends at planner.MaxTime). Over the chunks sits an
// implicit segment tree holding, per subtree, the minimum and maximum free
// amount.
//
// Why this shape rather than a balanced tree of blocks:
//   - Memory: a block costs 16 bytes of payload. Every fzChunk but a lone one
//     holds at least fzChunkCap/4 blocks in at most fzChunkCap slots, so the
//     arrays cost at most 64 bytes per block even in the worst case (about
//     20 on average), and a reservation adds at most two blocks: the
//     timeline stays within 128 bytes per live reservation by construction.
//     A pointer-based treap or AVL node would need 40–64 bytes per block
//     before allocator overhead and would scatter blocks over the heap.
//   - Speed: locating a time is a binary search over the fzChunk heads and then
//     inside one fzChunk; skipping a run of blocks with too little (or enough)
//     free capacity is one descent of the segment tree plus a scan of one
//     contiguous fzChunk, which the CPU prefetches well. Inserting or deleting
//     a block moves at most fzChunkCap elements inside one fzChunk.
//   - Structural changes (a fzChunk splits, or an underfull fzChunk is merged
//     with or refilled from a neighbour) rebuild the segment tree in
//     O(number of chunks); a split leaves two chunks of fzChunkCap/2 and a
//     merge or refill leaves chunks of at least 3/8 fzChunkCap, so at least
//     fzChunkCap/8 insertions or deletions separate two structural changes
//     of a fzChunk and the amortised cost is small.
//
// Searches therefore cost O(log n + fzChunkCap) per skipped run instead of the
// list's O(n) walk from the head, and Book/Release cost O(log n + fzChunkCap +
// blocks touched).
const (
	// fzChunkCap is the most blocks a fzChunk holds; a full fzChunk splits in two.
	fzChunkCap = 512
	// fzChunkMin is the fewest blocks a fzChunk holds when there are several:
	// below it, the fzChunk is merged with a neighbour (when the two fit in
	// three quarters of a fzChunk) or refilled from it.
	fzChunkMin = fzChunkCap / 4
)

// fzChunk is a run of consecutive canonical blocks.
//
// Invariant: len(start) == len(free) >= 1; start is strictly increasing;
// when the timeline has several chunks, mn and mx are the minimum and
// maximum of free whenever the fzChunk is not being modified. The summary of a
// lone fzChunk is not kept up to date: no search consults it (every segment
// tree search starts behind the current fzChunk, and there is none), and
// skipping its upkeep keeps short timelines as cheap as the plain list.
// splitChunk recomputes it when a second fzChunk appears.
type fzChunk struct {
	start  []int64
	free   []int64
	mn, mx int64
}

// summarize recomputes mn and mx.
func (c *fzChunk) summarize() { c.mn, c.mx = fzMinMax(c.free) }

// frozenIndexed is a Timeline that keeps the canonical free-block list in
// chunked flat arrays under a min/max segment tree (see the layout comment
// above), so that Earliest jumps to notBefore in O(log n) and skips runs of
// unsuitable blocks without visiting them. It makes exactly the decisions of
// the plain list timeline.
//
// An frozenIndexed is not safe for concurrent use.
type frozenIndexed struct {
	// origin is the instant the blocks have been trimmed to.
	// Invariant: chunks[0].start[0] == origin.
	origin int64
	// clock, when set, is the owning Planner's origin: the timeline
	// describes nothing before it even while origin lags (see advance.go).
	clock *int64
	// chunks holds the canonical blocks in order.
	// Invariant: non-empty; neighbouring blocks (also across chunks) differ
	// in free.
	chunks []*fzChunk
	// firsts mirrors the first start of every fzChunk for binary search.
	// Invariant: len(firsts) == len(chunks), firsts[i] == chunks[i].start[0].
	firsts []int64
	// seg summarises the free amounts of every fzChunk.
	// Invariant: with several chunks, leaf i holds the min and max of
	// chunks[i].free (a lone fzChunk's leaf may be stale, see fzChunk).
	seg fzSegTree
	// n is the total number of blocks.
	n int
	// hint is the fzChunk the last lookup landed in. Consecutive lookups of
	// one operation (search, check, split, merge) usually hit the same
	// fzChunk, so locate tries it before the binary search. It is only a
	// cache: any value is correct.
	hint int
	// loneHint is a block index of a lone fzChunk where the next lookup is
	// likely to land: Earliest leaves the block of the start it found,
	// which the Book that follows looks up. Only a cache: any value is
	// correct.
	loneHint int
}

var _ planner.Timeline = (*frozenIndexed)(nil)

// newFrozenIndexed returns an frozenIndexed with capacity free from origin to
// planner.MaxTime. It has the TimelineFactory signature. The caller (the Planner)
// validates capacity; a negative one is stored as given. An origin of
// planner.MaxTime is moved back by one so that the timeline is never empty (as the
// list timeline does).
func newFrozenIndexed(capacity, origin int64) planner.Timeline {
	if origin >= planner.MaxTime {
		origin = planner.MaxTime - 1
	}
	t := &frozenIndexed{
		origin: origin,
		chunks: []*fzChunk{{start: []int64{origin}, free: []int64{capacity}, mn: capacity, mx: capacity}},
		firsts: []int64{origin},
		n:      1,
	}
	t.seg.build(t.chunks)
	return t
}

// Origin returns the earliest instant the timeline still describes: the
// later of the trimmed origin and the owning Planner's clock.
func (t *frozenIndexed) Origin() int64 {
	if t.clock != nil && *t.clock > t.origin {
		return *t.clock
	}
	return t.origin
}

// Len returns the number of canonical free blocks.
func (t *frozenIndexed) Len() int { return t.n }

// locate returns the position of the block containing instant x, which must
// not lie before the origin.
func (t *frozenIndexed) locate(x int64) (ci, bi int) {
	// Last fzChunk whose first start is <= x.
	ci = t.hint
	if n := len(t.firsts); ci >= n || t.firsts[ci] > x || (ci+1 < n && t.firsts[ci+1] <= x) {
		ci = fzLastAtMost(t.firsts, x)
		t.hint = ci
	}
	return ci, fzLastAtMost(t.chunks[ci].start, x)
}

// fzLastAtMost returns the index of the last element <= x of the sorted,
// non-empty s, whose first element is <= x. The loop body has no
// unpredictable branch, which matters at a million blocks.
func fzLastAtMost(s []int64, x int64) int {
	base, n := 0, len(s)
	for n > 1 {
		half := n >> 1
		if s[base+half] <= x {
			base += half
		}
		n -= half
	}
	return base
}

// blockEnd returns the end of the block at (ci, bi).
func (t *frozenIndexed) blockEnd(ci, bi int) int64 {
	c := t.chunks[ci]
	if bi+1 < len(c.start) {
		return c.start[bi+1]
	}
	if ci+1 < len(t.chunks) {
		return t.firsts[ci+1]
	}
	return planner.MaxTime
}

// NextChange returns the first block boundary after x (x is clipped to the
// origin); ok is false when x lies in the last, open-ended block. The
// Planner uses it to enumerate candidate starts.
func (t *frozenIndexed) NextChange(x int64) (int64, bool) {
	if o := t.Origin(); x < o {
		x = o
	}
	ci, bi := t.locate(x)
	if bi+1 < len(t.chunks[ci].start) {
		return t.chunks[ci].start[bi+1], true
	}
	if ci+1 < len(t.chunks) {
		return t.firsts[ci+1], true
	}
	return 0, false
}

// nextAtLeast returns the first block at or after position (ci, bi) whose
// free is >= amount. bi may equal the fzChunk length.
func (t *frozenIndexed) nextAtLeast(ci, bi int, amount int64) (int, int, bool) {
	fr := t.chunks[ci].free
	for j := bi; j < len(fr); j++ {
		if fr[j] >= amount {
			return ci, j, true
		}
	}
	k := t.seg.firstMaxAtLeast(ci+1, amount)
	if k < 0 {
		return 0, 0, false
	}
	fr = t.chunks[k].free
	for j, f := range fr {
		if f >= amount {
			return k, j, true
		}
	}
	// Unreachable while the segment tree invariant holds.
	return 0, 0, false
}

// nextBelowBefore returns the first block at or after position (ci, bi) that
// starts before limit and whose free is < amount.
func (t *frozenIndexed) nextBelowBefore(ci, bi int, amount, limit int64) (int, int, bool) {
	c := t.chunks[ci]
	for j := bi; j < len(c.start); j++ {
		if c.start[j] >= limit {
			return 0, 0, false
		}
		if c.free[j] < amount {
			return ci, j, true
		}
	}
	k := t.seg.firstMinBelow(ci+1, amount)
	if k < 0 || t.firsts[k] >= limit {
		return 0, 0, false
	}
	c = t.chunks[k]
	for j := range c.start {
		if c.start[j] >= limit {
			return 0, 0, false
		}
		if c.free[j] < amount {
			return k, j, true
		}
	}
	return 0, 0, false
}

// Earliest returns the earliest start s in [notBefore, latestStart] such that
// free >= amount over [s, s+duration). A notBefore before the origin is
// treated as the origin. Invalid arguments yield ok == false.
func (t *frozenIndexed) Earliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	if amount <= 0 || duration <= 0 {
		return 0, false
	}
	if o := t.Origin(); notBefore < o {
		notBefore = o
	}
	if notBefore > latestStart || latestStart > planner.MaxTime-duration {
		return 0, false
	}
	if len(t.chunks) == 1 {
		return t.loneEarliest(amount, duration, notBefore, latestStart)
	}
	cand := notBefore
	ci, bi := t.locate(cand)
	for {
		if t.chunks[ci].free[bi] < amount {
			var ok bool
			ci, bi, ok = t.nextAtLeast(ci, bi+1, amount)
			if !ok {
				return 0, false
			}
			cand = t.chunks[ci].start[bi]
			if cand > latestStart {
				return 0, false
			}
		}
		// The block at (ci, bi) contains cand and has enough free: look
		// for the first short block before cand+duration.
		nci, nbi, found := t.nextBelowBefore(ci, bi+1, amount, cand+duration)
		if !found {
			return cand, true
		}
		ci, bi = nci, nbi
	}
}

// MinFree returns the smallest free capacity over [start, end), clipped to
// the origin. For an empty window it returns the free capacity at start
// (math.MaxInt64 at planner.MaxTime), as the list timeline does.
func (t *frozenIndexed) MinFree(start, end int64) int64 {
	if o := t.Origin(); start < o {
		start = o
	}
	if end <= start {
		if start >= planner.MaxTime {
			return math.MaxInt64
		}
		ci, bi := t.locate(start)
		return t.chunks[ci].free[bi]
	}
	mn, _ := t.rangeMinMax(start, end)
	return mn
}

// rangeMinMax returns the min and max free over [start, end) clipped to the
// origin; (MaxInt64, MinInt64) for an empty window.
func (t *frozenIndexed) rangeMinMax(start, end int64) (mn, mx int64) {
	mn, mx = math.MaxInt64, math.MinInt64
	if o := t.Origin(); start < o {
		start = o
	}
	if start >= end {
		return mn, mx
	}
	// Scan forward from the block containing start: windows are usually a
	// few blocks long, and this saves locating the end.
	ci, bi := t.locate(start)
	c := t.chunks[ci]
	for j := bi; j < len(c.start) && c.start[j] < end; j++ {
		mn, mx = min(mn, c.free[j]), max(mx, c.free[j])
	}
	if ci+1 == len(t.chunks) || t.firsts[ci+1] >= end {
		return mn, mx
	}
	// The window reaches into later chunks: the ones it covers entirely
	// are summarised by the segment tree (several chunks, so their
	// summaries are current), the last one is scanned.
	ce, be := t.locate(end - 1)
	smn, smx := t.seg.rangeMinMax(ci+1, ce)
	mn, mx = min(mn, smn), max(mx, smx)
	for _, f := range t.chunks[ce].free[:be+1] {
		mn, mx = min(mn, f), max(mx, f)
	}
	return mn, mx
}

// Blocks returns the canonical blocks intersecting [from, to), clipped to
// that window and to the origin. The result is freshly allocated and never
// nil.
func (t *frozenIndexed) Blocks(from, to int64) []planner.Block {
	if o := t.Origin(); from < o {
		from = o
	}
	out := []planner.Block{}
	if from >= to {
		return out
	}
	ci, bi := t.locate(from)
	for ; ci < len(t.chunks); ci, bi = ci+1, 0 {
		c := t.chunks[ci]
		for j := bi; j < len(c.start); j++ {
			s := c.start[j]
			if s >= to {
				return out
			}
			e := t.blockEnd(ci, j)
			out = append(out, planner.Block{Start: max(s, from), End: min(e, to), Free: c.free[j]})
		}
	}
	return out
}

// checkWindow validates a Book/Release window and clips it to the origin.
// ok is false when there is nothing to do: the window is empty after
// clipping or the amount is zero (both are no-ops, as in the list
// timeline). A negative amount is an error.
func (t *frozenIndexed) checkWindow(op string, start, end, amount int64) (s int64, ok bool, err error) {
	if o := t.Origin(); start < o {
		// The past is forgotten; only the part from the origin on counts.
		start = o
	}
	if end <= start || amount == 0 {
		return start, false, nil
	}
	if amount < 0 {
		return 0, false, fmt.Errorf("indexed timeline: %s: %w", op, &planner.FieldError{Field: "amount", Reason: "must be >= 0"})
	}
	return start, true, nil
}

// Book subtracts amount over [start, end). The part of the window before the
// origin is ignored; an empty window or a zero amount is a no-op. It returns an error wrapping planner.ErrNoCapacity, and changes
// nothing, if free < amount anywhere in the window.
func (t *frozenIndexed) Book(start, end, amount int64) error {
	s, ok, err := t.checkWindow("book", start, end, amount)
	if err != nil || !ok {
		return err
	}
	if len(t.chunks) == 1 {
		bi, j, mn, _ := t.loneWindow(s, end)
		if mn < amount {
			return fmt.Errorf("indexed timeline: book %d over [%d,%d): only %d free: %w", amount, start, end, mn, planner.ErrNoCapacity)
		}
		t.loneAdd(s, end, bi, j, -amount)
		return nil
	}
	if mn := t.MinFree(s, end); mn < amount {
		return fmt.Errorf("indexed timeline: book %d over [%d,%d): only %d free: %w", amount, start, end, mn, planner.ErrNoCapacity)
	}
	t.add(s, end, -amount)
	return nil
}

// Release adds amount over [start, end). The part of the window before the
// origin is ignored; an empty window or a zero amount is a no-op. It fails, changing nothing, if a free amount would
// overflow int64.
func (t *frozenIndexed) Release(start, end, amount int64) error {
	s, ok, err := t.checkWindow("release", start, end, amount)
	if err != nil || !ok {
		return err
	}
	if len(t.chunks) == 1 {
		bi, j, _, mx := t.loneWindow(s, end)
		if mx > math.MaxInt64-amount {
			return fmt.Errorf("indexed timeline: release %d over [%d,%d): %w", amount, start, end,
				&planner.FieldError{Field: "amount", Reason: "free capacity would overflow int64"})
		}
		t.loneAdd(s, end, bi, j, amount)
		return nil
	}
	if _, mx := t.rangeMinMax(s, end); mx > math.MaxInt64-amount {
		return fmt.Errorf("indexed timeline: release %d over [%d,%d): %w", amount, start, end,
			&planner.FieldError{Field: "amount", Reason: "free capacity would overflow int64"})
	}
	t.add(s, end, amount)
	return nil
}

// The lone-fzChunk fast path. While the whole timeline fits in one fzChunk
// (up to fzChunkCap blocks: every timeline of the seed experiment, which
// holds a few dozen) there is no tree to descend or maintain and no
// summary to keep (see fzChunk), so Book and Release work on the two flat
// arrays directly, as the plain list does on its slice: one lookup of the
// start (usually the block the preceding Earliest ended on, else a binary
// search), one forward scan over the window that both checks it and finds
// its end, and in-place edits. Earliest (loneEarliest) walks the arrays from
// the block containing notBefore, as the list walks its blocks.

// loneWindow returns, for a timeline of one fzChunk and a window
// origin <= start < end, the index bi of the block containing start, the
// index j of the first block starting at or after end (the fzChunk length if
// none does), and the min and max free over the window.
func (t *frozenIndexed) loneWindow(start, end int64) (bi, j int, mn, mx int64) {
	c := t.chunks[0]
	bi = t.loneFind(c.start, start)
	mn, mx = math.MaxInt64, math.MinInt64
	for j = bi; j < len(c.start) && c.start[j] < end; j++ {
		mn, mx = min(mn, c.free[j]), max(mx, c.free[j])
	}
	return bi, j, mn, mx
}

// loneAdd adds delta (non-zero) over [start, end) on a timeline of one
// fzChunk, given the positions loneWindow returned for that window, and
// restores canonical form. When the fzChunk has no room for the two blocks
// the window may add, it hands over to add, which splits the fzChunk.
func (t *frozenIndexed) loneAdd(start, end int64, bi, j int, delta int64) {
	c := t.chunks[0]
	if len(c.start)+2 > fzChunkCap {
		t.add(start, end, delta)
		return
	}
	// j > bi: the block containing start starts before end. Make end a
	// boundary (the block before j contains it), then start; neither
	// insertion lands at index 0, so the origin and firsts stay put.
	needEnd := end < planner.MaxTime && (j == len(c.start) || c.start[j] != end)
	switch needStart := c.start[bi] != start; {
	case needStart && needEnd:
		// One shift of the tail by two instead of two shifts by one.
		fs, fe := c.free[bi], c.free[j-1]
		c.start = fzInsert2(c.start, bi+1, j, start, end)
		c.free = fzInsert2(c.free, bi+1, j, fs, fe)
		bi, j = bi+1, j+1
		t.n += 2
	case needEnd:
		c.insert(j, end, c.free[j-1])
		t.n++
	case needStart:
		bi++
		c.insert(bi, start, c.free[bi-1])
		j++
		t.n++
	}
	for k := bi; k < j; k++ {
		c.free[k] += delta
	}
	// Only the edges can now equal their outer neighbours.
	if j < len(c.start) && c.free[j] == c.free[j-1] {
		c.remove(j)
		t.n--
	}
	if bi > 0 && c.free[bi] == c.free[bi-1] {
		c.remove(bi)
		t.n--
	}
}

// loneFind returns the index of the block of st (the starts of a lone
// fzChunk) that contains x >= origin, trying loneHint first.
func (t *frozenIndexed) loneFind(st []int64, x int64) int {
	if h := t.loneHint; h < len(st) && st[h] <= x && (h+1 == len(st) || st[h+1] > x) {
		return h
	}
	return fzLastAtMost(st, x)
}

// fzHeadScan is how many blocks fzHeadFind walks before it switches to a
// binary search.
const fzHeadScan = 16

// fzHeadFind returns the index of the last element <= x of the sorted,
// non-empty s, whose first element is <= x. Requests mostly look near the
// head of the timeline (the near future), where a short forward walk with
// predictable branches beats a binary search; beyond fzHeadScan elements it
// falls back to one.
func fzHeadFind(s []int64, x int64) int {
	n := min(len(s), fzHeadScan)
	for i := 1; i < n; i++ {
		if s[i] > x {
			return i - 1
		}
	}
	if n == len(s) {
		return n - 1
	}
	return n - 1 + fzLastAtMost(s[n-1:], x)
}

// fzInsert2 returns a with x inserted at index i and y at index j (i <= j,
// indices of a before the insertions): x lands at i, y at j+1.
func fzInsert2(a []int64, i, j int, x, y int64) []int64 {
	n := len(a)
	a = append(a, 0, 0)
	copy(a[j+2:], a[j:n])
	copy(a[i+1:j+1], a[i:j])
	a[i], a[j+1] = x, y
	return a
}

// loneEarliest is Earliest on a timeline of one fzChunk (arguments already
// checked and notBefore clipped to the origin): the candidate walk of the
// plain list, started at the block containing notBefore.
func (t *frozenIndexed) loneEarliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	c := t.chunks[0]
	st := c.start
	fr := c.free[:len(st)] // same length; lets the compiler drop bounds checks
	var cand int64
	have, at := false, 0
	for i := fzHeadFind(st, notBefore); i < len(st); i++ {
		if fr[i] < amount {
			have = false
			continue
		}
		if !have {
			cand = max(st[i], notBefore)
			if cand > latestStart {
				return 0, false
			}
			have, at = true, i
		}
		// The run [cand, end of block i) has enough free; cand <=
		// latestStart <= planner.MaxTime-duration, so cand+duration cannot
		// overflow.
		if i+1 < len(st) && st[i+1] < cand+duration {
			continue
		}
		t.loneHint = at
		return cand, true
	}
	return 0, false
}

// insert puts block (s, f) at index i of the fzChunk.
func (c *fzChunk) insert(i int, s, f int64) {
	c.start = append(c.start, 0)
	copy(c.start[i+1:], c.start[i:])
	c.start[i] = s
	c.free = append(c.free, 0)
	copy(c.free[i+1:], c.free[i:])
	c.free[i] = f
}

// remove deletes the block at index i of the fzChunk.
func (c *fzChunk) remove(i int) {
	c.start = append(c.start[:i], c.start[i+1:]...)
	c.free = append(c.free[:i], c.free[i+1:]...)
}

// add adds delta (non-zero) to the free amount over [start, end), with
// origin <= start < end, and restores canonical form.
func (t *frozenIndexed) add(start, end, delta int64) {
	if end < planner.MaxTime {
		t.splitAt(end)
	}
	sci, sbi := t.splitAt(start)
	// Walk the blocks of the window; (eci, ebi) ends up at the block that
	// starts at end, if there is one.
	eci, ebi, haveEnd := sci, sbi, false
	for eci < len(t.chunks) {
		c := t.chunks[eci]
		j := ebi
		rmn, rmx := int64(math.MaxInt64), int64(math.MinInt64)
		for ; j < len(c.start) && c.start[j] < end; j++ {
			rmn, rmx = min(rmn, c.free[j]), max(rmx, c.free[j])
			c.free[j] += delta
		}
		if j > ebi {
			t.adjusted(eci, ebi, j, rmn, rmx, delta)
		}
		if j < len(c.start) {
			ebi, haveEnd = j, true
			break
		}
		eci, ebi = eci+1, 0
	}
	// Only the two edges of the window can have become equal to their
	// outer neighbours: inside, all blocks moved by the same delta.
	// Removing the end edge leaves the start position valid unless chunks
	// were restructured.
	if haveEnd && t.mergePos(eci, ebi) {
		sci, sbi = t.locate(start)
	}
	t.mergePos(sci, sbi)
}

// adjusted updates the summary of fzChunk ci after delta was added to its
// blocks [from, to), whose old values ranged over [rmn, rmx]. It avoids a
// rescan of the fzChunk whenever the extremes can be derived: the whole fzChunk
// moved, or the side that moved away from an extreme did not hold it.
func (t *frozenIndexed) adjusted(ci, from, to int, rmn, rmx, delta int64) {
	if len(t.chunks) == 1 {
		return // a lone fzChunk's summary is not kept
	}
	c := t.chunks[ci]
	switch {
	case from == 0 && to == len(c.free):
		c.mn, c.mx = c.mn+delta, c.mx+delta
	case delta < 0 && rmx < c.mx:
		// The maximum lies outside the range; the minimum can only drop.
		c.mn = min(c.mn, rmn+delta)
	case delta > 0 && rmn > c.mn:
		// The minimum lies outside the range; the maximum can only rise.
		c.mx = max(c.mx, rmx+delta)
	default:
		c.summarize()
	}
	t.seg.set(ci, c.mn, c.mx)
}

// splitAt makes x a block boundary (x >= origin) and returns the position
// of the block that starts at x.
func (t *frozenIndexed) splitAt(x int64) (ci, bi int) {
	ci, bi = t.locate(x)
	c := t.chunks[ci]
	if c.start[bi] == x {
		return ci, bi
	}
	return t.insertAt(ci, bi+1, x, c.free[bi])
}

// mergePos removes the block at (ci, bi) if it has the same free amount as
// the block before it. It reports whether chunks were restructured, which
// invalidates positions.
func (t *frozenIndexed) mergePos(ci, bi int) (restructured bool) {
	if ci == 0 && bi == 0 {
		return false
	}
	c := t.chunks[ci]
	var prev int64
	if bi > 0 {
		prev = c.free[bi-1]
	} else {
		p := t.chunks[ci-1]
		prev = p.free[len(p.free)-1]
	}
	if prev != c.free[bi] {
		return false
	}
	return t.removeAt(ci, bi)
}

// insertAt inserts block (s, f) before position bi of fzChunk ci and returns
// the position it landed at.
func (t *frozenIndexed) insertAt(ci, bi int, s, f int64) (int, int) {
	if len(t.chunks[ci].start) >= fzChunkCap {
		t.splitChunk(ci)
		if half := len(t.chunks[ci].start); bi > half {
			ci, bi = ci+1, bi-half
		}
	}
	c := t.chunks[ci]
	c.start = slices.Insert(c.start, bi, s)
	c.free = slices.Insert(c.free, bi, f)
	if bi == 0 {
		t.firsts[ci] = s
	}
	t.n++
	if len(t.chunks) > 1 && (f < c.mn || f > c.mx) {
		c.mn, c.mx = min(c.mn, f), max(c.mx, f)
		t.seg.set(ci, c.mn, c.mx)
	}
	return ci, bi
}

// removeAt deletes the block at (ci, bi), which has the same free amount
// as the block before it (the caller merges equal neighbours; the first
// block of the timeline is never removed). It reports whether chunks were
// restructured (a fzChunk emptied or merged).
func (t *frozenIndexed) removeAt(ci, bi int) bool {
	c := t.chunks[ci]
	c.start = slices.Delete(c.start, bi, bi+1)
	c.free = slices.Delete(c.free, bi, bi+1)
	t.n--
	if len(c.start) == 0 {
		t.chunks = slices.Delete(t.chunks, ci, ci+1)
		t.firsts = slices.Delete(t.firsts, ci, ci+1)
		t.seg.build(t.chunks)
		return true
	}
	if bi == 0 {
		t.firsts[ci] = c.start[0]
	}
	if len(c.start) < fzChunkMin && t.rebalance(ci) {
		return true
	}
	if bi == 0 && len(t.chunks) > 1 {
		// The removed value may have been this fzChunk's only extreme.
		t.refresh(ci)
	}
	// Otherwise the removed block had the same free as its predecessor
	// in this fzChunk, so the extremes are unchanged.
	return false
}

// splitChunk cuts fzChunk ci into two halves, each allocated with room to
// grow to fzChunkCap without reallocating.
func (t *frozenIndexed) splitChunk(ci int) {
	c := t.chunks[ci]
	half := len(c.start) / 2
	right := &fzChunk{
		start: append(make([]int64, 0, fzChunkCap), c.start[half:]...),
		free:  append(make([]int64, 0, fzChunkCap), c.free[half:]...),
	}
	c.start = c.start[:half:cap(c.start)]
	c.free = c.free[:half:cap(c.free)]
	c.summarize()
	right.summarize()
	t.chunks = slices.Insert(t.chunks, ci+1, right)
	t.firsts = slices.Insert(t.firsts, ci+1, right.start[0])
	t.seg.build(t.chunks)
}

// rebalance restores the minimum fill of fzChunk ci when there are several
// chunks: it merges ci with a neighbour when the two fit in three quarters
// of a fzChunk, and otherwise moves blocks over from the neighbour so that
// both hold half of their sum (at least 3/8 fzChunkCap each). It reports
// whether it changed the chunks (and then it has rebuilt the index).
func (t *frozenIndexed) rebalance(ci int) bool {
	if len(t.chunks) < 2 || len(t.chunks[ci].start) >= fzChunkMin {
		return false
	}
	l := ci
	if ci+1 == len(t.chunks) {
		l = ci - 1
	}
	a, b := t.chunks[l], t.chunks[l+1]
	total := len(a.start) + len(b.start)
	switch half := total / 2; {
	case total <= fzChunkCap*3/4:
		a.start = append(a.start, b.start...)
		a.free = append(a.free, b.free...)
		t.chunks = slices.Delete(t.chunks, l+1, l+2)
		t.firsts = slices.Delete(t.firsts, l+1, l+2)
	case len(a.start) < half:
		k := half - len(a.start)
		a.start = append(a.start, b.start[:k]...)
		a.free = append(a.free, b.free[:k]...)
		b.start = slices.Delete(b.start, 0, k)
		b.free = slices.Delete(b.free, 0, k)
		t.firsts[l+1] = b.start[0]
		b.summarize()
	default:
		b.start = slices.Insert(b.start, 0, a.start[half:]...)
		b.free = slices.Insert(b.free, 0, a.free[half:]...)
		a.start = a.start[:half]
		a.free = a.free[:half]
		t.firsts[l+1] = b.start[0]
		b.summarize()
	}
	a.summarize()
	t.seg.build(t.chunks)
	return true
}

// refresh recomputes the summary of fzChunk ci after its blocks changed.
func (t *frozenIndexed) refresh(ci int) {
	c := t.chunks[ci]
	c.summarize()
	t.seg.set(ci, c.mn, c.mx)
}

// Advance forgets every block that ends at or before now; the block that
// contains now is clipped to start at now.
func (t *frozenIndexed) Advance(now int64) {
	if now <= t.origin {
		return
	}
	if now >= planner.MaxTime {
		now = planner.MaxTime - 1
	}
	if len(t.chunks) == 1 {
		// Walk from the head: the blocks passed over are the ones the
		// copy below moves past, so this costs no more than the copy,
		// and now is usually among the first few blocks.
		c := t.chunks[0]
		st, bi := c.start, 0
		for bi+1 < len(st) && st[bi+1] <= now {
			bi++
		}
		if bi > 0 {
			k := copy(c.start, c.start[bi:])
			c.start = c.start[:k]
			copy(c.free, c.free[bi:])
			c.free = c.free[:k]
			t.n -= bi
		}
		c.start[0] = now
		t.firsts[0] = now
		t.origin = now
		return
	}
	if now < t.blockEnd(0, 0) {
		// now lies in the first block: only its start moves, no free
		// amount changes, so every summary stays valid.
		t.chunks[0].start[0] = now
		t.firsts[0] = now
		t.origin = now
		return
	}
	ci, bi := t.locate(now)
	if ci > 0 {
		for _, c := range t.chunks[:ci] {
			t.n -= len(c.start)
		}
		t.chunks = slices.Delete(t.chunks, 0, ci)
		t.firsts = slices.Delete(t.firsts, 0, ci)
	}
	c := t.chunks[0]
	if bi > 0 {
		c.start = slices.Delete(c.start, 0, bi)
		c.free = slices.Delete(c.free, 0, bi)
		t.n -= bi
	}
	c.start[0] = now
	t.firsts[0] = now
	t.origin = now
	if len(t.chunks) == 1 {
		// A lone fzChunk's summary is not kept; the tree only needs to
		// shrink to one leaf so that no search looks past it.
		if ci > 0 {
			t.seg.build(t.chunks)
		}
		return
	}
	c.summarize()
	if !t.rebalance(0) {
		if ci > 0 {
			t.seg.build(t.chunks)
		} else {
			t.seg.set(0, c.mn, c.mx)
		}
	}
}

func fzMinMax(fr []int64) (mn, mx int64) {
	mn, mx = math.MaxInt64, math.MinInt64
	for _, f := range fr {
		mn = min(mn, f)
		mx = max(mx, f)
	}
	return mn, mx
}

// fzSegTree is an implicit binary tree over fzChunk summaries: node 1 is the
// root, node i has children 2i and 2i+1, leaf k is node size+k. Leaves past
// the last fzChunk hold the neutral (MaxInt64, MinInt64) so that no search
// ever selects them.
type fzSegTree struct {
	size   int
	mn, mx []int64
}

// build recomputes the tree from the chunks' cached summaries in
// O(len(chunks)), reusing storage.
func (s *fzSegTree) build(chunks []*fzChunk) {
	size := 1
	for size < len(chunks) {
		size <<= 1
	}
	s.size = size
	if cap(s.mn) < 2*size {
		s.mn = make([]int64, 2*size)
		s.mx = make([]int64, 2*size)
	}
	s.mn, s.mx = s.mn[:2*size], s.mx[:2*size]
	for i := range size {
		if i < len(chunks) {
			s.mn[size+i], s.mx[size+i] = chunks[i].mn, chunks[i].mx
		} else {
			s.mn[size+i], s.mx[size+i] = math.MaxInt64, math.MinInt64
		}
	}
	for i := size - 1; i >= 1; i-- {
		s.mn[i] = min(s.mn[2*i], s.mn[2*i+1])
		s.mx[i] = max(s.mx[2*i], s.mx[2*i+1])
	}
}

// set stores the summary of leaf k and updates its ancestors.
func (s *fzSegTree) set(k int, mn, mx int64) {
	i := s.size + k
	s.mn[i], s.mx[i] = mn, mx
	for i >>= 1; i >= 1; i >>= 1 {
		nmn := min(s.mn[2*i], s.mn[2*i+1])
		nmx := max(s.mx[2*i], s.mx[2*i+1])
		if nmn == s.mn[i] && nmx == s.mx[i] {
			return
		}
		s.mn[i], s.mx[i] = nmn, nmx
	}
}

// rangeMinMax returns the min and max over leaves [l, r).
func (s *fzSegTree) rangeMinMax(l, r int) (mn, mx int64) {
	mn, mx = math.MaxInt64, math.MinInt64
	for l, r = l+s.size, r+s.size; l < r; l, r = l>>1, r>>1 {
		if l&1 == 1 {
			mn, mx = min(mn, s.mn[l]), max(mx, s.mx[l])
			l++
		}
		if r&1 == 1 {
			r--
			mn, mx = min(mn, s.mn[r]), max(mx, s.mx[r])
		}
	}
	return mn, mx
}

// firstMaxAtLeast returns the first leaf >= from whose max is >= v, or -1.
func (s *fzSegTree) firstMaxAtLeast(from int, v int64) int {
	if from >= s.size {
		return -1
	}
	i := from + s.size
	for {
		if s.mx[i] >= v {
			for i < s.size {
				i <<= 1
				if s.mx[i] < v {
					i++
				}
			}
			return i - s.size
		}
		for i&1 == 1 {
			i >>= 1
		}
		if i == 0 {
			return -1
		}
		i++
	}
}

// firstMinBelow returns the first leaf >= from whose min is < v, or -1.
func (s *fzSegTree) firstMinBelow(from int, v int64) int {
	if from >= s.size {
		return -1
	}
	i := from + s.size
	for {
		if s.mn[i] < v {
			for i < s.size {
				i <<= 1
				if s.mn[i] >= v {
					i++
				}
			}
			return i - s.size
		}
		for i&1 == 1 {
			i >>= 1
		}
		if i == 0 {
			return -1
		}
		i++
	}
}
