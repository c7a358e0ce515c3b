package planner

import (
	"fmt"
	"math"
	"sort"
)

// ListTimeline is the time-exclusive list of free blocks of Schneider &
// Linnert: one block per stretch of time with constant free capacity, kept
// sorted by start. Earliest walks the list from its head, as in the papers;
// it is the slow baseline the indexed timeline is measured against and the
// implementation whose decisions the indexed one must reproduce.
//
// Invariant: blocks is non-empty, blocks[0].Start == origin, the last block
// ends at MaxTime, every block has Start < End, each Start equals the
// previous End, and no two neighbours have the same Free.
type ListTimeline struct {
	blocks []Block
	origin int64
	// clock, when set, is the owning Planner's origin: the timeline
	// describes nothing before it even while origin lags (see advance.go).
	clock *int64
}

var _ Timeline = (*ListTimeline)(nil)

// NewList returns a ListTimeline with capacity free over [origin, MaxTime).
// An origin of MaxTime is moved back by one so that the timeline is never
// empty.
func NewList(capacity, origin int64) Timeline {
	return newList(capacity, origin)
}

func newList(capacity, origin int64) *ListTimeline {
	if origin >= MaxTime {
		origin = MaxTime - 1
	}
	return &ListTimeline{
		blocks: []Block{{Start: origin, End: MaxTime, Free: capacity}},
		origin: origin,
	}
}

// Origin implements Timeline: the later of the trimmed origin and the
// owning Planner's clock.
func (l *ListTimeline) Origin() int64 {
	if l.clock != nil && *l.clock > l.origin {
		return *l.clock
	}
	return l.origin
}

// Len implements Timeline.
func (l *ListTimeline) Len() int { return len(l.blocks) }

// find returns the index of the block that contains t (t >= origin).
func (l *ListTimeline) find(t int64) int {
	// The first block whose End is beyond t contains t.
	return sort.Search(len(l.blocks), func(i int) bool { return l.blocks[i].End > t })
}

// Earliest implements Timeline with the candidate search of the seed
// papers: starting at the head of the list it looks for a block with enough
// free capacity, then extends the run over adjacent blocks until the run
// covers the duration, starting over behind any block that is too small.
func (l *ListTimeline) Earliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	if o := l.Origin(); notBefore < o {
		notBefore = o
	}
	if amount <= 0 || duration <= 0 || notBefore > latestStart || latestStart > MaxTime-duration {
		return 0, false
	}
	cand := int64(0)
	have := false
	for i := range l.blocks {
		b := &l.blocks[i]
		if b.End <= notBefore {
			continue
		}
		if b.Free < amount {
			have = false
			continue
		}
		if !have {
			cand = max(b.Start, notBefore)
			if cand > latestStart {
				return 0, false
			}
			have = true
		}
		// cand <= latestStart <= MaxTime-duration, so cand+duration cannot
		// overflow; b.End-cand could, for a negative cand.
		if b.End >= cand+duration {
			return cand, true
		}
	}
	return 0, false
}

// MinFree implements Timeline. For an empty interval it returns the free
// capacity at start.
func (l *ListTimeline) MinFree(start, end int64) int64 {
	if o := l.Origin(); start < o {
		start = o
	}
	if end <= start {
		if i := l.find(start); i < len(l.blocks) {
			return l.blocks[i].Free
		}
		return math.MaxInt64
	}
	m := int64(math.MaxInt64)
	for i := l.find(start); i < len(l.blocks) && l.blocks[i].Start < end; i++ {
		m = min(m, l.blocks[i].Free)
	}
	return m
}

// Blocks implements Timeline.
func (l *ListTimeline) Blocks(from, to int64) []Block {
	if o := l.Origin(); from < o {
		from = o
	}
	if to <= from {
		return []Block{}
	}
	i := l.find(from)
	j := i
	for j < len(l.blocks) && l.blocks[j].Start < to {
		j++
	}
	out := make([]Block, j-i)
	copy(out, l.blocks[i:j])
	if len(out) > 0 {
		out[0].Start = max(out[0].Start, from)
		out[len(out)-1].End = min(out[len(out)-1].End, to)
	}
	return out
}

// Book implements Timeline. Time before the origin is ignored.
func (l *ListTimeline) Book(start, end, amount int64) error {
	if o := l.Origin(); start < o {
		start = o
	}
	if end <= start || amount == 0 {
		return nil
	}
	if amount < 0 {
		return fmt.Errorf("list timeline: book amount %d: %w", amount, ErrInvalid)
	}
	if l.MinFree(start, end) < amount {
		return ErrNoCapacity
	}
	l.add(start, end, -amount)
	return nil
}

// Release implements Timeline. Time before the origin is ignored.
func (l *ListTimeline) Release(start, end, amount int64) error {
	if o := l.Origin(); start < o {
		start = o
	}
	if end <= start || amount == 0 {
		return nil
	}
	if amount < 0 {
		return fmt.Errorf("list timeline: release amount %d: %w", amount, ErrInvalid)
	}
	for i := l.find(start); i < len(l.blocks) && l.blocks[i].Start < end; i++ {
		if l.blocks[i].Free > math.MaxInt64-amount {
			return fmt.Errorf("list timeline: release would overflow free capacity: %w", ErrInvalid)
		}
	}
	l.add(start, end, amount)
	return nil
}

// add adds delta to the free capacity over [start, end) (origin <= start <
// end), splitting the blocks at both ends and merging equal neighbours
// afterwards.
func (l *ListTimeline) add(start, end, delta int64) {
	i := l.split(start)
	j := l.split(end) // index of the first block at or after end
	for k := i; k < j; k++ {
		l.blocks[k].Free += delta
	}
	// Only the edges of the touched range can have become equal to a
	// neighbour: inside the range every block changed by the same delta.
	l.mergeAt(j)
	l.mergeAt(i)
}

// split makes t a block boundary and returns the index of the block that
// starts at t (len(blocks) when t == MaxTime).
func (l *ListTimeline) split(t int64) int {
	if t >= MaxTime {
		return len(l.blocks)
	}
	i := l.find(t)
	b := l.blocks[i]
	if b.Start == t {
		return i
	}
	l.blocks = append(l.blocks, Block{})
	copy(l.blocks[i+2:], l.blocks[i+1:])
	l.blocks[i] = Block{Start: b.Start, End: t, Free: b.Free}
	l.blocks[i+1] = Block{Start: t, End: b.End, Free: b.Free}
	return i + 1
}

// mergeAt merges block i into block i-1 when both have the same free
// capacity.
func (l *ListTimeline) mergeAt(i int) {
	if i <= 0 || i >= len(l.blocks) || l.blocks[i-1].Free != l.blocks[i].Free {
		return
	}
	l.blocks[i-1].End = l.blocks[i].End
	l.blocks = append(l.blocks[:i], l.blocks[i+1:]...)
}

// Advance implements Timeline: it drops the blocks that end at or before
// now and cuts the first remaining block at now.
func (l *ListTimeline) Advance(now int64) {
	if now <= l.origin {
		return
	}
	if now >= MaxTime {
		now = MaxTime - 1
	}
	i := l.find(now)
	if i > 0 {
		n := copy(l.blocks, l.blocks[i:])
		clear(l.blocks[n:])
		l.blocks = l.blocks[:n]
	}
	l.blocks[0].Start = now
	l.origin = now
}
