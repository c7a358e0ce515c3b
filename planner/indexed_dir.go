package planner

import (
	"math/bits"
	"slices"
)

// The chunk directory: where a lookup of the chunked layout starts.
//
// A lookup of a random instant first finds the last chunk whose head (first
// start) is at or before it. A binary search over the heads takes about
// thirteen dependent steps at a million blocks, and the last few land on
// lines that the admissions in between have pushed out of the nearer
// caches. The directory cuts the time from the first head to the last into
// equal buckets, about dirPerChunk per chunk, and records for each bucket
// the chunk that held its first instant. A lookup then reads the entries of
// its bucket and the next (one line) and searches the few heads between
// them (one line): two dependent reads instead of a chain. The buckets are
// equal in time, so where heads crowd into a small part of the span (say,
// most bookings in the next week and a few a year out) a bucket holds many
// of them and its search is a binary search over those. The heads are few
// and stay in cache: one booking at 10 to 1000 times the span of a
// million-block timeline left its lookup within the noise (331-415 ns
// against 346-352 ns).
//
// The directory is only a hint, like the lookup hints: a lookup checks the
// chunk it found against the heads themselves and falls back to the full
// binary search when the check fails, so any content is correct. It is kept
// close to exact cheaply: inserting or deleting chunks shifts the entries
// behind them (chunkDir.inserted, chunkDir.deleted); a head that moves
// (blocks moving between neighbouring chunks, Advance) leaves entries that
// are off by one chunk, which the search's one-chunk margin on each side
// covers. The directory is emptied when the fallback has been taken
// dirMaxMisses times since it was built, or when as many chunks have been
// inserted or deleted as it had (the span and the bucket width then no
// longer fit the timeline), and the next lookup rebuilds it in O(chunks).
// Both bounds make the rebuild's cost a small constant per lookup or per
// structural change.
const (
	// dirPerChunk is the number of buckets per chunk a rebuild aims at,
	// so that a bucket rarely spans more than one chunk boundary.
	dirPerChunk = 2
	// dirMaxMisses is how many lookups may fall back to the binary search
	// before the directory is rebuilt: a rebuild costs about as much as a
	// few hundred such fallbacks.
	dirMaxMisses = 256
)

// chunkDir is the chunk directory (see above). The zero value is an empty
// directory, rebuilt at the first lookup.
type chunkDir struct {
	// base is the first instant of bucket 0; bucket b covers
	// [base + b<<shift, base + (b+1)<<shift).
	base  int64
	shift uint
	// idx[b] is the chunk that held instant base + b<<shift when the
	// directory was built, kept shifted by chunk insertions and deletions
	// since. The last entry is one past the last bucket and holds the
	// last chunk, the upper end of the last bucket's search.
	idx []uint32
	// built is the number of chunks at the last rebuild; changed the
	// number of chunks inserted or deleted since, misses the number of
	// lookups that fell back to the binary search.
	built, changed, misses int
	// fallbacks and rebuilds count the fallbacks and rebuilds since the
	// timeline was made, for tests: a directory that is kept wrongly
	// still gives right answers, only slowly.
	fallbacks, rebuilds int
}

// reset empties the directory, so that the next lookup rebuilds it and
// its counts: after the chunks were replaced wholesale, or a bound above
// was crossed.
func (d *chunkDir) reset() { d.idx = d.idx[:0] }

// inserted records that a chunk was inserted at position ci: the entries
// naming chunks from ci on move one place right. A bucket of the chunk
// that split now lies in it or in the new chunk, one to its right, which
// the lookup's margin covers.
func (d *chunkDir) inserted(ci int) {
	if len(d.idx) == 0 {
		return
	}
	if d.changed++; d.changed >= d.built {
		d.reset()
		return
	}
	c := uint32(ci)
	for b, _ := slices.BinarySearch(d.idx, c); b < len(d.idx); b++ {
		d.idx[b]++
	}
	// The last entry names the last chunk, also when ci is past it.
	last := &d.idx[len(d.idx)-1]
	*last = max(*last, c)
}

// deleted records that the chunks at positions [i, j) were deleted: the
// entries naming them now name chunk i-1 (their blocks went to a
// neighbour, at most one place away after the shift), and those behind
// them move j-i places left.
func (d *chunkDir) deleted(i, j int) {
	if len(d.idx) == 0 {
		return
	}
	if d.changed += j - i; d.changed >= d.built {
		d.reset()
		return
	}
	lo, hi, k := uint32(i), uint32(j), uint32(j-i)
	to := uint32(max(i-1, 0))
	for b, _ := slices.BinarySearch(d.idx, lo); b < len(d.idx); b++ {
		if v := d.idx[b]; v < hi {
			d.idx[b] = to
		} else {
			d.idx[b] = v - k
		}
	}
}

// build makes the directory describe heads (sorted, at least one).
func (d *chunkDir) build(heads []int64) {
	n := len(heads)
	d.base = heads[0]
	span := uint64(heads[n-1]) - uint64(heads[0])
	// The smallest bucket width (a power of two) that keeps the number
	// of buckets at or below dirPerChunk per chunk.
	d.shift = 0
	if want := uint64(dirPerChunk * n); span >= want {
		d.shift = uint(bits.Len64(span / want))
	}
	nb := int(span>>d.shift) + 1
	d.idx = slices.Grow(d.idx[:0], nb+1)[:nb+1]
	g := 0
	for b := range nb {
		at := int64(uint64(d.base) + uint64(b)<<d.shift)
		for g+1 < n && heads[g+1] <= at {
			g++
		}
		d.idx[b] = uint32(g)
	}
	d.idx[nb] = uint32(n - 1)
	d.built, d.changed, d.misses = n, 0, 0
	d.rebuilds++
}

// headOf returns the index of the last chunk whose head is at or before
// x, the first head being at or before x: what lastAtMost(t.firsts, x)
// returns, found through the directory.
func (t *IndexedTimeline) headOf(x int64) int {
	f := t.firsts
	d := &t.dir
	if len(d.idx) == 0 {
		d.build(f)
	}
	// Instants before base (none while the origin only advances) wrap
	// around to a large bucket and fail the check below.
	b := (uint64(x) - uint64(d.base)) >> d.shift
	if last := uint64(len(d.idx) - 2); b > last {
		b = last
	}
	n := len(f)
	lo := max(int(d.idx[b])-1, 0)
	hi := min(int(d.idx[b+1])+2, n)
	if lo < hi {
		g := lo + lastAtMost(f[lo:hi], x)
		if f[g] <= x && (g+1 == n || f[g+1] > x) {
			return g
		}
	}
	d.fallbacks++
	if d.misses++; d.misses >= dirMaxMisses {
		d.reset()
	}
	return lastAtMost(f, x)
}
