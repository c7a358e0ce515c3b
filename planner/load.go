package planner

import (
	"fmt"
	"math"
	"slices"

	"github.com/ledgerd/ledgerd/internal/stepsort"
)

// Load books every rectangle of bs at once, with the outcome of calling
// Book for each in turn: the same bookings (stored in the order given),
// the same canonical timelines. It is the bulk path for rebuilding a
// planner from a snapshot of its bookings. Instead of one admission check
// and one timeline update per booking, it sorts each resource's booking
// edges and builds the resource's free blocks in one sweep, which makes
// loading n bookings O(n log n) with small constants.
//
// A booking may have begun before the origin: only its part from the
// origin on is booked (as Restore does); its end must lie after the
// origin. Load checks everything before it changes anything and returns
// the first problem found: an invalid or duplicate booking (an error
// naming bookings[i]), then a resource that the bookings together
// overbook (an error wrapping ErrNoCapacity). On error nothing has
// changed.
func (p *Planner) Load(bs []Booking) error {
	if len(bs) == 0 {
		return nil
	}
	parts, offs, err := p.resolveAll(bs)
	if err != nil {
		return err
	}
	if !p.canLoadBlocks() {
		return p.loadEach(bs)
	}
	// IDs first: each booking takes its slot in the table, as Book would.
	batch := []loadBatch{{bs: bs, parts: parts, offs: offs}}
	slot, dup := p.storeIDs(batch, len(bs))
	if dup >= 0 {
		p.dropSlots(dup, slot)
		return fmt.Errorf("load bookings[%d] %q: %w", dup, bs[dup].ID, ErrDuplicateID)
	}
	edges := p.bookingEdges(batch)
	// Two passes over the resources: the first checks that every one's
	// bookings fit, the second builds each one's free blocks again and
	// installs them. Keeping every resource's blocks between the two (the
	// load must fail without a change) held a second copy of every
	// timeline at once, 39 MB at a restore of 1M bookings on top of the
	// timelines themselves; one scratch list, reused, costs a second sweep
	// of the sorted edges instead.
	var scratch []Block
	var keys []uint64 // the edge sorts' scratch space
	for _, name := range p.names {
		r := p.resources[name]
		if len(edges[r.idx]) == 0 {
			continue
		}
		keys = stepsort.Sort(edges[r.idx], keys)
		var err error
		if scratch, err = subtractBooked(r.tl.Blocks(p.origin, MaxTime), edges[r.idx], scratch[:0]); err != nil {
			p.dropSlots(len(bs), slot)
			return fmt.Errorf("load: resource %q %w", name, err)
		}
	}
	// Everything fits: link the bookings and install the timelines.
	p.expiry.reserve(len(bs))
	for i := range bs {
		p.link(slot(i), parts[offs[i]:offs[i+1]])
		p.expiry.addUnordered(&p.bookings, slot(i))
	}
	for _, r := range p.byIdx {
		if r == nil || len(edges[r.idx]) == 0 {
			continue
		}
		blocks, err := subtractBooked(r.tl.Blocks(p.origin, MaxTime), edges[r.idx], scratch[:0])
		if err != nil {
			// The first pass found these same edges fit the same blocks.
			panic(fmt.Sprintf("planner: load: resource %q: %v on the second pass", r.name, err))
		}
		p.installBlocks(r, blocks)
		scratch = blocks
	}
	// The new slots join the expiry set at once: its order is (end,
	// slot), so where they land does not change what it yields.
	p.expiry.settle(&p.bookings, p.origin)
	return nil
}

// storeIDs stores the n bookings of batches (concatenated) in the table,
// each in its slot, as n calls of add would, and returns booking i's slot
// as slot(i). On a repeated ID it stops and returns its index as dup
// (slot then gives the slots taken before it); dup is -1 when every ID
// is new.
func (p *Planner) storeIDs(batches []loadBatch, n int) (slot func(i int) uint32, dup int) {
	at := &cursor{batches: batches}
	id := func(i int) string {
		b, j := at.find(i)
		return b.bs[j].ID
	}
	entryOf := func(i int) entry {
		b, j := at.find(i)
		bk := b.bs[j]
		return newEntry(bk.ID, b.parts[b.offs[j]:b.offs[j+1]], bk.Start, bk.End)
	}
	// In bulk (addNew) booking i takes slot base+i; otherwise slots
	// lists them.
	base := p.bookings.hw
	if p.bookings.addNew(n, id, entryOf) {
		return func(i int) uint32 { return base + uint32(i) }, -1
	}
	slots := make([]uint32, n)
	slot = func(i int) uint32 { return slots[i] }
	for i := range n {
		// One hash and one probe per ID for its check and its
		// insertion (addNew sized the index, so no rehash makes the
		// cell stale).
		key := id(i)
		_, ref, dup := p.bookings.probe(key, hashID(key))
		if dup {
			return slot, i
		}
		slots[i] = p.bookings.addAt(entryOf(i), ref)
	}
	return slot, -1
}

// bookingEdges returns, per resource (by idx), the booked amount's change
// points of the bookings of batches: two per part, counted first so that
// each list is allocated once.
func (p *Planner) bookingEdges(batches []loadBatch) [][]edge {
	count := make([]int, len(p.byIdx))
	for k := range batches {
		for _, rp := range batches[k].parts {
			count[rp.res.idx] += 2
		}
	}
	edges := make([][]edge, len(p.byIdx))
	for idx, n := range count {
		if n > 0 {
			edges[idx] = make([]edge, 0, n)
		}
	}
	for k := range batches {
		b := &batches[k]
		for j, bk := range b.bs {
			start := max(bk.Start, p.origin)
			for _, rp := range b.parts[b.offs[j]:b.offs[j+1]] {
				edges[rp.res.idx] = append(edges[rp.res.idx], edge{At: start, Delta: rp.amount}, edge{At: bk.End, Delta: -rp.amount})
			}
		}
	}
	return edges
}

// dropSlots frees the table slots slot(0), …, slot(n-1) that a failed
// Load took, last first.
func (p *Planner) dropSlots(n int, slot func(i int) uint32) {
	for i := n - 1; i >= 0; i-- {
		p.bookings.remove(slot(i))
	}
}

// edge is a change of a resource's booked amount by Delta at instant At.
type edge = stepsort.Edge

// subtractBooked appends to out the canonical free blocks of a timeline
// whose current blocks are cur once the bookings with the given edges
// (sorted by stepsort.Sort: by instant, and at one instant ends before
// starts, so that the booked sum never exceeds the amount booked over a
// stretch of time; each at or after cur's start) are booked too; it
// fails, naming an instant, if they do not fit.
func subtractBooked(cur []Block, edges []edge, out []Block) ([]Block, error) {
	out = slices.Grow(out, len(cur)+len(edges))
	booked, i, j := int64(0), 0, 0
	for t := cur[0].Start; t < MaxTime; {
		for ; j < len(edges) && edges[j].At == t; j++ {
			if d := edges[j].Delta; d > 0 && booked > math.MaxInt64-d {
				return nil, fmt.Errorf("at %d: %w", t, ErrNoCapacity)
			}
			booked += edges[j].Delta
		}
		for cur[i].End <= t {
			i++
		}
		f := cur[i].Free - booked
		if f < 0 {
			return nil, fmt.Errorf("at %d: %w", t, ErrNoCapacity)
		}
		next := cur[i].End
		if j < len(edges) && edges[j].At < next {
			next = edges[j].At
		}
		if n := len(out); n > 0 && out[n-1].Free == f {
			out[n-1].End = next
		} else {
			out = append(out, Block{Start: t, End: next, Free: f})
		}
		t = next
	}
	return out, nil
}

// resolveAll validates every booking of bs and returns their resolved
// parts, concatenated: booking i's are parts[offs[i]:offs[i+1]].
func (p *Planner) resolveAll(bs []Booking) (parts []resPart, offs []uint32, err error) {
	parts, offs, at, bad := p.resolveBatch(bs)
	if bad != nil {
		return nil, nil, bad(at)
	}
	return parts, offs, nil
}

// resolveBatch is resolveAll for one batch of a load, reading the planner
// only. On an invalid booking it returns its index in bs and bad, which
// makes Load's error for it from its index in the whole load.
func (p *Planner) resolveBatch(bs []Booking) (parts []resPart, offs []uint32, at int, bad func(i int) error) {
	parts = make([]resPart, 0, len(bs))
	offs = make([]uint32, 1, len(bs)+1)
	var last *resource
	for i, b := range bs {
		if b.ID == "" {
			return nil, nil, i, func(i int) error {
				return &FieldError{Field: fmt.Sprintf("bookings[%d].id", i), Reason: "must not be empty"}
			}
		}
		if b.End <= p.origin || b.End <= b.Start {
			return nil, nil, i, func(i int) error {
				return &FieldError{Field: fmt.Sprintf("bookings[%d].end", i), Reason: "must be after start and origin"}
			}
		}
		var err error
		if parts, err = p.appendParts(parts, b.Parts, &last); err != nil {
			return nil, nil, i, func(i int) error { return fmt.Errorf("load bookings[%d]: %w", i, err) }
		}
		if len(parts) > math.MaxUint32 {
			return nil, nil, i, func(i int) error {
				return fmt.Errorf("load bookings[%d]: more than %d parts in one Load", i, uint32(math.MaxUint32))
			}
		}
		offs = append(offs, uint32(len(parts)))
	}
	return parts, offs, 0, nil
}

// blockLoader is implemented by timelines that can take a whole canonical
// block list at once.
type blockLoader interface {
	// loadBlocks replaces the timeline's blocks by a copy of blocks,
	// which are canonical and start at the timeline's origin (the caller
	// reuses the slice).
	loadBlocks(blocks []Block)
}

// canLoadBlocks reports whether every timeline can take its blocks at once.
func (p *Planner) canLoadBlocks() bool {
	for _, r := range p.byIdx {
		if r == nil {
			continue
		}
		if _, ok := r.tl.(blockLoader); !ok {
			return false
		}
	}
	return true
}

// loadEach is Load for timelines without a bulk path: one Book per
// booking, undone on the first failure.
func (p *Planner) loadEach(bs []Booking) error {
	for i, b := range bs {
		if p.has(b.ID) {
			p.unload(bs[:i])
			return fmt.Errorf("load bookings[%d] %q: %w", i, b.ID, ErrDuplicateID)
		}
		parts, err := p.checkParts(b.Parts)
		if err == nil {
			err = p.bookParts(parts, b.Start, b.End)
		}
		if err != nil {
			p.unload(bs[:i])
			return fmt.Errorf("load bookings[%d] %q: %w", i, b.ID, err)
		}
		p.store(b.ID, parts, b.Start, b.End)
	}
	return nil
}

// unload releases the bookings bs that a failed Load stored, last first.
func (p *Planner) unload(bs []Booking) {
	for _, b := range slices.Backward(bs) {
		_ = p.Remove(b.ID)
	}
}

// loadBlocks implements blockLoader.
func (l *ListTimeline) loadBlocks(blocks []Block) { l.blocks = slices.Clone(blocks) }

// loadBlocks implements blockLoader: up to shortMax blocks go into the
// short layout, more into chunks (see buildChunks).
func (t *IndexedTimeline) loadBlocks(blocks []Block) {
	n := len(blocks)
	t.fit.ok = false
	if n <= shortMax {
		b := t.rev
		if b == nil {
			b = t.spare
		}
		if cap(b) < n {
			b = make([]sblock, 0, n+shortInitCap)
		}
		b = b[:n]
		for i, bl := range blocks {
			b[n-1-i] = sblock{start: bl.Start, free: bl.Free}
		}
		t.rev, t.spare = b, nil
		t.clearChunks()
		t.n = n
		return
	}
	t.buildChunks(n, func(i int) (int64, int64) { return blocks[i].Start, blocks[i].Free })
	if t.rev != nil {
		t.spare, t.rev = t.rev[:0], nil
	}
}
