package planner

import (
	"fmt"
	"slices"

	"github.com/ledgerd/ledgerd/internal/stepsort"
)

// StagedLoad is Load cut into stages, for a restore that spreads its
// rebuild over several cores. The planner starts no goroutine: the
// caller runs the stages, and each stage says what it reads and writes.
//
//   - Resolve(k, bs) checks batch k of the bookings and resolves their
//     parts. It only reads the planner, so several batches may be
//     resolved at the same time, beside other readers, while nothing
//     changes the planner.
//   - Stages returns stages that change disjoint parts of the planner
//     (the booking table with the expiry set; the timelines with the
//     resources), which may run at the same time once every batch is
//     resolved, with no other use of the planner meanwhile.
//   - Finish returns Load's error.
//
// The outcome is Load's for the batches concatenated in order: the same
// bookings in the same slots, the same timelines, the same first error
// with the same text. Unlike Load, a failed staged load may leave the
// planner changed part way: the caller drops it (a restore drops its
// whole new state).
//
// The cut is the one a restore at a million bookings needs: Load's ID
// table and its timelines each took about half of its time, and one
// stage of both was the longest of the restore's build.
type StagedLoad struct {
	p       *Planner
	batches []loadBatch
	// idsErr and tlErr are the stages' errors (a repeated ID; a resource
	// the bookings overbook), err the fallback stage's.
	idsErr, tlErr, err error
}

// loadBatch is one batch of a StagedLoad: its bookings and, once
// resolved, their parts (booking i's are parts[offs[i]:offs[i+1]]), or
// the index of its first invalid booking and the error's maker.
type loadBatch struct {
	bs       []Booking
	parts    []resPart
	offs     []uint32
	resolved bool
	at       int
	bad      func(i int) error
}

// NewStagedLoad starts a staged load of n batches.
func (p *Planner) NewStagedLoad(n int) *StagedLoad {
	return &StagedLoad{p: p, batches: make([]loadBatch, n)}
}

// Resolve checks and resolves batch k, whose bookings are bs (kept until
// Finish; the caller must not change them). It writes only batch k.
func (l *StagedLoad) Resolve(k int, bs []Booking) {
	b := &l.batches[k]
	b.bs, b.resolved = bs, true
	b.parts, b.offs, b.at, b.bad = l.p.resolveBatch(bs)
}

// Stages returns the load's stages; none when there is nothing to book
// or some booking is invalid (Finish reports it). It panics if a batch
// was not resolved: that is a caller's bug.
func (l *StagedLoad) Stages() []func() {
	n := 0
	for k := range l.batches {
		b := &l.batches[k]
		if !b.resolved {
			panic(fmt.Sprintf("planner: staged load: batch %d not resolved", k))
		}
		if b.bad != nil {
			return nil
		}
		n += len(b.bs)
	}
	if n == 0 {
		return nil
	}
	if !l.p.canLoadBlocks() {
		// No bulk path: one stage books them one by one, as Load does.
		return []func(){l.loadEach}
	}
	return []func(){l.loadIDs, l.loadTimelines}
}

// Finish returns the error Load gives for the batches concatenated in
// order: an invalid booking, then a repeated ID, then an overbooked
// resource. Call it after the stages have returned.
func (l *StagedLoad) Finish() error {
	first := 0
	for k := range l.batches {
		b := &l.batches[k]
		if b.bad != nil {
			return b.bad(first + b.at)
		}
		first += len(b.bs)
	}
	if l.err != nil {
		return l.err
	}
	if l.idsErr != nil {
		return l.idsErr
	}
	return l.tlErr
}

// loadEach is the stage for timelines without a bulk path.
func (l *StagedLoad) loadEach() {
	var all []Booking
	for k := range l.batches {
		all = append(all, l.batches[k].bs...)
	}
	l.err = l.p.Load(all)
}

// cursor finds booking i of the load (counted across the batches): the
// batch and the booking's index in it. The stages walk the bookings in
// order, so it starts from the batch of the previous call.
type cursor struct {
	batches []loadBatch
	k       int
	first   int // the index of batches[k]'s first booking
}

func (c *cursor) find(i int) (*loadBatch, int) {
	for i < c.first {
		c.k--
		c.first -= len(c.batches[c.k].bs)
	}
	for i >= c.first+len(c.batches[c.k].bs) {
		c.first += len(c.batches[c.k].bs)
		c.k++
	}
	return &c.batches[c.k], i - c.first
}

// loadIDs is the stage of the booking table: it stores every booking in
// its slot and index cell, keeps the parts of multi-part bookings, and
// adds the slots to the expiry set. It writes the table, multi and the
// expiry set only.
func (l *StagedLoad) loadIDs() {
	p := l.p
	n := 0
	for k := range l.batches {
		n += len(l.batches[k].bs)
	}
	slot, dup := p.storeIDs(l.batches, n)
	if dup >= 0 {
		b, j := (&cursor{batches: l.batches}).find(dup)
		l.idsErr = fmt.Errorf("load bookings[%d] %q: %w", dup, b.bs[j].ID, ErrDuplicateID)
		return
	}
	p.expiry.reserve(n)
	i := 0
	for k := range l.batches {
		b := &l.batches[k]
		for j := range b.bs {
			if parts := b.parts[b.offs[j]:b.offs[j+1]]; len(parts) != 1 {
				p.multi[b.bs[j].ID] = slices.Clone(parts)
			}
			p.expiry.addUnordered(&p.bookings, slot(i))
			i++
		}
	}
	// Settled at once, as Load does: the set's order is (end, slot).
	p.expiry.settle(&p.bookings, p.origin)
}

// loadTimelines is the stage of the timelines: per resource it sorts the
// bookings' edges, checks that they fit and installs the free blocks, and
// counts the resource's bookings (what link counts). It writes the
// resources and the trim heap only.
func (l *StagedLoad) loadTimelines() {
	p := l.p
	edges := p.bookingEdges(l.batches)
	// One pass in index order, as Load installs: a resource is checked
	// against its own blocks before they change. Load checks every
	// resource first, in name order, and reports the first that does not
	// fit; failures are kept per resource to report that one.
	var failed map[uint32]error
	var scratch []Block
	var keys []uint64 // the edge sorts' scratch space
	for _, r := range p.byIdx {
		if r == nil || len(edges[r.idx]) == 0 {
			continue
		}
		keys = stepsort.Sort(edges[r.idx], keys)
		blocks, err := subtractBooked(r.tl.Blocks(p.origin, MaxTime), edges[r.idx], scratch[:0])
		if err != nil {
			if failed == nil {
				failed = make(map[uint32]error)
			}
			failed[r.idx] = err
			continue
		}
		p.installBlocks(r, blocks)
		r.refs += len(edges[r.idx]) / 2
		scratch = blocks
	}
	for _, name := range p.names {
		if err, ok := failed[p.resources[name].idx]; ok {
			l.tlErr = fmt.Errorf("load: resource %q %w", name, err)
			return
		}
	}
}
