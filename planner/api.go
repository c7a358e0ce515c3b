package planner

import "math"

// MaxTime is the end of every timeline: a block that ends at MaxTime is open-ended.
const MaxTime int64 = math.MaxInt64

// Block is a half-open interval [Start, End) of time with a constant amount of
// free capacity. A timeline is a sorted list of such blocks.
//
// Invariant (canonical form): in a Timeline's Blocks, blocks are sorted by
// Start, disjoint, contiguous (each Start equals the previous End) and no two
// neighbours have the same Free.
type Block struct {
	Start int64
	End   int64
	Free  int64
}

// Timeline is the free-capacity profile of one resource over time, starting
// at an origin and extending to MaxTime. Three implementations share this
// interface: the plain list walk of the seed papers (ListTimeline), the
// indexed tree (IndexedTimeline) and the slotted-time baseline
// (SlottedTimeline). The list and the indexed timelines must make identical
// decisions; the slotted one is an approximation used for experiments.
//
// A Timeline validates nothing beyond what it needs to stay consistent: the
// Planner checks arguments (positive amounts, ordered windows, overflow) before
// it calls in. Every mutating method either succeeds completely or returns an
// error and leaves the timeline exactly as it was.
//
// Timelines are not safe for concurrent use; the caller serialises access.
type Timeline interface {
	// Earliest returns the earliest start s with notBefore <= s <= latestStart
	// such that free >= amount over all of [s, s+duration). ok is false when
	// no such start exists. Requires amount > 0, duration > 0,
	// notBefore <= latestStart and latestStart+duration not overflowing.
	Earliest(amount, duration, notBefore, latestStart int64) (start int64, ok bool)

	// Book subtracts amount from the free capacity over [start, end). It
	// returns ErrNoCapacity (and changes nothing) if free < amount anywhere in
	// the interval.
	Book(start, end, amount int64) error

	// Release adds amount to the free capacity over [start, end). It is the
	// inverse of Book and is also used to raise capacity over a window.
	Release(start, end, amount int64) error

	// MinFree returns the smallest free capacity over [start, end).
	MinFree(start, end int64) int64

	// Blocks returns the canonical free blocks that intersect [from, to),
	// clipped to that window. The slice is freshly allocated.
	Blocks(from, to int64) []Block

	// Advance forgets everything that lies wholly before now: afterwards
	// Origin() is max(old origin, now). Callers never ask about time before
	// the origin (the Planner rejects such requests).
	Advance(now int64)

	// Origin returns the earliest instant the timeline still describes.
	Origin() int64

	// Len returns the number of free blocks currently kept.
	Len() int
}

// TimelineFactory creates an empty timeline with the given capacity free from
// origin to MaxTime.
type TimelineFactory func(capacity, origin int64) Timeline
