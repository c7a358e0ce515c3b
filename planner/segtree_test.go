package planner

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSegTreeRebuildFrom checks rebuildFrom against a full build: a tree
// is built over random chunk summaries, chunks are inserted, deleted or
// changed at a random place (as a split, an emptied chunk or a rebalance
// does), and the partial rebuild from that place must leave exactly the
// tree that build makes from scratch, including across changes of the
// tree's size.
func TestSegTreeRebuildFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	summary := func() *chunk {
		a, b := rng.Int64N(200)-50, rng.Int64N(200)-50
		return &chunk{mn: min(a, b), mx: max(a, b)}
	}
	var chunks []*chunk
	for range 5 {
		chunks = append(chunks, summary())
	}
	var got segTree
	got.build(chunks)
	most := 0
	for step := range 4000 {
		at := rng.IntN(len(chunks))
		switch op := rng.IntN(4); {
		case op == 0 || op == 3 || len(chunks) < 3:
			chunks = slices.Insert(chunks, at+1, summary())
			chunks[at] = summary()
		case op == 1:
			chunks = slices.Delete(chunks, at, at+1)
		case op == 2:
			chunks[at] = summary()
			if at+1 < len(chunks) {
				chunks[at+1] = summary()
			}
		}
		// Drift towards a few hundred chunks, then back down.
		if step > 2000 && len(chunks) > 3 && rng.IntN(2) == 0 {
			at = min(at, len(chunks)-2)
			chunks = slices.Delete(chunks, at, at+1)
		}
		most = max(most, len(chunks))
		got.rebuildFrom(chunks, min(at, len(chunks)-1))
		var want segTree
		want.build(chunks)
		if got.size != want.size || !slices.Equal(got.mn[:2*got.size], want.mn[:2*want.size]) || !slices.Equal(got.mx[:2*got.size], want.mx[:2*want.size]) {
			t.Fatalf("step %d: %d chunks, change at %d: partial rebuild differs from a full build", step, len(chunks), at)
		}
		if err := got.check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if most < 300 || len(chunks) > most/2 {
		t.Fatalf("the chunk count peaked at %d and ended at %d: the test did not grow and shrink the tree", most, len(chunks))
	}
}
