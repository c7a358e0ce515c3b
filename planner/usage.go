package planner

import (
	"math"
	"math/bits"
)

// Usage summarises one resource over a window [From, To) in exact integer
// areas (capacity units × time units).
type Usage struct {
	Resource string
	From, To int64
	// CapacityArea is the integral of the total capacity (after capacity
	// changes) over the window.
	CapacityArea int64
	// BookedArea is the integral of the booked capacity.
	BookedArea int64
	// FreeArea is CapacityArea - BookedArea.
	FreeArea int64
	// LargestFreeBlock is the largest area Free × (End-Start) of one free
	// block of the canonical timeline, clipped to the window.
	LargestFreeBlock int64
}

// Utilization returns BookedArea / CapacityArea (0 when there is no
// capacity).
func (u Usage) Utilization() float64 {
	if u.CapacityArea <= 0 {
		return 0
	}
	return float64(u.BookedArea) / float64(u.CapacityArea)
}

// Fragmentation returns 1 - LargestFreeBlock / FreeArea: 0 when all free
// capacity of the window lies in one block of constant free capacity (or
// nothing is free), approaching 1 when the free area is scattered over
// many small blocks. It measures how much of the free area cannot be
// offered as a single rectangle of the free list.
func (u Usage) Fragmentation() float64 {
	if u.FreeArea <= 0 {
		return 0
	}
	return 1 - float64(u.LargestFreeBlock)/float64(u.FreeArea)
}

// Usage reports the capacity, booked and free areas of resource over
// [from, to). A window whose areas do not fit in int64 is rejected with a
// FieldError on "to".
func (p *Planner) Usage(resource string, from, to int64) (Usage, error) {
	r, err := p.lookup("resource", resource)
	if err != nil {
		return Usage{}, err
	}
	if err := p.checkWindow(from, to); err != nil {
		return Usage{}, err
	}
	u := Usage{Resource: resource, From: from, To: to}
	ok := true
	eachBlock(r.capacity, from, to, func(c Block) bool {
		u.CapacityArea, ok = mulAdd(u.CapacityArea, c.Free, c.End-c.Start)
		return ok
	})
	if !ok {
		return Usage{}, errAreaOverflow()
	}
	eachBlock(r.tl, from, to, func(b Block) bool {
		var a int64
		if a, ok = mulAdd(0, b.Free, b.End-b.Start); !ok {
			return false
		}
		u.LargestFreeBlock = max(u.LargestFreeBlock, a)
		u.FreeArea, ok = mulAdd(u.FreeArea, a, 1)
		return ok
	})
	if !ok {
		return Usage{}, errAreaOverflow()
	}
	u.BookedArea = u.CapacityArea - u.FreeArea
	return u, nil
}

// errAreaOverflow is Usage's error for a window whose areas overflow
// int64, made only when it happens.
func errAreaOverflow() error {
	return &FieldError{Field: "to", Reason: "window too long: area overflows int64"}
}

// eachBlock calls fn with the blocks tl.Blocks(from, to) returns, in
// order, until fn returns false. The indexed timeline hands them over one
// by one instead of in a fresh slice (see IndexedTimeline.each).
func eachBlock(tl Timeline, from, to int64, fn func(Block) bool) {
	if it, ok := tl.(*IndexedTimeline); ok {
		it.each(from, to, fn)
		return
	}
	for _, b := range tl.Blocks(from, to) {
		if !fn(b) {
			return
		}
	}
}

// mulAdd returns acc + x*y for non-negative operands, and false on
// overflow (or a negative operand, which a consistent timeline never has).
func mulAdd(acc, x, y int64) (int64, bool) {
	if acc < 0 || x < 0 || y < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(x), uint64(y))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	s := acc + int64(lo)
	if s < acc {
		return 0, false
	}
	return s, true
}
