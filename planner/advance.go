package planner

// Advance without a walk over every resource.
//
// Moving the origin changes a timeline's content only where a block ends
// at or before the new origin: until then, trimming it would merely move
// its first block's start. So each resource is keyed by its trim point,
// the end of the first block of its free timeline or of its capacity
// profile, whichever is earlier, and Advance trims only the resources
// whose key it has passed. The others keep a stale trimmed origin; their
// timelines read the Planner's origin through a shared clock, so that
// Origin, the clipping of every query and Len are exactly those of a
// trimmed timeline. Every write to a resource re-keys it, and trims it at
// once if the write put a block boundary at or before the origin.
//
// Timelines that cannot share the clock (the slotted one, or any other
// Timeline) are trimmed on every Advance, as before.

// lazyTimeline is implemented by the timelines that can lag behind the
// Planner's origin.
type lazyTimeline interface {
	// setClock makes the timeline describe nothing before *clock.
	setClock(clock *int64)
	// firstEnd returns the end of the first block (MaxTime for one block).
	firstEnd() int64
}

func (l *ListTimeline) setClock(clock *int64) { l.clock = clock }

func (l *ListTimeline) firstEnd() int64 { return l.blocks[0].End }

func (t *IndexedTimeline) setClock(clock *int64) { t.clock = clock }

func (t *IndexedTimeline) firstEnd() int64 {
	if t.rev != nil {
		return t.shortFirstEnd()
	}
	// Slot 0 may be the first of a run of copies of the first block:
	// its end is that of the run's last slot.
	return t.blockEnd(0, groupLen(t.chunks[0], 0)-1)
}

// track registers a new resource for trimming.
func (p *Planner) track(r *resource) {
	if lt, ok := r.tl.(lazyTimeline); ok {
		lt.setClock(p.clock)
		r.capacity.setClock(p.clock)
		r.lazy = true
	}
	r.key = p.trimKey(r)
	p.trims.push(r)
}

// trimKey is the origin at which r must next be trimmed.
func (p *Planner) trimKey(r *resource) int64 {
	if !r.lazy {
		return p.origin + 1 // p.origin < MaxTime
	}
	return min(r.tl.(lazyTimeline).firstEnd(), r.capacity.firstEnd())
}

// trim moves r's timelines to the origin now.
func (p *Planner) trim(r *resource, now int64) {
	r.tl.Advance(now)
	r.capacity.Advance(now)
	r.maxCap = profileMax(r.capacity)
}

// touch re-keys r after a write to it.
func (p *Planner) touch(r *resource) {
	if !r.lazy {
		return
	}
	k := p.trimKey(r)
	if k <= p.origin {
		p.trim(r, p.origin)
		k = p.trimKey(r)
	}
	r.key = k
	p.trims.fix(r.hpos)
}

// touchAt is touch after a Book or Release of r's free timeline over a
// window from start (at or after the origin) on. Such a write adds block
// boundaries only at the window's two ends and removes only those, so the
// free timeline's first block end can become no earlier than the lesser of
// itself and start, and it can only move when start is at or before it.
// The capacity profile is not written. So when start lies after r.key
// (the lesser of the two first ends, current since the last write), the
// key stays what it is and touch's lookups of both first ends are skipped:
// an admission far from the origin, nearly every one, skips them.
func (p *Planner) touchAt(r *resource, start int64) {
	if start > r.key {
		return
	}
	p.touch(r)
}

// installBlocks gives r's free timeline the canonical blocks, which start
// at the origin.
func (p *Planner) installBlocks(r *resource, blocks []Block) {
	r.tl.Advance(p.origin)
	r.tl.(blockLoader).loadBlocks(blocks)
	p.touch(r)
}

// Advance moves the origin to now (it never moves back; now is capped at
// MaxTime-1): every timeline forgets the past, and bookings that end at or
// before now are forgotten.
func (p *Planner) Advance(now int64) {
	now = min(now, MaxTime-1)
	if now <= p.origin {
		return
	}
	p.origin = now
	*p.clock = now
	for len(p.trims) > 0 && p.trims[0].key <= now {
		r := p.trims[0]
		p.trim(r, now)
		r.key = p.trimKey(r) // > now
		p.trims.fix(0)
	}
	for {
		slot, ok := p.expiry.due(&p.bookings, now)
		if !ok {
			break
		}
		p.forget(slot)
	}
}

// trimHeap is a min-heap of resources by (key, idx); each resource's
// hpos is its position.
type trimHeap []*resource

func (h trimHeap) less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].idx < h[j].idx
}

func (h trimHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hpos, h[j].hpos = i, j
}

func (h *trimHeap) push(r *resource) {
	r.hpos = len(*h)
	*h = append(*h, r)
	h.up(r.hpos)
}

// remove takes the resource at position i out of the heap.
func (h *trimHeap) remove(i int) {
	n := len(*h) - 1
	if i != n {
		h.swap(i, n)
	}
	(*h)[n] = nil
	*h = (*h)[:n]
	if i != n {
		h.fix(i)
	}
}

// fix restores the order after the key at position i changed.
func (h trimHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h trimHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts position i towards the leaves and reports whether it moved.
func (h trimHeap) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
