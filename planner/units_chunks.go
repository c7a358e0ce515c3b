package planner

import "slices"

// chunkMax bounds a chunk of a chunkList: an insert or delete moves at
// most this many elements (plus, on a split, one slot of the chunk table
// per chunkMax elements), instead of half of a long slice.
const chunkMax = 128

// chunkList is a sequence kept in order by its caller, stored as a list
// of chunks of 1..chunkMax elements. Positions are (chunk, index) pairs;
// (len(chunks), 0) is the end. Any insert or delete invalidates positions.
//
// Invariant: no chunk is empty; n is the number of elements.
type chunkList[T any] struct {
	chunks [][]T
	n      int
}

// find returns the position of the first element for which after is true;
// after must be false for a prefix of the sequence and true for the rest.
func (c *chunkList[T]) find(after func(T) bool) (int, int) {
	lo, hi := 0, len(c.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ch := c.chunks[m]
		if after(ch[len(ch)-1]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == len(c.chunks) {
		return lo, 0
	}
	ch := c.chunks[lo]
	a, b := 0, len(ch)
	for a < b {
		m := int(uint(a+b) >> 1)
		if after(ch[m]) {
			b = m
		} else {
			a = m + 1
		}
	}
	return lo, a
}

// at returns the element at a position; ok is false at the end.
func (c *chunkList[T]) at(ci, i int) (v T, ok bool) {
	if ci >= len(c.chunks) {
		return v, false
	}
	return c.chunks[ci][i], true
}

// before returns the element just before a position; ok is false at the
// start.
func (c *chunkList[T]) before(ci, i int) (v T, ok bool) {
	if i > 0 {
		return c.chunks[ci][i-1], true
	}
	if ci == 0 {
		return v, false
	}
	ch := c.chunks[ci-1]
	return ch[len(ch)-1], true
}

// next returns the position after (ci, i), which must not be the end.
func (c *chunkList[T]) next(ci, i int) (int, int) {
	if i+1 < len(c.chunks[ci]) {
		return ci, i + 1
	}
	return ci + 1, 0
}

// insert puts v at position (ci, i), splitting a chunk that grows past
// chunkMax.
func (c *chunkList[T]) insert(ci, i int, v T) {
	c.n++
	if len(c.chunks) == 0 {
		c.chunks = append(c.chunks, []T{v})
		return
	}
	if ci == len(c.chunks) {
		ci--
		i = len(c.chunks[ci])
	}
	ch := slices.Insert(c.chunks[ci], i, v)
	if len(ch) <= chunkMax {
		c.chunks[ci] = ch
		return
	}
	half := len(ch) / 2
	right := slices.Clone(ch[half:])
	clear(ch[half:])
	c.chunks[ci] = ch[:half]
	c.chunks = slices.Insert(c.chunks, ci+1, right)
}

// delete removes the element at (ci, i).
func (c *chunkList[T]) delete(ci, i int) {
	c.n--
	ch := slices.Delete(c.chunks[ci], i, i+1)
	if len(ch) == 0 {
		c.chunks = slices.Delete(c.chunks, ci, ci+1)
		return
	}
	c.chunks[ci] = ch
}

// all calls fn for every element in order.
func (c *chunkList[T]) all(fn func(T)) {
	for _, ch := range c.chunks {
		for _, v := range ch {
			fn(v)
		}
	}
}
