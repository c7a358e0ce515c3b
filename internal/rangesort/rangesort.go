// Package rangesort orders items by a small range key in place: the
// counting pass and cycles of swaps that the restore's bulk index builds
// (the planner's booking table, the ledger's idempotency records) use to
// place keys range of home cells by range, where the cells they probe are
// in cache.
//
// It must stay deterministic and import nothing: the planner, which may
// use the standard library only, uses it (planner/deps_test.go).
package rangesort

// Bits is log2 of the number of ranges: 4,096.
const Bits = 12

// Sort orders xs by rangeOf(x), which must be less than 1<<Bits, in
// place, by cycles of swaps (no second list, which would be megabytes
// more at a restore's peak); the order within a range is not kept. Range
// r is xs[bounds[r]:bounds[r+1]] afterwards.
func Sort[T any](xs []T, rangeOf func(T) uint32) (bounds [1<<Bits + 1]int) {
	var next [1 << Bits]int
	for _, x := range xs {
		bounds[rangeOf(x)+1]++
	}
	for b := range next {
		bounds[b+1] += bounds[b]
		next[b] = bounds[b]
	}
	for b := range next {
		for next[b] < bounds[b+1] {
			x := xs[next[b]]
			for r := rangeOf(x); r != uint32(b); r = rangeOf(x) {
				// x belongs in range r: put it there and take the one
				// it displaces.
				x, xs[next[r]] = xs[next[r]], x
				next[r]++
			}
			xs[next[b]] = x
			next[b]++
		}
	}
	return bounds
}
