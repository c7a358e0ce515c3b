package fsm

import (
	"iter"

	"github.com/tidwall/btree"
)

// sortedSet is the ordered set the state keeps its reservation IDs and its
// timers in: a B-tree without locks (the
// state is only touched by Apply's goroutine, or by the restore stage
// that owns the tree). Its methods keep the names and meanings the state
// has always used; iteration is in ascending order of less, never
// dependent on how the tree was built.
type sortedSet[T any] struct {
	t *btree.BTreeG[T]
}

// newSortedSet returns an empty set ordered by less, with nodes of up to
// 2*degree-1 items.
func newSortedSet[T any](degree int, less func(a, b T) bool) sortedSet[T] {
	return sortedSet[T]{btree.NewBTreeGOptions(less, btree.Options{NoLocks: true, Degree: degree})}
}

// Len returns the number of items.
func (s sortedSet[T]) Len() int { return s.t.Len() }

// Min returns the smallest item, if any.
func (s sortedSet[T]) Min() (T, bool) { return s.t.Min() }

// Get returns the item equal to key, if any.
func (s sortedSet[T]) Get(key T) (T, bool) { return s.t.Get(key) }

// ReplaceOrInsert adds it, replacing an equal item.
func (s sortedSet[T]) ReplaceOrInsert(it T) { s.t.Set(it) }

// Delete removes the item equal to key, if any.
func (s sortedSet[T]) Delete(key T) { s.t.Delete(key) }

// Ascend calls f on every item in ascending order until f returns false.
func (s sortedSet[T]) Ascend(f func(T) bool) { s.t.Scan(f) }

// AscendGreaterOrEqual calls f on the items ≥ pivot in ascending order
// until f returns false.
func (s sortedSet[T]) AscendGreaterOrEqual(pivot T, f func(T) bool) { s.t.Ascend(pivot, f) }

// AscendRange calls f on the items in [lo, hi) in ascending order until f
// returns false.
func (s sortedSet[T]) AscendRange(lo, hi T, f func(T) bool) {
	s.t.Ascend(lo, func(it T) bool {
		return s.t.Less(it, hi) && f(it)
	})
}

// DescendLessOrEqual calls f on the items ≤ pivot in descending order
// until f returns false.
func (s sortedSet[T]) DescendLessOrEqual(pivot T, f func(T) bool) { s.t.Descend(pivot, f) }

// loadSorted enters items, strictly ascending, into the empty set s in
// two ascending passes: three items in five first, then the other two.
//
// The first pass appends each item to the rightmost leaf (the B-tree's
// bulk load: one comparison with the leaf's last item instead of a
// search from the root), which leaves every leaf half full, as any
// ascending insertion does: a full leaf splits in the middle and its left
// half never receives another item. The second pass puts its items into
// the gaps, filling the leaves to about four fifths: room for the entries
// that come after a restore without splitting (a pass of every other
// item fills them completely, and then the first new item in each splits
// it, which made later inserts slower and the tree larger than a random
// order's). Its items come in ascending order too, so a path hint, which
// remembers the positions the last search took at each level, finds each
// one's place in a node with a comparison or two.
//
// The items are walked once per pass, so a merge of sorted lists can be
// handed over as it is instead of being copied into one list first.
func (s sortedSet[T]) loadSorted(items iter.Seq[T]) {
	i := 0
	for it := range items {
		if inFirstPass(i) {
			s.t.Load(it)
		}
		i++
	}
	var hint btree.PathHint
	i = 0
	for it := range items {
		if !inFirstPass(i) {
			s.t.SetHint(it, &hint)
		}
		i++
	}
}

// inFirstPass reports whether the item at position i of a sorted list
// goes into the tree in loadSorted's first pass: three in five, evenly
// spread.
func inFirstPass(i int) bool { return i%5%2 == 0 }
