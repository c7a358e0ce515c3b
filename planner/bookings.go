package planner

import "iter"

// entry is a live booking: its ID, its single part inline (res is nil for
// a multi-part booking, whose parts are kept in Planner.multi) and its
// window. A free slot of a bookTable has id == "".
type entry struct {
	id         string
	res        *resource
	amount     int64
	start, end int64
}

// noSlot marks the end of a bookTable's free list.
const noSlot = ^uint32(0)

// bookTable holds the live bookings densely: recs is a slice of
// fixed-size records addressed by slot number, and index is an
// open-addressing hash table (linear probing, power-of-two size) from
// booking ID to slot. Together they cost about a third of a
// map[string]entry per booking: one record, the ID bytes, and a 4-byte
// index cell at most half full.
//
// Freed slots are reused (most recently freed first) through a free list
// threaded through the free records' amount field, so recs does not grow
// under churn. Every order the table exposes (slot numbers, the iteration
// of ids) follows from the sequence of calls alone: the hash is a fixed
// function of the ID bytes and nothing depends on map iteration.
type bookTable struct {
	recs []entry
	// index holds slot+1 per cell; 0 is an empty cell.
	index []uint32
	// free is the first free slot, or noSlot.
	free uint32
	n    int
}

// minIndex is the smallest index size; it must be a power of two.
const minIndex = 16

// hashID is FNV-1a over the ID bytes followed by a 64-bit finaliser that
// spreads every input bit over the low bits used to pick a cell.
func hashID(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// len returns the number of live bookings.
func (t *bookTable) len() int { return t.n }

// find returns the slot of the booking id.
func (t *bookTable) find(id string) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.index) - 1)
	for i := hashID(id) & mask; ; i = (i + 1) & mask {
		c := t.index[i]
		if c == 0 {
			return 0, false
		}
		if t.recs[c-1].id == id {
			return c - 1, true
		}
	}
}

// has reports whether id is a live booking.
func (t *bookTable) has(id string) bool {
	_, ok := t.find(id)
	return ok
}

// add stores e (whose ID must not be live) and returns its slot.
func (t *bookTable) add(e entry) uint32 {
	if (t.n+1)*2 > len(t.index) {
		t.rehash(max(minIndex, 2*len(t.index)))
	}
	var s uint32
	if t.free != noSlot {
		s = t.free
		t.free = uint32(t.recs[s].amount)
		t.recs[s] = e
	} else {
		s = uint32(len(t.recs))
		t.recs = append(t.recs, e)
	}
	t.place(s)
	t.n++
	return s
}

// place puts slot s into the index at the first empty cell of its probe
// sequence.
func (t *bookTable) place(s uint32) {
	mask := uint64(len(t.index) - 1)
	i := hashID(t.recs[s].id) & mask
	for t.index[i] != 0 {
		i = (i + 1) & mask
	}
	t.index[i] = s + 1
}

// rehash rebuilds the index with size cells.
func (t *bookTable) rehash(size int) {
	if t.index == nil {
		t.free = noSlot
	}
	t.index = make([]uint32, size)
	for s := range t.recs {
		if t.recs[s].id != "" {
			t.place(uint32(s))
		}
	}
}

// remove frees slot s, which must be live. The index cell is deleted by
// shifting later members of its probe run back, so no tombstones
// accumulate.
func (t *bookTable) remove(s uint32) {
	mask := uint64(len(t.index) - 1)
	i := hashID(t.recs[s].id) & mask
	for t.index[i] != s+1 {
		i = (i + 1) & mask
	}
	for j := i; ; {
		t.index[i] = 0
		for {
			j = (j + 1) & mask
			c := t.index[j]
			if c == 0 {
				t.release(s)
				return
			}
			// The member at j may move to the hole at i unless its home
			// cell lies cyclically in (i, j].
			k := hashID(t.recs[c-1].id) & mask
			if i <= j {
				if i < k && k <= j {
					continue
				}
			} else if i < k || k <= j {
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
	t.recs[s] = entry{amount: int64(t.free)}
	t.free = s
	t.n--
}

// ids yields the live booking IDs in slot order.
func (t *bookTable) ids() iter.Seq[string] {
	return func(yield func(string) bool) {
		for s := range t.recs {
			if id := t.recs[s].id; id != "" && !yield(id) {
				return
			}
		}
	}
}
