package planner

import (
	"cmp"
	"iter"
	"math/bits"
	"slices"

	"github.com/ledgerd/ledgerd/internal/idhash"
	"github.com/ledgerd/ledgerd/internal/rangesort"
)

// entry is a live booking in 48 bytes: its ID, its window, its single
// part inline (res is the resource's index in Planner.byIdx, or noRes for
// a multi-part booking, whose parts are kept in Planner.multi), and its
// position in the expiry set (see expirySet). A free slot of a bookTable
// has id == "".
type entry struct {
	id         string
	amount     int64
	start, end int64
	res        uint32
	pos        uint32
}

// noSlot marks the end of a bookTable's free list.
const noSlot = ^uint32(0)

// noRes is entry.res of a multi-part booking.
const noRes = ^uint32(0)

// chunkBits sets the number of records per chunk (256: 12 KiB).
const chunkBits = 8

// bookTable holds the live bookings densely: fixed-size records in chunks
// of 1<<chunkBits addressed by slot number, and index, an open-addressing
// hash table (linear probing, power-of-two size) from booking ID to slot.
// Per booking this costs one 48-byte record (chunks never over-allocate
// by more than one chunk), an 8-byte index cell at most half full, and
// the ID bytes.
//
// An index cell holds the low half of its ID's hash beside the slot, so
// that a probe reads a record (and the ID's bytes, elsewhere again) only
// for a cell whose hash matches, and a deletion finds the home cells of
// the cells after the hole without reading their records. At a million
// bookings every record and ID is a cache miss, and without the hash the
// check of a new ID reads those of every cell in its probe run. It costs
// 4 bytes a cell more, 8 to 16 per booking.
//
// Freed slots are reused (most recently freed first) through a free list
// threaded through the free records' amount field, so the table does not
// grow under churn. Every order the table exposes (slot numbers, the
// iteration of ids) follows from the sequence of calls alone: the hash is
// a fixed function of the ID bytes and nothing depends on map iteration.
type bookTable struct {
	chunks []*[1 << chunkBits]entry
	// hw is the number of slots ever handed out: slots >= hw are unused.
	hw uint32
	// index holds a cell per ID (see cell); 0 is an empty cell.
	index []uint64
	// free is the first free slot, or noSlot.
	free uint32
	n    int
}

// minIndex is the smallest index size; it must be a power of two.
const minIndex = 16

// cell is the index cell of slot s, whose ID hashes to h: the low half
// of h above slot+1 (never 0). The low half gives the home cell, as the
// index has at most 1<<32 cells.
func cell(s uint32, h uint64) uint64 { return h<<32 | uint64(s+1) }

// cellSlot is the slot of a non-empty cell c; for an empty one it is
// noSlot, which no live booking has.
func cellSlot(c uint64) uint32 { return uint32(c) - 1 }

// cellHash is the low half of the hash of a non-empty cell c's ID.
func cellHash(c uint64) uint64 { return c >> 32 }

// hashID is the booking table's hash of an ID (idhash: FNV-1a and a
// finaliser).
func hashID(id string) uint64 { return idhash.String(id) }

// len returns the number of live bookings.
func (t *bookTable) len() int { return t.n }

// find returns the slot of the booking id.
func (t *bookTable) find(id string) (uint32, bool) {
	s, _, ok := t.probe(id, hashID(id))
	return s, ok
}

// cellRef is where the index holds, or would hold, a booking ID: its
// hash and its index cell, found by probe, for an add or remove that
// follows with no other change of the table in between (the cell is
// checked against the index's size, which only a rehash changes).
type cellRef struct {
	h    uint64
	cell uint64
	size int
}

// probe looks id (whose hash is h) up: the slot and the index cell
// holding it when it is live, otherwise the empty cell at the end of its
// probe sequence, where add would place it. An admission hashes and
// probes each ID once for its check and its insertion, and once for its
// lookup and its removal, instead of twice each.
func (t *bookTable) probe(id string, h uint64) (uint32, cellRef, bool) {
	if len(t.index) == 0 {
		return 0, cellRef{h: h}, false
	}
	mask := uint64(len(t.index) - 1)
	lo := h & (1<<32 - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		c := t.index[i]
		if c == 0 {
			return 0, cellRef{h: h, cell: i, size: len(t.index)}, false
		}
		if cellHash(c) == lo && t.at(cellSlot(c)).id == id {
			return cellSlot(c), cellRef{h: h, cell: i, size: len(t.index)}, true
		}
	}
}

// at returns the record in slot s (s < hw).
func (t *bookTable) at(s uint32) *entry {
	return &t.chunks[s>>chunkBits][s&(1<<chunkBits-1)]
}

// has reports whether id is a live booking.
func (t *bookTable) has(id string) bool {
	_, ok := t.find(id)
	return ok
}

// add stores e (whose ID must not be live) and returns its slot.
func (t *bookTable) add(e entry) uint32 {
	return t.addAt(e, cellRef{h: hashID(e.id)})
}

// addAt is add with the ID's hash, and its empty index cell when ref
// came from a probe of the current index (a rehash on the way makes the
// cell stale, and then only the hash is used).
func (t *bookTable) addAt(e entry, ref cellRef) uint32 {
	if (t.n+1)*2 > len(t.index) {
		t.rehash(max(minIndex, 2*len(t.index)))
	}
	var s uint32
	if t.free != noSlot {
		s = t.free
		t.free = uint32(t.at(s).amount)
	} else {
		s = t.hw
		if int(s>>chunkBits) == len(t.chunks) {
			t.chunks = append(t.chunks, new([1 << chunkBits]entry))
		}
		t.hw++
	}
	// Field by field, for the reason given in IndexedTimeline.resample;
	// TestEntryFields fails when entry gains a field this misses.
	d := t.at(s)
	d.id, d.amount, d.start, d.end, d.res, d.pos = e.id, e.amount, e.start, e.end, e.res, e.pos
	if ref.size == len(t.index) && ref.size > 0 && t.index[ref.cell] == 0 {
		t.index[ref.cell] = cell(s, ref.h)
	} else {
		t.placeHash(s, ref.h)
	}
	t.n++
	return s
}

// grow sizes the index for n more bookings at once, instead of doubling
// it step by step as they are added.
func (t *bookTable) grow(n int) {
	size := max(minIndex, len(t.index))
	for (t.n+n)*2 > size {
		size *= 2
	}
	if size > len(t.index) {
		t.rehash(size)
	}
}

// placeHash puts slot s, whose ID hashes to h, into the index at the
// first empty cell of its probe sequence.
func (t *bookTable) placeHash(s uint32, h uint64) {
	mask := uint64(len(t.index) - 1)
	i := h & mask
	for t.index[i] != 0 {
		i = (i + 1) & mask
	}
	t.index[i] = cell(s, h)
}

// rehash rebuilds the index with size cells, from the cells' hashes
// (without reading a record).
func (t *bookTable) rehash(size int) {
	if t.index == nil {
		t.free = noSlot
	}
	old := t.index
	t.index = make([]uint64, size)
	for _, c := range old {
		if c != 0 {
			t.placeHash(cellSlot(c), cellHash(c))
		}
	}
}

// remove frees slot s, which must be live. The index cell is deleted by
// shifting later members of its probe run back, so no tombstones
// accumulate.
func (t *bookTable) remove(s uint32) {
	mask := uint64(len(t.index) - 1)
	i := hashID(t.at(s).id) & mask
	for cellSlot(t.index[i]) != s {
		i = (i + 1) & mask
	}
	t.removeCell(s, i)
}

// removeAt is remove for a slot whose index cell ref came from a probe
// of the current index; a stale ref falls back to remove.
func (t *bookTable) removeAt(s uint32, ref cellRef) {
	if ref.size != len(t.index) || ref.size == 0 || cellSlot(t.index[ref.cell]) != s {
		t.remove(s)
		return
	}
	t.removeCell(s, ref.cell)
}

// removeCell frees slot s, held by index cell i.
func (t *bookTable) removeCell(s uint32, i uint64) {
	mask := uint64(len(t.index) - 1)
	for j := i; ; {
		t.index[i] = 0
		for {
			j = (j + 1) & mask
			c := t.index[j]
			if c == 0 {
				t.release(s)
				return
			}
			if !idhash.Movable(i, j, cellHash(c), mask) {
				continue
			}
			t.index[i] = c
			i = j
			break
		}
	}
}

// release puts slot s on the free list.
func (t *bookTable) release(s uint32) {
	*t.at(s) = entry{amount: int64(t.free)}
	t.free = s
	t.n--
}

// ids yields the live booking IDs in slot order.
func (t *bookTable) ids() iter.Seq[string] {
	return func(yield func(string) bool) {
		for s := range t.hw {
			if id := t.at(s).id; id != "" && !yield(id) {
				return
			}
		}
	}
}

// endHeap is the expiry set's heap (expirySet.near): a binary min-heap of
// live bookings' slots ordered by end, then slot, 4 bytes each. Each
// record keeps its position (pos), so a booking is removed or re-keyed in
// place.
type endHeap []uint32

// less orders heap positions i and j.
func (h endHeap) less(t *bookTable, i, j int) bool {
	a, b := t.at(h[i]), t.at(h[j])
	if a.end != b.end {
		return a.end < b.end
	}
	return h[i] < h[j]
}

// swap exchanges heap positions i and j and updates the records.
func (h endHeap) swap(t *bookTable, i, j int) {
	h[i], h[j] = h[j], h[i]
	t.at(h[i]).pos = uint32(i)
	t.at(h[j]).pos = uint32(j)
}

// up moves position i towards the root while it is less than its parent.
func (h endHeap) up(t *bookTable, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(t, i, parent) {
			return
		}
		h.swap(t, i, parent)
		i = parent
	}
}

// down moves position i towards the leaves while a child is less; it
// reports whether i moved.
func (h endHeap) down(t *bookTable, i int) bool {
	start, n := i, len(h)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(t, l, m) {
			m = l
		}
		if r < n && h.less(t, r, m) {
			m = r
		}
		if m == i {
			return i > start
		}
		h.swap(t, i, m)
		i = m
	}
}

// push adds the live slot s.
func (h *endHeap) push(t *bookTable, s uint32) {
	h.up(t, h.append(t, s))
}

// append adds the live slot s at the end, out of order, and returns its
// position: the caller restores the order with up or heapify.
func (h *endHeap) append(t *bookTable, s uint32) int {
	*h = append(*h, s)
	t.at(s).pos = uint32(len(*h) - 1)
	return len(*h) - 1
}

// heapify restores the heap order of all positions in O(n).
func (h endHeap) heapify(t *bookTable) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(t, i)
	}
}

// remove deletes the live slot s.
func (h *endHeap) remove(t *bookTable, s uint32) {
	i, n := int(t.at(s).pos), len(*h)-1
	if i != n {
		h.swap(t, i, n)
	}
	*h = (*h)[:n]
	if i != n {
		h.fix(t, i)
	}
}

// fix restores the heap order after the end at position i changed.
func (h endHeap) fix(t *bookTable, i int) {
	if !h.down(t, i) {
		h.up(t, i)
	}
}

// loadBuckets is log2 of the number of home-cell ranges addNew sorts the
// IDs into before it indexes them: 4,096 ranges, so that the index cells
// of one range (a million bookings: 512 cells, 2 KiB) stay in cache while
// its IDs are placed.
const loadBuckets = rangesort.Bits

// loadID is one ID of addNew: the low half of its hash (which gives its
// home cell, as the index has at most 1<<32 cells) and its number in the
// batch; 8 bytes a booking.
type loadID struct{ lo, i uint32 }

// addNew stores n bookings (id(i) and entryOf(i) give the i-th) in slots
// hw, hw+1, … in order, as n calls of add would, and returns true; or,
// when some ID is live already or given twice, or the table has free
// slots to reuse, it changes nothing but the index's size and returns
// false (the caller then adds them one by one, which finds the first
// repeated ID in order).
//
// At a restore the IDs come by the million, and adding them one by one
// put each in a random cell of an index of megabytes, where its probe
// compared the ID with those of the bookings already in the cells: a
// cache miss or two for the cell, and more for each record and ID it
// compared. addNew finds repeated IDs by sorting the hashes instead, and
// places the IDs range of home cells by range. Which slot ends in which
// cell of a probe run depends on the order of placement (the cells in use
// do not), and nothing the table answers or iterates depends on it.
func (t *bookTable) addNew(n int, id func(i int) string, entryOf func(i int) entry) bool {
	t.grow(n)
	if t.free != noSlot || uint64(len(t.index)) > 1<<32 || uint64(t.hw)+uint64(n) >= 1<<32-1 {
		return false
	}
	if t.n > 0 {
		for i := range n {
			if t.has(id(i)) {
				return false
			}
		}
	}
	mask := uint32(len(t.index) - 1)
	shift := bits.Len32(mask) - min(loadBuckets, bits.Len32(mask))
	order := make([]loadID, n)
	for i := range n {
		order[i] = loadID{uint32(hashID(id(i))), uint32(i)}
	}
	bounds := rangesort.Sort(order, func(l loadID) uint32 { return (l.lo & mask) >> shift })
	// A repeated ID has the same hash: sorted by it within each range,
	// repeats are neighbours (and so are a few other IDs, compared too).
	for b := range 1 << loadBuckets {
		r := order[bounds[b]:bounds[b+1]]
		slices.SortFunc(r, func(x, y loadID) int { return cmp.Compare(x.lo, y.lo) })
		for k := 1; k < len(r); k++ {
			for m := k - 1; m >= 0 && r[m].lo == r[k].lo; m-- {
				if id(int(r[m].i)) == id(int(r[k].i)) {
					return false
				}
			}
		}
	}
	base := t.hw
	for i := range n {
		s := base + uint32(i)
		if int(s>>chunkBits) == len(t.chunks) {
			t.chunks = append(t.chunks, new([1 << chunkBits]entry))
		}
		*t.at(s) = entryOf(i)
	}
	t.hw += uint32(n)
	for _, l := range order {
		// The low half of the hash gives the home cell (at most 1<<32
		// cells).
		t.placeHash(base+l.i, uint64(l.lo))
	}
	t.n += n
	return true
}
