package planner

import (
	"fmt"
	"math"
	"slices"
)

// Layout of the indexed timeline.
//
// Two layouts, one at a time. A timeline of at most shortMax blocks (every
// timeline of the seed papers' cluster experiment and of the trace
// replays, which hold a few dozen) keeps them in one flat slice of
// (start, free) pairs, latest first, walked like the plain list but
// without its copies: see indexed_short.go. A longer timeline uses chunks:
//
// The canonical free-block list is cut into chunks of at most chunkCap
// consecutive blocks. A chunk keeps its blocks as two flat int64 slices
// (start times and free amounts; a block ends where the next one starts, the
// last block of the timeline ends at MaxTime). Over the chunks sits an
// implicit segment tree holding, per subtree, the minimum and maximum free
// amount.
//
// Why this shape rather than a balanced tree of blocks:
//   - Memory: a block costs 16 bytes of payload. Every chunk but a lone one
//     holds at least chunkCap/4 blocks in at most chunkCap slots, so the
//     arrays cost at most 64 bytes per block even in the worst case (about
//     20 on average), the chunk object (128 bytes with allocator
//     rounding), its samples (256 bytes) and its run descriptor (64
//     bytes) at most 3.5 more, and a reservation adds at most two blocks:
//     the timeline stays within 135 bytes per live reservation by
//     construction (about 35 measured at a million).
//     A pointer-based treap or AVL node would need 40–64 bytes per block
//     before allocator overhead and would scatter blocks over the heap.
//   - Speed: locating a time reads the chunk directory (equal buckets of
//     time, each naming the chunk its first instant lies in; see
//     chunkDir) and the few chunk heads it points at, instead of a binary
//     search over all of them; then a search of the chunk's samples
//     (every sampleStep-th start, kept in one flat array for all chunks)
//     and a scan of one run of sampleStep starts found through a flat
//     array of the chunks' slices. At a million blocks the directory,
//     heads, samples and slices take about 1 MiB, so that the run's
//     address is known without the chunk object, rather than after a
//     chain of eight misses. Skipping a run of blocks with too little (or
//     enough) free capacity is one descent of the segment tree plus a scan
//     of one contiguous chunk, which the CPU prefetches well. Inserting or
//     deleting a block moves the blocks on the shorter side of it inside
//     one chunk (at most chunkCap/2, a quarter of the chunk on average; see
//     chunk).
//   - Structural changes (a chunk splits, or an underfull chunk is merged
//     with or refilled from a neighbour) rebuild the segment tree from
//     that chunk on, O(number of chunks); a split leaves two chunks of
//     chunkCap/2 and a merge or refill leaves chunks of at least 3/8
//     chunkCap, so at least chunkCap/8 insertions or deletions separate
//     two structural changes of a chunk and the amortised cost is small.
//   - Room inside a chunk: a slot may hold a copy of the next one (see
//     copies), so that a merge rewrites one start in place and an
//     insertion moves only the slots up to a nearby copy, within the
//     lines its lookup just read; only a chunk without a copy in reach
//     moves the shorter side of the change. Copies cost no memory
//     beyond the slots (at most chunkCap/8 per chunk, and a chunk still
//     holds at least chunkMin blocks besides them), so the bound above
//     holds.
//
// Searches therefore cost O(log n + chunkCap) per skipped run instead of the
// list's O(n) walk from the head, and Book/Release cost O(log n + chunkCap +
// blocks touched).
const (
	// chunkCap is the most slots (blocks and their copies) a chunk holds;
	// a full chunk without copies splits in two.
	// (256 was measured beside it: benchmarks/planner/README.md.)
	chunkCap = 512
	// chunkMin is the fewest blocks a chunk holds when there are several:
	// below it, the chunk is merged with a neighbour (when the two fit in
	// three quarters of a chunk) or refilled from it.
	chunkMin = chunkCap / 4
	// sampleShift sets the sample step of a chunk: every 1<<sampleShift-th
	// start is copied into the chunk's sample array.
	sampleShift = 5
	// sampleStep is the number of blocks between two samples.
	sampleStep = 1 << sampleShift
	// chunkSamples is the length of a chunk's sample array.
	chunkSamples = chunkCap / sampleStep
)

// chunk is a run of consecutive canonical blocks.
//
// Invariant: len(start) == len(free) >= 1; start is non-decreasing (a
// run of equal starts is one block and its copies, see placeCopy); when
// the timeline has several chunks, mn and mx are the minimum and
// maximum of free whenever the chunk is not being modified. A lone chunk
// exists only inside an operation (at its end the blocks move into the
// short layout); its summary is not kept up to date, since no search
// consults it (every segment tree search starts behind the current chunk,
// and there is none). splitChunk recomputes it when a second chunk appears.
//
// The blocks of a chunk occupy a window [off, off+n) of its backing
// arrays sb and fb, with room on both sides, and start and free are that
// window. An insertion without a copy in reach (see copies) moves the
// blocks on the shorter side of the change (the head [0, i) towards or
// away from the window's start, or the tail as before), so that it moves
// a quarter of the chunk on average instead of half: at a million blocks those are cold lines, read once
// before the shift. The chunk's samples and a copy of its backing arrays
// and window live outside the chunk object, in the timeline's flat samp
// and runs arrays (see IndexedTimeline), so that a lookup need not wait
// for the chunk object before it knows where its run lies.
//
// Invariant: start == sb[off:off+len(start)] and free ==
// fb[off:off+len(free)] (same arrays), len(sb) == len(fb) <= chunkCap,
// whenever the chunk is not being modified; code that changes start and
// free as plain slices (append, slices.Insert) calls adopt after.
type chunk struct {
	start  []int64
	free   []int64
	mn, mx int64
	sb, fb []int64
	off    int
	// dup is the number of copies among the chunk's slots (see
	// copies below). Invariant: dup <= maxDup.
	dup int
}

// Copies: room inside a chunk.
//
// A slot of a chunk's window may hold a copy of the slot after it (same
// start, same free): a block of zero length that no reader can tell from
// the block it copies, since every lookup lands on the last slot of a
// run of equal slots (the block itself, which ends where the next
// distinct start begins) and every search over free amounts sees the
// copy's free beside the block's. A block merged away (Remove, Release)
// becomes a copy of its predecessor by a write of its start, instead of
// a shift of the shorter side of the chunk; an insertion (Book) takes the
// nearest copy within copyReach slots and moves only the blocks between,
// which the lookup has just read. Only when there is none does a change
// move the shorter side as before.
//
// Invariant: the slots of a chunk are non-decreasing in start; two
// neighbouring slots with the same start have the same free (the first
// is a copy); the last slot of a chunk is never a copy (copies never
// reach into the next chunk); neighbouring blocks (the last slots of
// their runs) differ in free as before. t.n counts blocks, not copies.
// A chunk holds at most maxDup copies; one that would hold more, or a
// chunk that is split, merged, refilled or handed over to the short
// layout, is compacted first (compact).
const (
	// maxDup is the most copies a chunk holds.
	maxDup = chunkCap / 8
	// copyReach is how far from the change an insertion looks for a copy.
	copyReach = sampleStep
	// dupWarm is the number of copies from which the first lookup of an
	// Earliest no longer reads ahead the shorter side of its chunk even
	// when its run holds no copy: the Book will most likely find one in
	// reach of the change.
	dupWarm = 8
)

// newChunk returns a chunk holding copies of start and free, centred in
// backing arrays of room slots (at least len(start)).
func newChunk(start, free []int64, room int) *chunk {
	c := makeChunk(len(start), room)
	copy(c.start, start)
	copy(c.free, free)
	return c
}

// makeChunk returns a chunk of n zero blocks centred in backing arrays of
// room slots (at least n).
func makeChunk(n, room int) *chunk {
	room = max(room, n)
	c := &chunk{sb: make([]int64, room), fb: make([]int64, room), off: (room - n) / 2}
	c.view(n)
	return c
}

// view sets start and free to the window of n blocks from off.
func (c *chunk) view(n int) {
	c.start = c.sb[c.off : c.off+n]
	c.free = c.fb[c.off : c.off+n]
}

// adopt restores the window invariant after start and free were changed
// as plain slices: in place when they still begin at the window's first
// slot, otherwise by copying them into new centred backing arrays.
func (c *chunk) adopt() {
	n := len(c.start)
	if n > 0 && c.off+n <= len(c.sb) && c.off+n <= len(c.fb) && &c.start[0] == &c.sb[c.off] && &c.free[0] == &c.fb[c.off] {
		c.view(n)
		return
	}
	nc := newChunk(c.start, c.free, chunkCap)
	c.sb, c.fb, c.off = nc.sb, nc.fb, nc.off
	c.view(n)
}

// chunkRun is a copy of a chunk's backing arrays and window, kept in the
// flat runs array of the timeline (see IndexedTimeline.runs).
type chunkRun struct {
	sb, fb []int64
	off, n int
}

// samples returns the sample array of chunk ci (see IndexedTimeline.samp).
func (t *IndexedTimeline) samples(ci int) []int64 {
	k := ci * chunkSamples
	return t.samp[k : k+chunkSamples : k+chunkSamples]
}

// summarize restores the window of chunk ci (see adopt) and recomputes
// its minimum, maximum, samples and run: the whole summary of a chunk
// whose blocks were replaced.
func (t *IndexedTimeline) summarize(ci int) {
	c := t.chunks[ci]
	c.adopt()
	c.mn, c.mx = minMax(c.free)
	c.dup = countDup(c.start)
	t.resample(ci, 0, chunkCap)
}

// countDup returns the number of copies among the slots st.
func countDup(st []int64) int {
	d := 0
	for j := 1; j < len(st); j++ {
		if st[j] == st[j-1] {
			d++
		}
	}
	return d
}

// compact removes every copy of chunk ci (see copies) and returns the
// new index of slot keep (the number of blocks before it; keep may be
// len(start)), for a caller about to change the chunk's blocks as a
// plain list. A chunk without copies is left as it is.
func (t *IndexedTimeline) compact(ci, keep int) int {
	c := t.chunks[ci]
	if c.dup == 0 {
		return keep
	}
	st, fr := c.start, c.free
	w, nk := 0, keep
	for j := range st {
		if j == keep {
			nk = w
		}
		if j+1 < len(st) && st[j+1] == st[j] {
			continue
		}
		st[w], fr[w] = st[j], fr[j]
		w++
	}
	if keep >= len(st) {
		nk = w
	}
	c.view(w)
	c.dup = 0
	t.resample(ci, 0, chunkCap)
	return nk
}

// groupStart returns the first slot of the run of equal slots that ends
// at slot bi of chunk c: bi itself unless copies of it precede it.
func groupStart(c *chunk, bi int) int {
	for bi > 0 && c.start[bi-1] == c.start[bi] {
		bi--
	}
	return bi
}

// groupLen returns the number of slots of chunk c from slot g on that
// hold the same start as slot g.
func groupLen(c *chunk, g int) int {
	q := g + 1
	for q < len(c.start) && c.start[q] == c.start[g] {
		q++
	}
	return q - g
}

// placeCopy inserts block (s, f) after the block at slot k of chunk ci
// (the last slot of its run) into the nearest copy within copyReach
// slots, moving only the slots between, and returns the index where the
// block landed; ok is false when there is no copy in reach (nothing
// changed).
func (t *IndexedTimeline) placeCopy(ci, k int, s, f int64) (int, bool) {
	c := t.chunks[ci]
	if c.dup == 0 {
		return 0, false
	}
	st, fr := c.start, c.free
	left, right := nearestCopy(st, k)
	switch {
	case left >= 0:
		copy(st[left:k], st[left+1:k+1])
		copy(fr[left:k], fr[left+1:k+1])
		st[k], fr[k] = s, f
		c.dup--
		t.resample(ci, c.off+left, c.off+k+1)
		return k, true
	case right >= 0:
		copy(st[k+2:right+1], st[k+1:right])
		copy(fr[k+2:right+1], fr[k+1:right])
		st[k+1], fr[k+1] = s, f
		c.dup--
		t.resample(ci, c.off+k+1, c.off+right+1)
		return k + 1, true
	}
	return 0, false
}

// nearestCopy returns the copy (a slot p with p+1 < len(st) and
// st[p] == st[p+1]) within copyReach slots of slot k that an insertion
// after k takes, as left (p < k) or right (p > k), the other -1, or both
// -1 when there is none. A copy to the right at p moves the slots
// [k+1, p), one to the left the slots [p+1, k]: the nearer one wins, the
// right one at equal distance.
//
// The search goes outwards from k, one slot on each side per step, so
// that it stops at the nearest copy without reading the far side: at a
// million blocks the slots beyond k's run lie on lines the lookup did not
// fetch, and searching the whole reach to the right first cost a cache
// miss in most insertions whose copy lay to the left.
func nearestCopy(st []int64, k int) (left, right int) {
	n := len(st)
	for d := 1; d <= copyReach; d++ {
		if p := k + d; p+1 < n && st[p] == st[p+1] {
			return -1, p
		}
		if p := k - d; p >= 0 && st[p] == st[p+1] {
			return p, -1
		}
		if k+d+1 >= n && k-d <= 0 {
			break
		}
	}
	return -1, -1
}

// copyOut turns the block whose run of slots starts at slot g of chunk
// c (g > 0), and which has the same free as the block before it, into
// copies of that block: the merge of the two, without moving a slot. The
// chunk gains one copy (the predecessor's last slot; the block's own
// copies were counted already). It returns how many slots it rewrote
// (the caller resamples them).
func copyOut(c *chunk, g int) int {
	st := c.start
	s, prev := st[g], st[g-1]
	q := g
	for ; q < len(st) && st[q] == s; q++ {
		st[q] = prev
	}
	c.dup++
	return q - g
}

// resample records chunk ci's window in runs and recomputes its samples
// of the slot groups that overlap slots [lo, hi) of its backing arrays,
// after blocks moved there or the window's edges did. Every change of a
// chunk's blocks is followed by resample or summarize.
func (t *IndexedTimeline) resample(ci, lo, hi int) {
	c := t.chunks[ci]
	n := len(c.start)
	// Field by field: a composite literal is built on the stack and
	// copied with wide loads of the narrow stores just made, which stall
	// (with the same in bookTable.addAt, -0.8 % per admission at a
	// million blocks, in 300 interleaved pairs).
	r := &t.runs[ci]
	r.sb, r.fb, r.off, r.n = c.sb, c.fb, c.off, n
	samp := t.samples(ci)
	end := c.off + n
	hi = min(hi, chunkCap)
	for g := max(lo, 0) >> sampleShift; g<<sampleShift < hi; g++ {
		a := g << sampleShift
		switch {
		case a+sampleStep <= c.off:
			samp[g] = math.MinInt64
		case a >= end:
			samp[g] = math.MaxInt64
		default:
			samp[g] = c.sb[max(a, c.off)]
		}
	}
}

// wantSample is the sample of slot group g of chunk c (see
// IndexedTimeline.samp).
func wantSample(c *chunk, g int) int64 {
	a := g << sampleShift
	switch {
	case a+sampleStep <= c.off:
		return math.MinInt64
	case a >= c.off+len(c.start):
		return math.MaxInt64
	}
	return c.sb[max(a, c.off)]
}

// headSide reports whether an insertion of k blocks into chunk ci
// should move the head of the window rather than the tail: the head when
// head (the caller's choice: the shorter side) is set and there is room
// before the window, or when there is none after it. When neither side
// has room it first centres the window.
func (t *IndexedTimeline) headSide(ci, k int, head bool) bool {
	c := t.chunks[ci]
	n := len(c.start)
	if c.off < k && c.off+n+k > len(c.sb) {
		// No room on either side: centre the window, in arrays of
		// chunkCap slots when the present ones are too small.
		size := len(c.sb)
		if n+k > size {
			size = chunkCap
		}
		sb, fb := c.sb, c.fb
		if size != len(c.sb) {
			sb, fb = make([]int64, size), make([]int64, size)
		}
		off := (size - n - k) / 2 // room for k after the window at least
		copy(sb[off:off+n], c.start)
		copy(fb[off:off+n], c.free)
		c.sb, c.fb, c.off = sb, fb, off
		c.view(n)
		t.resample(ci, 0, chunkCap)
	}
	switch {
	case c.off < k:
		return false
	case c.off+n+k > len(c.sb):
		return true
	}
	return head
}

// insert2 inserts x before index i and y before index j (i <= j, indices
// before the insertions) of chunk ci: x lands at i, y at j+1. The
// chunk must have room for two more blocks.
func (t *IndexedTimeline) insert2(ci, i, j int, x, fx, y, fy int64) {
	c := t.chunks[ci]
	n := len(c.start)
	if t.headSide(ci, 2, i < n-j) {
		o := c.off - 2
		for _, p := range [2]struct {
			a    []int64
			x, y int64
		}{{c.sb[o : o+n+2], x, y}, {c.fb[o : o+n+2], fx, fy}} {
			a := p.a
			copy(a[0:i], a[2:i+2])
			a[i] = p.x
			copy(a[i+1:j+1], a[i+2:j+2])
			a[j+1] = p.y
		}
		c.off = o
		c.view(n + 2)
		t.resample(ci, o, o+j+2)
		return
	}
	o := c.off
	for _, p := range [2]struct {
		a    []int64
		x, y int64
	}{{c.sb[o : o+n+2], x, y}, {c.fb[o : o+n+2], fx, fy}} {
		a := p.a
		copy(a[j+2:], a[j:n])
		copy(a[i+1:j+1], a[i:j])
		a[i], a[j+1] = p.x, p.y
	}
	c.view(n + 2)
	t.resample(ci, o+i, o+n+2)
}

// insert1 inserts (s, f) before index i of chunk ci, which must have room
// for one more block.
func (t *IndexedTimeline) insert1(ci, i int, s, f int64) {
	c := t.chunks[ci]
	n := len(c.start)
	if t.headSide(ci, 1, i < n-i) {
		o := c.off - 1
		a, b := c.sb[o:o+n+1], c.fb[o:o+n+1]
		copy(a[0:i], a[1:i+1])
		copy(b[0:i], b[1:i+1])
		a[i], b[i] = s, f
		c.off = o
		c.view(n + 1)
		t.resample(ci, o, o+i+1)
		return
	}
	o := c.off
	a, b := c.sb[o:o+n+1], c.fb[o:o+n+1]
	copy(a[i+1:], a[i:n])
	copy(b[i+1:], b[i:n])
	a[i], b[i] = s, f
	c.view(n + 1)
	t.resample(ci, o+i, o+n+1)
}

// delete1 removes the block at index i of chunk ci.
func (t *IndexedTimeline) delete1(ci, i int) {
	c := t.chunks[ci]
	n := len(c.start)
	o := c.off
	a, b := c.sb[o:o+n], c.fb[o:o+n]
	if i < n-1-i {
		copy(a[1:i+1], a[0:i])
		copy(b[1:i+1], b[0:i])
		c.off = o + 1
		c.view(n - 1)
		t.resample(ci, o, o+i+1)
		return
	}
	copy(a[i:], a[i+1:])
	copy(b[i:], b[i+1:])
	c.view(n - 1)
	t.resample(ci, o+i, o+n)
}

// insertChunk inserts c at position ci of the chunks, with its head,
// samples and run. The caller rebuilds the segment tree.
func (t *IndexedTimeline) insertChunk(ci int, c *chunk) {
	t.chunks = slices.Insert(t.chunks, ci, c)
	t.firsts = slices.Insert(t.firsts, ci, c.start[0])
	t.runs = slices.Insert(t.runs, ci, chunkRun{})
	t.samp = slices.Insert(t.samp, ci*chunkSamples, maxSamples[:]...)
	t.dir.inserted(ci)
	t.summarize(ci)
}

// deleteChunks removes the chunks at positions [i, j), with their heads,
// samples and runs. The caller rebuilds the segment tree.
func (t *IndexedTimeline) deleteChunks(i, j int) {
	t.chunks = slices.Delete(t.chunks, i, j)
	t.firsts = slices.Delete(t.firsts, i, j)
	t.runs = slices.Delete(t.runs, i, j)
	t.samp = slices.Delete(t.samp, i*chunkSamples, j*chunkSamples)
	t.dir.deleted(i, j)
}

// clearChunks removes every chunk, keeping the arrays' storage.
func (t *IndexedTimeline) clearChunks() {
	clear(t.chunks)
	clear(t.runs)
	t.chunks, t.firsts, t.runs, t.samp = t.chunks[:0], t.firsts[:0], t.runs[:0], t.samp[:0]
	t.dir.reset()
}

// maxSamples is the sample array of a chunk with no blocks.
var maxSamples = func() (s [chunkSamples]int64) {
	for k := range s {
		s[k] = math.MaxInt64
	}
	return s
}()

// find returns the index of the last block of chunk ci starting at or
// before x, which must not lie before the chunk's first start, and that
// block's free amount: a search of the samples, then a scan of the run
// of starts of one slot group. Neither step reads the chunk object: the
// samples and the run's arrays come from the flat samp and runs arrays,
// so the run is the only read that depends on a cold one. The scan reads
// the run's free amounts alongside the starts, without a branch, so that
// the cache misses of the two arrays overlap instead of following one
// another.
func (t *IndexedTimeline) find(ci int, x int64) (int, int64) {
	r, lo, hi := t.group(ci, x)
	return r.scan(lo, hi, x)
}

// group returns the run descriptor of chunk ci and the slots [lo, hi)
// of the slot group holding the last block starting at or before x.
func (t *IndexedTimeline) group(ci int, x int64) (r *chunkRun, lo, hi int) {
	// The search runs over the whole sample array, whose groups outside
	// the window hold MinInt64 (before) and MaxInt64 (after).
	g := lastAtMost(t.samples(ci), x)
	r = &t.runs[ci]
	end := r.off + r.n
	lo = max(g<<sampleShift, r.off)
	if lo >= end {
		// Only x == MaxInt64 gets here: the last group of the window.
		lo = max((end-1)&^(sampleStep-1), r.off)
	}
	return r, lo, min((lo|(sampleStep-1))+1, end)
}

// scan returns the index (in the window) of the last block of slots
// [lo, hi) starting at or before x, and its free amount.
func (r *chunkRun) scan(lo, hi int, x int64) (int, int64) {
	st, fr := r.sb[lo:hi], r.fb[lo:hi]
	bi, f := 0, fr[0]
	for j := 1; j < len(st) && j < len(fr); j++ {
		if st[j] <= x {
			bi, f = j, fr[j]
		}
	}
	return lo + bi - r.off, f
}

// findWarm is find for the first lookup of an Earliest. That lookup is
// usually followed by a Book in the same chunk, which shifts the shorter
// side of the chunk from the window on (the head before it or the tail
// after it) by one or two places: up to hundreds of cold starts and free
// amounts. findWarm reads one value per cache line of that side (in both
// arrays, up to the run of x) while the lines of x's own run are on their
// way, so that all these misses overlap instead of coming one after
// another in the shift. It returns the sum of what it read, which the
// caller keeps so that the loads are not dropped. It also reads the
// chunk object, which the Book needs next. A chunk holding copies is
// read ahead only when x's run holds none and the chunk fewer than
// dupWarm: otherwise its Book most likely takes a copy near x (see
// copies) and moves nothing cold.
func (t *IndexedTimeline) findWarm(ci int, x int64) (int, int64, int64) {
	r, lo, hi := t.group(ci, x)
	// One load per 64-byte line of each array: the loads do not depend
	// on one another or on the run, so they are all in flight at once.
	from, to := r.off, lo
	if lo-r.off >= r.off+r.n-hi {
		from, to = hi, r.off+r.n
	}
	c := t.chunks[ci] // its load does not depend on the run's either
	w := c.mn
	if c.dup == 0 {
		for k := from; k < to; k += 8 {
			w += r.sb[k] + r.fb[k]
		}
		bi, f := r.scan(lo, hi, x)
		return bi, f, w
	}
	// The chunk holds copies: the Book takes one if there is one near x.
	// Whether the run holds one is known once the run is here; only
	// without one are the lines of the shorter side read, late.
	bi, f := r.scan(lo, hi, x)
	if c.dup < dupWarm && !r.hasCopy(lo, hi) {
		for k := from; k < to; k += 8 {
			w += r.sb[k] + r.fb[k]
		}
	}
	return bi, f, w
}

// hasCopy reports whether slots [lo, hi) hold a copy (see copies).
func (r *chunkRun) hasCopy(lo, hi int) bool {
	st := r.sb[lo:hi]
	for j := 1; j < len(st); j++ {
		if st[j] == st[j-1] {
			return true
		}
	}
	return false
}

// IndexedTimeline is a Timeline that keeps the canonical free-block list in
// one flat slice while it is short and in chunked flat arrays under a
// min/max segment tree once it is long (see the layout comment above), so
// that short timelines cost a walk of a few blocks and long ones a jump to
// notBefore in O(log n) that skips runs of unsuitable blocks without
// visiting them. It makes exactly the decisions of the plain list timeline.
//
// An IndexedTimeline is not safe for concurrent use.
type IndexedTimeline struct {
	// origin is the instant the blocks have been trimmed to.
	// Invariant: chunks[0].start[0] == origin (rev[n-1].start == origin
	// in the short layout).
	origin int64
	// clock, when set, is the owning Planner's origin: the timeline
	// describes nothing before it even while origin lags (see advance.go).
	clock *int64
	// chunks holds the canonical blocks in order, outside the short
	// layout. Invariant: then at least two chunks (one only inside an
	// operation); neighbouring blocks (also across chunks) differ in
	// free.
	chunks []*chunk
	// firsts mirrors the first start of every chunk for binary search.
	// Invariant: len(firsts) == len(chunks), firsts[i] == chunks[i].start[0].
	firsts []int64
	// dir tells the lookups where in firsts to search (see chunkDir).
	// Only a cache: any content is correct.
	dir chunkDir
	// samp is a two-level index into the chunks' starts, chunkSamples
	// entries per chunk in chunk order: samp[i*chunkSamples+k] ==
	// chunks[i].start[k*sampleStep] for every k*sampleStep <
	// len(chunks[i].start), and MaxInt64 after. It is one flat array
	// rather than a field of each chunk so that it stays cached (256
	// bytes per chunk, under 1 MiB at a million blocks) and a lookup of
	// a random instant finds its run of sampleStep starts (two lines)
	// without first waiting for the chunk object: the run is its only
	// cold read, instead of the seven or eight dependent misses of a
	// binary search over chunkCap starts. Invariant: current whenever
	// the chunks are not being modified (resample restores it).
	samp []int64
	// runs mirrors the slices of every chunk, so that a lookup finds the
	// run's address without reading the chunk object. Invariant:
	// len(runs) == len(chunks), and runs[i] holds chunks[i].start and
	// chunks[i].free (same arrays, same lengths) whenever the chunks are
	// not being modified.
	runs []chunkRun
	// seg summarises the free amounts of every chunk.
	// Invariant: with several chunks, leaf i holds the min and max of
	// chunks[i].free (a lone chunk's leaf may be stale, see chunk).
	seg segTree
	// n is the total number of blocks.
	n int
	// hint is the chunk the last lookup landed in. Consecutive lookups of
	// one operation (search, check, split, merge) usually hit the same
	// chunk, so locate tries it before the directory. It is only a
	// cache: any value is correct.
	hint int
	// hintBi is the block index (in some chunk) the last lookup landed
	// on; locate walks a few blocks from it before searching. Only a
	// cache: any value is correct.
	hintBi int
	// rev holds the canonical blocks, latest first, while the timeline
	// is short (see indexed_short.go); nil while the chunks hold them.
	// Invariant: when rev != nil, len(rev) == n >= 1, rev[n-1].start ==
	// origin, starts strictly decrease with the index, neighbours differ
	// in free, and chunks, firsts are empty.
	rev []sblock
	// spare keeps the backing array of rev while the chunks are in use,
	// so that going back to the short layout does not allocate.
	spare []sblock
	// fit remembers the window the last Earliest found, so that a Book
	// of that window right after it (what an admission does) skips the
	// capacity check, and in the short layout the lookup too: every block
	// of [fit.start, fit.end) has at least fit.amount free. Every
	// mutation clears fit.ok (Advance in the short layout does not need
	// to: block indices count from the far end there, and Book checks the
	// window against the origin). Only a cache: without it Book looks the
	// window up.
	fit fitCache
	// warm keeps the sum of the values findWarm read, so that the
	// compiler keeps those loads. Its value means nothing.
	warm int64
}

// fitCache is the window of the last Earliest. In the short layout
// (short set) it starts in block rev[at] and ends in block rev[last]; with
// chunks only the window is kept, which spares Book its capacity check.
type fitCache struct {
	ok, short          bool
	start, end, amount int64
	at, last           int
}

var _ Timeline = (*IndexedTimeline)(nil)

// NewIndexed returns an IndexedTimeline with capacity free from origin to
// MaxTime. It has the TimelineFactory signature. The caller (the Planner)
// validates capacity; a negative one is stored as given. An origin of
// MaxTime is moved back by one so that the timeline is never empty (as the
// list timeline does).
func NewIndexed(capacity, origin int64) Timeline {
	if origin >= MaxTime {
		origin = MaxTime - 1
	}
	rev := make([]sblock, 1, shortInitCap)
	rev[0] = sblock{start: origin, free: capacity}
	return &IndexedTimeline{origin: origin, rev: rev, n: 1}
}

// Origin returns the earliest instant the timeline still describes: the
// later of the trimmed origin and the owning Planner's clock.
func (t *IndexedTimeline) Origin() int64 {
	if t.clock != nil && *t.clock > t.origin {
		return *t.clock
	}
	return t.origin
}

// Len returns the number of canonical free blocks.
func (t *IndexedTimeline) Len() int { return t.n }

// locate returns the position of the block containing instant x, which must
// not lie before the origin.
func (t *IndexedTimeline) locate(x int64) (ci, bi int) {
	ci, bi, _ = t.locateFree(x)
	return ci, bi
}

// locateFree is locate that also returns the block's free amount.
func (t *IndexedTimeline) locateFree(x int64) (ci, bi int, f int64) {
	// Last chunk whose first start is <= x.
	ci = t.hint
	if n := len(t.firsts); ci >= n || t.firsts[ci] > x || (ci+1 < n && t.firsts[ci+1] <= x) {
		// Another chunk than the last lookup's: the block hint points
		// into the wrong chunk, and probing it would cost a cache miss
		// at a random place of this one.
		ci = t.headOf(x)
		bi, f = t.find(ci, x)
		t.hint, t.hintBi = ci, bi
		return ci, bi, f
	}
	c := t.chunks[ci]
	st := c.start
	// The lookups of one admission (the fit, the two edges of the
	// booking, the same edges again on release) land within a few blocks
	// of each other: probe near the last block found before a search.
	if h := t.hintBi; h < len(st) {
		if st[h] <= x {
			for k := h; k < len(st) && k <= h+fingerProbe; k++ {
				if k+1 == len(st) || st[k+1] > x {
					t.hintBi = k
					return ci, k, c.free[k]
				}
			}
		} else {
			for k := h - 1; k >= 0 && k >= h-fingerProbe; k-- {
				if st[k] <= x {
					t.hintBi = k
					return ci, k, c.free[k]
				}
			}
		}
	}
	bi, f = t.find(ci, x)
	t.hintBi = bi
	return ci, bi, f
}

// locateWarm is locateFree for the first lookup of an Earliest: when the
// lookup lands in another chunk than the last one, it also reads that
// chunk's tail (see findWarm).
func (t *IndexedTimeline) locateWarm(x int64) (ci, bi int, f int64) {
	ci = t.hint
	if n := len(t.firsts); ci >= n || t.firsts[ci] > x || (ci+1 < n && t.firsts[ci+1] <= x) {
		ci = t.headOf(x)
		var w int64
		bi, f, w = t.findWarm(ci, x)
		t.warm += w
		t.hint, t.hintBi = ci, bi
		return ci, bi, f
	}
	return t.locateFree(x)
}

// fingerProbe is how many blocks locate walks from the last block found
// before it falls back to a binary search.
const fingerProbe = 8

// lastAtMost returns the index of the last element <= x of the sorted,
// non-empty s, whose first element is <= x. The loop body has no
// unpredictable branch, which matters at a million blocks.
func lastAtMost(s []int64, x int64) int {
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
func (t *IndexedTimeline) blockEnd(ci, bi int) int64 {
	c := t.chunks[ci]
	if bi+1 < len(c.start) {
		return c.start[bi+1]
	}
	if ci+1 < len(t.chunks) {
		return t.firsts[ci+1]
	}
	return MaxTime
}

// NextChange returns the first block boundary after x (x is clipped to the
// origin); ok is false when x lies in the last, open-ended block. The
// Planner uses it to enumerate candidate starts.
func (t *IndexedTimeline) NextChange(x int64) (int64, bool) {
	if o := t.Origin(); x < o {
		x = o
	}
	if t.rev != nil {
		return t.shortNextChange(x)
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
// free is >= amount. bi may equal the chunk length.
func (t *IndexedTimeline) nextAtLeast(ci, bi int, amount int64) (int, int, bool) {
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
func (t *IndexedTimeline) nextBelowBefore(ci, bi int, amount, limit int64) (int, int, bool) {
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

// chunkedEarliest is Earliest in the chunked layout: Earliest, in
// indexed_short.go, checks the arguments, clips notBefore to the origin
// and hands over to it.
func (t *IndexedTimeline) chunkedEarliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	cand := notBefore
	ci, bi, f := t.locateWarm(cand)
	for {
		if f < amount {
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
			t.fit = fitCache{ok: true, start: cand, end: cand + duration, amount: amount}
			// The Book of this window looks cand up first: it is here,
			// where the search ended, which may lie beyond the reach of
			// a probe from notBefore's block.
			t.hint, t.hintBi = ci, bi
			return cand, true
		}
		ci, bi, f = nci, nbi, t.chunks[nci].free[nbi]
	}
}

// MinFree returns the smallest free capacity over [start, end), clipped to
// the origin. For an empty window it returns the free capacity at start
// (math.MaxInt64 at MaxTime), as the list timeline does.
func (t *IndexedTimeline) MinFree(start, end int64) int64 {
	if o := t.Origin(); start < o {
		start = o
	}
	if end <= start {
		if start >= MaxTime {
			return math.MaxInt64
		}
		if t.rev != nil {
			return t.rev[t.shortFind(start)].free
		}
		_, _, f := t.locateFree(start)
		return f
	}
	mn, _ := t.rangeMinMax(start, end)
	return mn
}

// rangeMinMax returns the min and max free over [start, end) clipped to the
// origin; (MaxInt64, MinInt64) for an empty window.
func (t *IndexedTimeline) rangeMinMax(start, end int64) (mn, mx int64) {
	mn, mx = math.MaxInt64, math.MinInt64
	if o := t.Origin(); start < o {
		start = o
	}
	if start >= end {
		return mn, mx
	}
	if t.rev != nil {
		_, mn, mx = t.shortWindow(t.shortFind(start), end)
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
func (t *IndexedTimeline) Blocks(from, to int64) []Block {
	out := []Block{}
	t.each(from, to, func(b Block) bool {
		out = append(out, b)
		return true
	})
	return out
}

// each calls fn with the blocks Blocks returns, in order, until fn returns
// false, without collecting them: Usage walks every timeline this way on
// each metrics scrape, where collecting the blocks of a million bookings
// made about a hundred megabytes of garbage per scrape.
func (t *IndexedTimeline) each(from, to int64, fn func(Block) bool) {
	if o := t.Origin(); from < o {
		from = o
	}
	if from >= to {
		return
	}
	if b := t.rev; b != nil {
		for i := t.shortFind(from); i >= 0 && b[i].start < to; i-- {
			e := MaxTime
			if i > 0 {
				e = b[i-1].start
			}
			if !fn(Block{Start: max(b[i].start, from), End: min(e, to), Free: b[i].free}) {
				return
			}
		}
		return
	}
	ci, bi := t.locate(from)
	for ; ci < len(t.chunks); ci, bi = ci+1, 0 {
		c := t.chunks[ci]
		for j := bi; j < len(c.start); j++ {
			s := c.start[j]
			if s >= to {
				return
			}
			if j+1 < len(c.start) && c.start[j+1] == s {
				continue // a copy (see copies)
			}
			e := t.blockEnd(ci, j)
			if !fn(Block{Start: max(s, from), End: min(e, to), Free: c.free[j]}) {
				return
			}
		}
	}
}

// checkWindow validates a Book/Release window and clips it to the origin.
// ok is false when there is nothing to do: the window is empty after
// clipping or the amount is zero (both are no-ops, as in the list
// timeline). A negative amount is an error.
func (t *IndexedTimeline) checkWindow(op string, start, end, amount int64) (s int64, ok bool, err error) {
	if o := t.Origin(); start < o {
		// The past is forgotten; only the part from the origin on counts.
		start = o
	}
	if end <= start || amount == 0 {
		return start, false, nil
	}
	if amount < 0 {
		return 0, false, fmt.Errorf("indexed timeline: %s: %w", op, &FieldError{Field: "amount", Reason: "must be >= 0"})
	}
	return start, true, nil
}

// Book subtracts amount over [start, end). The part of the window before the
// origin is ignored; an empty window or a zero amount is a no-op. It returns an error wrapping ErrNoCapacity, and changes
// nothing, if free < amount anywhere in the window.
func (t *IndexedTimeline) Book(start, end, amount int64) error {
	if f := &t.fit; f.ok && f.short && start == f.start && end == f.end && amount <= f.amount && amount > 0 && start >= t.Origin() {
		// The window the preceding Earliest found in the short layout:
		// known to fit, and its last block is known.
		f.ok = false
		t.shortBookFit(start, end, amount, f.at, f.last)
		return nil
	}
	s, ok, err := t.checkWindow("book", start, end, amount)
	if err != nil || !ok {
		return err
	}
	if t.rev != nil {
		return t.shortBook(start, s, end, amount)
	}
	f := t.fit
	t.fit.ok = false
	if !(f.ok && s == f.start && end == f.end && amount <= f.amount) {
		if mn := t.MinFree(s, end); mn < amount {
			return fmt.Errorf("indexed timeline: book %d over [%d,%d): only %d free: %w", amount, start, end, mn, ErrNoCapacity)
		}
	}
	t.add(s, end, -amount)
	t.maybeShort()
	return nil
}

// Release adds amount over [start, end). The part of the window before the
// origin is ignored; an empty window or a zero amount is a no-op. It fails, changing nothing, if a free amount would
// overflow int64.
func (t *IndexedTimeline) Release(start, end, amount int64) error {
	t.fit.ok = false
	s, ok, err := t.checkWindow("release", start, end, amount)
	if err != nil || !ok {
		return err
	}
	if t.rev != nil {
		return t.shortRelease(start, s, end, amount)
	}
	// The tree's root bounds every free amount: when even it leaves room
	// for amount, the window does, and the scan is not needed.
	if t.seg.mx[1] > math.MaxInt64-amount {
		if _, mx := t.rangeMinMax(s, end); mx > math.MaxInt64-amount {
			return fmt.Errorf("indexed timeline: release %d over [%d,%d): %w", amount, start, end,
				&FieldError{Field: "amount", Reason: "free capacity would overflow int64"})
		}
	}
	t.add(s, end, amount)
	t.maybeShort()
	return nil
}

// add adds delta (non-zero) to the free amount over [start, end), with
// origin <= start < end, and restores canonical form.
func (t *IndexedTimeline) add(start, end, delta int64) {
	sci, sbi, ok := t.split2(start, end)
	if !ok {
		if end < MaxTime {
			t.splitAt(end)
		}
		sci, sbi = t.splitAt(start)
	}
	// From the first slot of start's block: its copies change with it.
	sbi = groupStart(t.chunks[sci], sbi)
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
	if haveEnd && t.merge2(sci, sbi, eci, ebi) {
		return
	}
	if haveEnd && t.mergePos(eci, ebi) {
		sci, sbi = t.locate(start)
	}
	t.mergePos(sci, sbi)
}

// split2Scan is how far split2 looks for the end of a window before it
// leaves the work to two single splits.
const split2Scan = 32

// split2 makes both start and end block boundaries in place when both
// fall strictly inside blocks of one chunk, with copies near both edges
// (see copies) or else room for two more blocks (the usual Book: a window
// of a few blocks). At a
// million blocks the tail of a chunk is hundreds of elements, and moving
// it once instead of twice is a large part of a booking's cost. When one
// edge is a boundary already (a fit that begins where a block does), it
// inserts the other. It reports whether both edges are boundaries now
// (also when they already were, as for a Release of a booked window, with
// both in one chunk), and then the position of the block that starts at
// start, so that add need not look either edge up again. Otherwise
// splitAt does the work: nothing changed, or start became a boundary
// already (then t.n counts it).
func (t *IndexedTimeline) split2(start, end int64) (ci, bi int, ok bool) {
	if end == MaxTime {
		return 0, 0, false
	}
	ci, bi = t.locate(start)
	c := t.chunks[ci]
	atStart := c.start[bi] == start
	if !atStart && len(c.start)+2 > chunkCap && c.dup == 0 {
		return 0, 0, false
	}
	j, stop := bi+1, min(len(c.start), bi+1+split2Scan)
	for j < stop && c.start[j] < end {
		j++
	}
	if j == stop {
		// end lies beyond the scan or the chunk.
		return 0, 0, false
	}
	switch endAt := c.start[j] == end; {
	case atStart && endAt:
		return ci, bi, true
	case endAt:
		// Only start is new: its position is where it lands.
		ci, bi = t.insertAt(ci, bi+1, start, c.free[bi])
		return ci, bi, true
	case atStart:
		// Only end is new (the usual Book of a fit that begins where a
		// block does). Inserting it may move start's slot (a copy taken
		// left of end, a chunk compacted or split): start is looked up
		// again, which the probe from its old slot (the lookup hint)
		// does in a few steps unless the chunk was compacted or split.
		t.insertAt(ci, j, end, c.free[j-1])
		ci, bi = t.locate(start)
		return ci, bi, true
	}
	fs, fe := c.free[bi], c.free[j-1]
	if xi, ok := t.placeCopy(ci, bi, start, fs); ok {
		// start took a copy; end takes another (or is inserted by
		// splitAt, which finds start a boundary already).
		t.n++
		t.hintBi = xi
		j = xi + 1
		for j < len(c.start) && c.start[j] < end {
			j++
		}
		if j == len(c.start) {
			return 0, 0, false
		}
		if _, ok := t.placeCopy(ci, j-1, end, fe); !ok {
			return 0, 0, false
		}
		t.n++
		if c.start[xi] != start {
			xi-- // end's copy lay before start: the slots between moved left
		}
		t.hintBi = xi
		return ci, xi, true
	}
	if len(c.start)+2 > chunkCap {
		return 0, 0, false
	}
	t.insert2(ci, bi+1, j, start, fs, end, fe)
	t.n += 2
	// The new blocks repeat their neighbours' free amounts: the chunk's
	// summary is unchanged, and neither lands at index 0.
	t.hintBi = bi + 1
	return ci, bi + 1, true
}

// merge2 removes both edges of a window, the block at (sci, sbi) where it
// starts and the block at (eci, ebi) where it ends (the first slots of
// their runs), by turning each into copies of its predecessor (see
// copies), when both now equal their predecessors inside one chunk, the
// chunk has room for two more copies and still holds chunkMin blocks
// after (or is alone). It reports whether it did; otherwise nothing
// changed and mergePos does the work.
func (t *IndexedTimeline) merge2(sci, sbi, eci, ebi int) bool {
	if sci != eci || sbi == 0 || ebi <= sbi {
		return false
	}
	c := t.chunks[sci]
	n := len(c.start)
	if c.free[sbi] != c.free[sbi-1] || c.free[ebi] != c.free[ebi-1] {
		return false
	}
	if c.dup+2 > maxDup || (len(t.chunks) > 1 && n-c.dup-2 < chunkMin) {
		return false
	}
	// Both edges become copies of their predecessors: no slot moves.
	// The removed blocks repeated their predecessors' free amounts, so
	// the summary is unchanged, and the chunk's first block stays.
	gs, ge := groupLen(c, sbi), groupLen(c, ebi)
	copyOut(c, sbi)
	copyOut(c, ebi)
	t.resample(sci, c.off+sbi, c.off+sbi+gs)
	t.resample(sci, c.off+ebi, c.off+ebi+ge)
	t.n -= 2
	t.hintBi = sbi - 1
	return true
}

// adjusted updates the summary of chunk ci after delta was added to its
// blocks [from, to), whose old values ranged over [rmn, rmx]. It avoids a
// rescan of the chunk whenever the extremes can be derived: the whole chunk
// moved, or the side that moved away from an extreme did not hold it, or
// the old extreme is still found outside the range. That last test is a
// search that stops at the first hit; free amounts repeat, so it usually
// stops early, where the rescan (two compares per block) reads the whole
// chunk. An admission's Release, which raises the window its Book lowered
// and so often held the chunk's minimum, needed that rescan every time.
func (t *IndexedTimeline) adjusted(ci, from, to int, rmn, rmx, delta int64) {
	if len(t.chunks) == 1 {
		return // a lone chunk's summary is not kept
	}
	c := t.chunks[ci]
	mn, mx := c.mn, c.mx
	switch {
	case from == 0 && to == len(c.free):
		c.mn, c.mx = c.mn+delta, c.mx+delta
	case delta < 0 && (rmx < c.mx || containsNear(c.free, from, to, c.mx)):
		// The maximum lies outside the range, or is still found there;
		// the minimum can only drop. (No block of the range can hold the
		// old maximum any more: each fell by -delta from at most rmx.)
		c.mn = min(c.mn, rmn+delta)
	case delta > 0 && (rmn > c.mn || containsNear(c.free, from, to, c.mn)):
		// Likewise: the minimum is still there; the maximum can only
		// rise.
		c.mx = max(c.mx, rmx+delta)
	default:
		c.mn, c.mx = minMax(c.free)
	}
	if c.mn != mn || c.mx != mx {
		// The leaf holds the chunk's old summary: at a million blocks
		// its line and its parents' are cold, and most changes leave
		// the summary as it was.
		t.seg.set(ci, c.mn, c.mx)
	}
}

// nearScan is how many blocks on each side of a changed range
// containsNear reads before it searches the whole chunk.
const nearScan = 8

// containsNear reports whether v occurs in fr outside [from, to). It
// first reads the nearScan blocks on each side of the range, whose lines
// the change just touched, and only then the rest of the chunk, whose
// far end is usually cold at a million blocks.
func containsNear(fr []int64, from, to int, v int64) bool {
	a, b := max(from-nearScan, 0), min(to+nearScan, len(fr))
	if slices.Contains(fr[a:from], v) || slices.Contains(fr[to:b], v) {
		return true
	}
	return slices.Contains(fr[:a], v) || slices.Contains(fr[b:], v)
}

// splitAt makes x a block boundary (x >= origin) and returns the position
// of the block that starts at x.
func (t *IndexedTimeline) splitAt(x int64) (ci, bi int) {
	ci, bi = t.locate(x)
	c := t.chunks[ci]
	if c.start[bi] == x {
		return ci, bi
	}
	return t.insertAt(ci, bi+1, x, c.free[bi])
}

// mergePos removes the block at (ci, bi) if it has the same free amount as
// the block before it. It reports whether chunks were restructured or
// blocks moved (see removeAt), which invalidates positions.
func (t *IndexedTimeline) mergePos(ci, bi int) (restructured bool) {
	c := t.chunks[ci]
	bi = groupStart(c, bi)
	if ci == 0 && bi == 0 {
		return false
	}
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

// insertAt inserts block (s, f) before position bi of chunk ci (the first
// slot of a block's run of slots, or the chunk's end) and returns the
// position it landed at: into the nearest copy in reach if there is one
// (see copies), otherwise moving the shorter side of the chunk, which is
// compacted or split first when it is full.
func (t *IndexedTimeline) insertAt(ci, bi int, s, f int64) (int, int) {
	if bi > 0 {
		if at, ok := t.placeCopy(ci, bi-1, s, f); ok {
			t.n++
			if c := t.chunks[ci]; len(t.chunks) > 1 && (f < c.mn || f > c.mx) {
				c.mn, c.mx = min(c.mn, f), max(c.mx, f)
				t.seg.set(ci, c.mn, c.mx)
			}
			return ci, at
		}
	}
	if len(t.chunks[ci].start) >= chunkCap {
		bi = t.compact(ci, bi) // a chunk with copies has room without them
	}
	if len(t.chunks[ci].start) >= chunkCap {
		t.splitChunk(ci)
		if half := len(t.chunks[ci].start); bi > half {
			ci, bi = ci+1, bi-half
		}
	}
	t.insert1(ci, bi, s, f)
	c := t.chunks[ci]
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
// restructured (a chunk emptied or merged) or the chunk's blocks moved
// (its copies were compacted away).
func (t *IndexedTimeline) removeAt(ci, bi int) bool {
	if c := t.chunks[ci]; bi > 0 {
		if g := groupLen(c, bi); c.dup < maxDup && (len(t.chunks) == 1 || len(c.start)-c.dup > chunkMin) {
			// The block becomes a copy of its predecessor: nothing
			// moves, the extremes and the head stay.
			copyOut(c, bi)
			t.resample(ci, c.off+bi, c.off+bi+g)
			t.n--
			return false
		}
	}
	moved := t.chunks[ci].dup > 0 // compact moves the chunk's blocks
	bi = t.compact(ci, bi)
	t.delete1(ci, bi)
	c := t.chunks[ci]
	t.n--
	if len(c.start) == 0 {
		t.deleteChunks(ci, ci+1)
		t.seg.rebuildFrom(t.chunks, ci)
		return true
	}
	if bi == 0 {
		t.firsts[ci] = c.start[0]
	}
	if len(c.start) < chunkMin && t.rebalance(ci) {
		return true
	}
	if bi == 0 && len(t.chunks) > 1 {
		// The removed value may have been this chunk's only extreme.
		t.refresh(ci)
	}
	// Otherwise the removed block had the same free as its predecessor
	// in this chunk, so the extremes are unchanged.
	return moved
}

// splitChunk cuts chunk ci into two halves, the new one allocated with
// room to grow to chunkCap without reallocating.
func (t *IndexedTimeline) splitChunk(ci int) {
	t.compact(ci, 0)
	c := t.chunks[ci]
	half := len(c.start) / 2
	right := newChunk(c.start[half:], c.free[half:], chunkCap)
	c.view(half)
	t.summarize(ci)
	t.insertChunk(ci+1, right)
	t.seg.rebuildFrom(t.chunks, ci)
}

// rebalance restores the minimum fill of chunk ci when there are several
// chunks: it merges ci with a neighbour when the two fit in three quarters
// of a chunk, and otherwise moves blocks over from the neighbour so that
// both hold half of their sum (at least 3/8 chunkCap each). It reports
// whether it changed the chunks (and then it has rebuilt the index).
func (t *IndexedTimeline) rebalance(ci int) bool {
	if c := t.chunks[ci]; len(t.chunks) < 2 || len(c.start)-c.dup >= chunkMin {
		return false
	}
	l := ci
	if ci+1 == len(t.chunks) {
		l = ci - 1
	}
	// The blocks move as plain lists: without copies, so that no run of
	// equal slots is cut between two chunks.
	t.compact(l, 0)
	t.compact(l+1, 0)
	a, b := t.chunks[l], t.chunks[l+1]
	total := len(a.start) + len(b.start)
	switch half := total / 2; {
	case total <= chunkCap*3/4:
		a.start = append(a.start, b.start...)
		a.free = append(a.free, b.free...)
		t.deleteChunks(l+1, l+2)
	case len(a.start) < half:
		k := half - len(a.start)
		a.start = append(a.start, b.start[:k]...)
		a.free = append(a.free, b.free[:k]...)
		b.start = slices.Delete(b.start, 0, k)
		b.free = slices.Delete(b.free, 0, k)
		t.firsts[l+1] = b.start[0]
		t.summarize(l + 1)
	default:
		b.start = slices.Insert(b.start, 0, a.start[half:]...)
		b.free = slices.Insert(b.free, 0, a.free[half:]...)
		a.start = a.start[:half]
		a.free = a.free[:half]
		t.firsts[l+1] = b.start[0]
		t.summarize(l + 1)
	}
	t.summarize(l)
	t.seg.rebuildFrom(t.chunks, l)
	return true
}

// refresh recomputes the summary of chunk ci after its free amounts
// changed (its samples are kept by the caller).
func (t *IndexedTimeline) refresh(ci int) {
	c := t.chunks[ci]
	c.mn, c.mx = minMax(c.free)
	t.seg.set(ci, c.mn, c.mx)
}

// chunkedAdvance is Advance in the chunked layout, and in the short one
// when now is MaxTime (Advance, in indexed_short.go, hands over to it).
func (t *IndexedTimeline) chunkedAdvance(now int64) {
	if now <= t.origin {
		return
	}
	t.fit.ok = false // block positions move
	if now >= MaxTime {
		now = MaxTime - 1
	}
	if t.rev != nil {
		t.shortAdvance(now)
		return
	}
	if now < t.blockEnd(0, 0) {
		// now lies in the first block: only its start moves, no free
		// amount changes, so every summary stays valid.
		t.chunks[0].start[0] = now
		t.samp[t.chunks[0].off>>sampleShift] = now
		t.firsts[0] = now
		t.origin = now
		return
	}
	ci, bi := t.locate(now)
	if ci > 0 {
		for _, c := range t.chunks[:ci] {
			t.n -= len(c.start) - c.dup
		}
		t.deleteChunks(0, ci)
	}
	c := t.chunks[0]
	if bi > 0 {
		// Blocks before bi, not their copies (summarize recounts them).
		t.n -= bi - countDup(c.start[:bi+1])
		c.start = slices.Delete(c.start, 0, bi)
		c.free = slices.Delete(c.free, 0, bi)
	}
	c.start[0] = now
	t.firsts[0] = now
	t.origin = now
	if len(t.chunks) == 1 {
		t.toShort()
		return
	}
	t.summarize(0)
	if !t.rebalance(0) {
		if ci > 0 {
			t.seg.build(t.chunks)
		} else {
			t.seg.set(0, c.mn, c.mx)
		}
	}
	// rebalance may have merged the last two chunks into one.
	t.maybeShort()
}

// checkInvariants verifies every structural invariant; tests call it after
// each operation.
func (t *IndexedTimeline) checkInvariants() error {
	if t.rev != nil {
		return t.checkShort()
	}
	if len(t.chunks) < 2 {
		return fmt.Errorf("chunks: %d chunks in the chunked layout, want at least 2", len(t.chunks))
	}
	if len(t.chunks) == 0 || len(t.chunks) != len(t.firsts) || len(t.chunks) != len(t.runs) || len(t.samp) != len(t.chunks)*chunkSamples {
		return fmt.Errorf("chunks: %d chunks, %d heads, %d runs, %d samples", len(t.chunks), len(t.firsts), len(t.runs), len(t.samp))
	}
	if t.chunks[0].start[0] != t.origin {
		return fmt.Errorf("first block starts at %d, origin is %d", t.chunks[0].start[0], t.origin)
	}
	n := 0
	havePrev := false
	var prevStart, prevFree int64
	for i, c := range t.chunks {
		if len(c.start) == 0 || len(c.start) != len(c.free) || len(c.start) > chunkCap {
			return fmt.Errorf("chunk %d: %d starts, %d frees", i, len(c.start), len(c.free))
		}
		if len(t.chunks) > 1 && len(c.start)-c.dup < chunkMin {
			return fmt.Errorf("chunk %d of %d holds %d blocks, fewer than %d", i, len(t.chunks), len(c.start)-c.dup, chunkMin)
		}
		if t.firsts[i] != c.start[0] {
			return fmt.Errorf("chunk %d: head %d, first start %d", i, t.firsts[i], c.start[0])
		}
		// A lone chunk's summary is not kept (see chunk).
		if mn, mx := minMax(c.free); len(t.chunks) > 1 && (c.mn != mn || c.mx != mx) {
			return fmt.Errorf("chunk %d: cached summary (%d,%d), actual (%d,%d)", i, c.mn, c.mx, mn, mx)
		} else if lmn, lmx := t.seg.leaf(i); len(t.chunks) > 1 && (lmn != mn || lmx != mx) {
			return fmt.Errorf("chunk %d: summary (%d,%d), actual (%d,%d)", i, lmn, lmx, mn, mx)
		}
		if r := t.runs[i]; r.n != len(c.start) || r.off != c.off || len(r.sb) != len(c.sb) || len(r.fb) != len(c.fb) || &r.sb[0] != &c.sb[0] || &r.fb[0] != &c.fb[0] {
			return fmt.Errorf("chunk %d: run descriptor does not match the chunk's slices", i)
		}
		if len(c.sb) != len(c.fb) || len(c.sb) > chunkCap || c.off < 0 || c.off+len(c.start) > len(c.sb) ||
			&c.start[0] != &c.sb[c.off] || &c.free[0] != &c.fb[c.off] {
			return fmt.Errorf("chunk %d: blocks are not the window [%d,%d) of its %d slots", i, c.off, c.off+len(c.start), len(c.sb))
		}
		for k, v := range t.samples(i) {
			if want := wantSample(c, k); v != want {
				return fmt.Errorf("chunk %d: sample %d is %d, want %d", i, k, v, want)
			}
		}
		for j := range c.start {
			if j+1 < len(c.start) && c.start[j+1] == c.start[j] {
				if c.free[j+1] != c.free[j] {
					return fmt.Errorf("chunk %d slot %d: a copy of start %d with free %d, not %d", i, j, c.start[j], c.free[j], c.free[j+1])
				}
				continue
			}
			if havePrev && c.start[j] <= prevStart {
				return fmt.Errorf("chunk %d block %d: start %d not after %d", i, j, c.start[j], prevStart)
			}
			if havePrev && c.free[j] == prevFree {
				return fmt.Errorf("chunk %d block %d: free %d equals its predecessor's", i, j, c.free[j])
			}
			havePrev, prevStart, prevFree = true, c.start[j], c.free[j]
			n++
		}
	}
	for i, c := range t.chunks {
		if d := countDup(c.start); d != c.dup || d > maxDup {
			return fmt.Errorf("chunk %d: %d copies, recorded %d (at most %d)", i, d, c.dup, maxDup)
		}
	}
	if n != t.n {
		return fmt.Errorf("block count %d, recorded %d", n, t.n)
	}
	return t.seg.check()
}

func minMax(fr []int64) (mn, mx int64) {
	mn, mx = math.MaxInt64, math.MinInt64
	for _, f := range fr {
		mn = min(mn, f)
		mx = max(mx, f)
	}
	return mn, mx
}

// segTree is an implicit binary tree over chunk summaries: node 1 is the
// root, node i has children 2i and 2i+1, leaf k is node size+k. Leaves past
// the last chunk hold the neutral (MaxInt64, MinInt64) so that no search
// ever selects them.
type segTree struct {
	size int
	// n is the number of leaves in use (chunks) at the last build.
	n      int
	mn, mx []int64
}

// build recomputes the tree from the chunks' cached summaries in
// O(len(chunks)), reusing storage.
func (s *segTree) build(chunks []*chunk) {
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
	s.n = len(chunks)
}

// rebuildFrom is build after a change that left the chunks before from
// as they were (a chunk split, emptied or rebalanced at from, and every
// later chunk shifted by one place): it recomputes only the leaves from
// from on and their ancestors, about half the tree for a change at a
// random place, instead of all of it. A change of the tree's size falls
// back to build.
func (s *segTree) rebuildFrom(chunks []*chunk, from int) {
	size := 1
	for size < len(chunks) {
		size <<= 1
	}
	if size != s.size || from <= 0 {
		s.build(chunks)
		return
	}
	// Leaves [from, end) may have changed: the ones in use now and the
	// ones in use before, which may now be past the last chunk.
	end := max(len(chunks), s.n)
	for i := from; i < end; i++ {
		if i < len(chunks) {
			s.mn[size+i], s.mx[size+i] = chunks[i].mn, chunks[i].mx
		} else {
			s.mn[size+i], s.mx[size+i] = math.MaxInt64, math.MinInt64
		}
	}
	for lo, hi := (size+from)>>1, (size+end-1)>>1; lo >= 1; lo, hi = lo>>1, hi>>1 {
		for i := lo; i <= hi; i++ {
			s.mn[i] = min(s.mn[2*i], s.mn[2*i+1])
			s.mx[i] = max(s.mx[2*i], s.mx[2*i+1])
		}
	}
	s.n = len(chunks)
}

// set stores the summary of leaf k and updates its ancestors.
func (s *segTree) set(k int, mn, mx int64) {
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

func (s *segTree) leaf(k int) (mn, mx int64) { return s.mn[s.size+k], s.mx[s.size+k] }

// rangeMinMax returns the min and max over leaves [l, r).
func (s *segTree) rangeMinMax(l, r int) (mn, mx int64) {
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
func (s *segTree) firstMaxAtLeast(from int, v int64) int {
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
func (s *segTree) firstMinBelow(from int, v int64) int {
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

// check verifies that every inner node summarises its children.
func (s *segTree) check() error {
	for i := s.size - 1; i >= 1; i-- {
		if s.mn[i] != min(s.mn[2*i], s.mn[2*i+1]) || s.mx[i] != max(s.mx[2*i], s.mx[2*i+1]) {
			return fmt.Errorf("segment tree node %d is stale", i)
		}
	}
	return nil
}
