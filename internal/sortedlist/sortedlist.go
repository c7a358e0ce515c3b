// Package sortedlist keeps a set of items in order, in flat chunks of at
// most a few hundred items each, and clones in copy-on-write fashion: the
// ordered stores of the state machine (its rows by ID and its timers),
// which a restore rebuilds from input that is already sorted.
//
// It does what the B-tree it replaces there did (insert, replace, delete,
// minimum, ordered walks, a cheap clone that a snapshot walks while the
// original changes) and one thing that tree cannot: Append takes sorted
// items in O(1) each without a comparison beyond the last item, so a
// restore of a million rows builds the store in tens of milliseconds where
// a million tree inserts took most of a second, and fills the chunks
// instead of leaving split nodes half empty.
//
// A List is not safe for concurrent use, except that a clone may be read
// on one goroutine while its original changes on another (neither then
// writes a chunk the other can see). It starts no goroutines, holds no
// locks, and its contents and walks depend on its items and calls alone.
package sortedlist

import "slices"

// Chunk sizes. A chunk holds at most maxChunk items; Append fills chunks
// to fillChunk, leaving room for later inserts; a chunk that falls below
// minChunk joins a neighbour when the two fit in one.
const (
	maxChunk  = 256
	fillChunk = maxChunk * 7 / 8
	minChunk  = maxChunk / 8
)

// owner marks the chunks a List may change in place. It has a size so
// that every new one is a distinct pointer.
type owner struct{ _ byte }

// chunk is a run of items in order. A chunk whose owner is not its
// List's is shared with a clone and is copied before any change.
type chunk[T any] struct {
	owner *owner
	items []T
}

// List is a sorted set of items ordered by less, which must be a strict
// weak order; items that are neither less than the other are the same
// item.
type List[T any] struct {
	less   func(a, b T) bool
	chunks []*chunk[T]
	// firsts[i] is chunks[i].items[0], kept beside the pointers so that
	// finding an item's chunk reads one flat slice.
	firsts []T
	n      int
	owner  *owner
}

// New returns an empty List ordered by less.
func New[T any](less func(a, b T) bool) *List[T] {
	return &List[T]{less: less, owner: &owner{}}
}

// Len returns the number of items.
func (l *List[T]) Len() int { return l.n }

// Clone returns a copy of l. Both may change independently: a chunk is
// shared until one of them changes it, which copies it first. The cost
// is one pointer and one item per chunk.
func (l *List[T]) Clone() *List[T] {
	// Neither may change the shared chunks in place any more.
	l.owner = &owner{}
	return &List[T]{
		less:   l.less,
		chunks: slices.Clone(l.chunks),
		firsts: slices.Clone(l.firsts),
		n:      l.n,
		owner:  &owner{},
	}
}

// Min returns the first item, and false if l is empty.
func (l *List[T]) Min() (T, bool) {
	if l.n == 0 {
		var zero T
		return zero, false
	}
	return l.firsts[0], true
}

// ReplaceOrInsert adds item, or replaces the item equal to it and returns
// that one and true.
func (l *List[T]) ReplaceOrInsert(item T) (T, bool) {
	var zero T
	if l.n == 0 {
		l.pushChunk(item, 8)
		return zero, false
	}
	ci := l.chunkFor(item)
	i, found := l.index(l.chunks[ci].items, item)
	c := l.mutable(ci)
	if i == 0 {
		l.firsts[ci] = item
	}
	if found {
		old := c.items[i]
		c.items[i] = item
		return old, true
	}
	c.items = insertAt(c.items, i, item)
	l.n++
	if len(c.items) > maxChunk {
		l.split(ci)
	}
	return zero, false
}

// Append adds item, which in the usual case sorts after every item of l:
// then it is appended to the last chunk without a search, and a sorted
// sequence of Appends fills chunks to seven eighths. An item that does
// not sort last goes through ReplaceOrInsert, so any sequence of Appends
// leaves the same set as the same ReplaceOrInserts.
func (l *List[T]) Append(item T) {
	if l.n == 0 {
		l.pushChunk(item, fillChunk)
		return
	}
	last := l.chunks[len(l.chunks)-1]
	if !l.less(last.items[len(last.items)-1], item) {
		l.ReplaceOrInsert(item)
		return
	}
	if len(last.items) >= fillChunk || last.owner != l.owner {
		l.pushChunk(item, fillChunk)
		return
	}
	last.items = insertAt(last.items, len(last.items), item)
	l.n++
}

// Delete removes the item equal to item and returns it and true, or
// returns false if l holds none.
func (l *List[T]) Delete(item T) (T, bool) {
	var zero T
	if l.n == 0 {
		return zero, false
	}
	ci := l.chunkFor(item)
	i, found := l.index(l.chunks[ci].items, item)
	if !found {
		return zero, false
	}
	c := l.mutable(ci)
	old := c.items[i]
	if i == 0 {
		// The usual removal (the earliest timer): no items move.
		c.items[0] = zero
		c.items = c.items[1:]
	} else {
		copy(c.items[i:], c.items[i+1:])
		c.items[len(c.items)-1] = zero
		c.items = c.items[:len(c.items)-1]
	}
	l.n--
	if len(c.items) == 0 {
		l.removeChunk(ci)
		return old, true
	}
	if i == 0 {
		l.firsts[ci] = c.items[0]
	}
	if len(c.items) < minChunk {
		l.join(ci)
	}
	return old, true
}

// Ascend calls fn for every item in order until fn returns false.
func (l *List[T]) Ascend(fn func(T) bool) {
	l.walk(0, 0, fn)
}

// AscendGreaterOrEqual calls fn for every item not less than pivot, in
// order, until fn returns false.
func (l *List[T]) AscendGreaterOrEqual(pivot T, fn func(T) bool) {
	if l.n == 0 {
		return
	}
	ci := l.chunkFor(pivot)
	i, _ := l.index(l.chunks[ci].items, pivot)
	l.walk(ci, i, fn)
}

// walk calls fn from item i of chunk ci on.
func (l *List[T]) walk(ci, i int, fn func(T) bool) {
	for ; ci < len(l.chunks); ci, i = ci+1, 0 {
		for _, it := range l.chunks[ci].items[i:] {
			if !fn(it) {
				return
			}
		}
	}
}

// chunkFor returns the chunk item belongs in: the last whose first item
// is not after it, or the first chunk. l is not empty.
func (l *List[T]) chunkFor(item T) int {
	lo, hi := 0, len(l.firsts)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.less(item, l.firsts[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(lo-1, 0)
}

// index returns the position of the first of items not less than item,
// and whether that one equals item.
func (l *List[T]) index(items []T, item T) (int, bool) {
	lo, hi := 0, len(items)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.less(items[mid], item) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(items) && !l.less(item, items[lo])
}

// mutable returns chunk ci, copied first if l does not own it.
func (l *List[T]) mutable(ci int) *chunk[T] {
	c := l.chunks[ci]
	if c.owner == l.owner {
		return c
	}
	c = &chunk[T]{owner: l.owner, items: withRoom(c.items, len(c.items))}
	l.chunks[ci] = c
	return c
}

// pushChunk appends a chunk holding item alone, with room for capacity.
func (l *List[T]) pushChunk(item T, capacity int) {
	items := make([]T, 1, capacity)
	items[0] = item
	l.chunks = append(l.chunks, &chunk[T]{owner: l.owner, items: items})
	l.firsts = append(l.firsts, item)
	l.n++
}

// split cuts chunk ci, which holds more than maxChunk items, in two.
func (l *List[T]) split(ci int) {
	c := l.chunks[ci]
	h := len(c.items) / 2
	right := make([]T, len(c.items)-h, maxChunk*3/4)
	copy(right, c.items[h:])
	clear(c.items[h:])
	c.items = c.items[:h]
	l.chunks = slices.Insert(l.chunks, ci+1, &chunk[T]{owner: l.owner, items: right})
	l.firsts = slices.Insert(l.firsts, ci+1, right[0])
}

// join moves chunk ci, which has fallen below minChunk items, into a
// neighbour that has room for it, or the neighbour into it.
func (l *List[T]) join(ci int) {
	n := len(l.chunks[ci].items)
	switch {
	case ci+1 < len(l.chunks) && n+len(l.chunks[ci+1].items) <= maxChunk:
		c := l.mutable(ci)
		c.items = appendAll(c.items, l.chunks[ci+1].items)
		l.removeChunk(ci + 1)
	case ci > 0 && n+len(l.chunks[ci-1].items) <= maxChunk:
		p := l.mutable(ci - 1)
		p.items = appendAll(p.items, l.chunks[ci].items)
		l.removeChunk(ci)
	}
}

// removeChunk drops chunk ci from the list.
func (l *List[T]) removeChunk(ci int) {
	l.chunks = slices.Delete(l.chunks, ci, ci+1)
	l.firsts = slices.Delete(l.firsts, ci, ci+1)
}

// withRoom returns a copy of s with room for n items and an eighth more,
// never past one item over maxChunk (the largest a chunk is before it
// splits).
func withRoom[T any](s []T, n int) []T {
	ns := make([]T, len(s), min(n+n/8+1, maxChunk+1))
	copy(ns, s)
	return ns
}

// appendAll appends more to s, which together hold at most maxChunk
// items, growing s to no more than one item over maxChunk.
func appendAll[T any](s, more []T) []T {
	if n := len(s) + len(more); n > cap(s) {
		s = withRoom(s, n)
	}
	return append(s, more...)
}

// insertAt inserts v at position i of s, growing s by at most a quarter
// of its length at a time and never past one item over maxChunk (the
// largest a chunk is before it splits).
func insertAt[T any](s []T, i int, v T) []T {
	if len(s) == cap(s) {
		ns := make([]T, len(s), min(max(len(s)+len(s)/4, 8), maxChunk+1))
		copy(ns, s)
		s = ns
	}
	s = s[:len(s)+1]
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}
