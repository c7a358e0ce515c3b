package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChunkListModel checks the chunked list against a plain sorted slice
// over many inserts and deletes (enough to split and empty chunks).
func TestChunkListModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var c chunkList[int]
	var model []int
	for step := range 20000 {
		v := rng.IntN(5000)
		if len(model) > 0 && rng.IntN(3) == 0 {
			v = model[rng.IntN(len(model))]
			ci, i := c.find(func(x int) bool { return x >= v })
			c.delete(ci, i)
			j, _ := slices.BinarySearch(model, v)
			model = slices.Delete(model, j, j+1)
		} else {
			ci, i := c.find(func(x int) bool { return x > v })
			c.insert(ci, i, v)
			j, _ := slices.BinarySearch(model, v+1)
			model = slices.Insert(model, j, v)
		}
		if step%997 != 0 && step != 19999 {
			continue
		}
		var got []int
		c.all(func(x int) { got = append(got, x) })
		if !slices.Equal(got, model) || c.n != len(model) {
			t.Fatalf("step %d: chunk list %d elements, model %d; equal %v", step, c.n, len(model), slices.Equal(got, model))
		}
		for _, ch := range c.chunks {
			if len(ch) == 0 || len(ch) > chunkMax {
				t.Fatalf("step %d: chunk of %d", step, len(ch))
			}
		}
		// before/next walk agrees with the model.
		k := 0
		for ci, i := 0, 0; ; ci, i = c.next(ci, i) {
			x, ok := c.at(ci, i)
			if !ok {
				break
			}
			if p, ok := c.before(ci, i); ok != (k > 0) || (ok && p != model[k-1]) {
				t.Fatalf("step %d: before(%d) = %d, %v", step, k, p, ok)
			}
			if x != model[k] {
				t.Fatalf("step %d: at %d = %d, want %d", step, k, x, model[k])
			}
			k++
		}
	}
}

// TestUnitsLongLines drives a few units through thousands of bookings,
// releases and an advance, so that unit schedules and the record index
// span many chunks, and checks the invariants on the way.
func TestUnitsLongLines(t *testing.T) {
	u := mustUnits(t, 6, FitBest)
	rng := rand.New(rand.NewPCG(3, 5))
	var live []string
	for i := range 4000 {
		id := fmt.Sprintf("b%d", i)
		req := UnitRequest{Amount: 1 + rng.Int64N(3), Duration: 1 + rng.Int64N(40), NotBefore: u.Origin() + rng.Int64N(20000), Deadline: MaxTime, Movable: rng.IntN(2) == 0}
		policy := UnitRefuse
		if i%3 == 0 {
			policy = UnitRemap
		}
		if _, err := u.Reserve(id, req, policy); err != nil {
			t.Fatal(err)
		}
		live = append(live, id)
		if i%5 == 0 {
			k := rng.IntN(len(live))
			if _, err := u.Release(live[k]); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, k, k+1)
		}
		if i%1000 == 999 {
			if err := checkUnits(u); err != nil {
				t.Fatalf("after %d: %v", i, err)
			}
			u.Advance(u.Origin() + 2000)
			if err := checkUnits(u); err != nil {
				t.Fatalf("after advance at %d: %v", i, err)
			}
			live = slices.DeleteFunc(live, func(id string) bool { _, ok := u.Get(id); return !ok })
		}
	}
	if u.lines[0].spans.n <= chunkMax {
		t.Fatalf("unit n1 holds %d spans: the test should span several chunks", u.lines[0].spans.n)
	}
}
