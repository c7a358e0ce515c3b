package planner

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// TestBookTableModel drives a bookTable and a Go map with the same seeded
// random adds and removes (IDs from a small pool, so slots and index cells
// are reused and probe runs collide; every other add and remove goes
// through the index cell a probe found) and checks after every step that
// both hold the same bookings, that every ID resolves to its own record,
// and that the slot of each live booking is stable until it is removed.
func TestBookTableModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pool  int
		steps int
		seed  uint64
	}{
		{"tiny pool", 8, 2000, 1},
		{"collisions", 200, 20000, 2},
		{"growth", 5000, 30000, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 42))
			var bt bookTable
			model := map[string]uint32{} // id -> slot
			for step := range tc.steps {
				id := "b" + strconv.Itoa(rng.IntN(tc.pool))
				if slot, ok := model[id]; ok {
					got, ref, found := bt.probe(id, hashID(id))
					if !found || got != slot {
						t.Fatalf("step %d: probe(%q) = %d, %v; want %d", step, id, got, found, slot)
					}
					// Every other step removes through the cell the probe
					// found, the others look it up again.
					if step%2 == 1 {
						bt.removeAt(slot, ref)
					} else {
						bt.remove(slot)
					}
					delete(model, id)
				} else {
					_, ref, found := bt.probe(id, hashID(id))
					if found || bt.has(id) {
						t.Fatalf("step %d: removed %q still found", step, id)
					}
					e := entry{id: id, amount: int64(step), start: int64(step), end: int64(step) + 1}
					// Likewise for adds; a ref taken before the add's
					// rehash (growth) is stale and must not be used.
					if step%2 == 1 {
						model[id] = bt.addAt(e, ref)
					} else {
						model[id] = bt.add(e)
					}
				}
				if bt.len() != len(model) {
					t.Fatalf("step %d: len %d, want %d", step, bt.len(), len(model))
				}
				if step%97 != 0 && step != tc.steps-1 {
					continue
				}
				for mid, slot := range model {
					got, ok := bt.find(mid)
					if !ok || got != slot || bt.at(got).id != mid {
						t.Fatalf("step %d: find(%q) = %d, %v; want slot %d", step, mid, got, ok, slot)
					}
				}
				var ids []string
				for id := range bt.ids() {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				var want []string
				for id := range model {
					want = append(want, id)
				}
				slices.Sort(want)
				if !slices.Equal(ids, want) {
					t.Fatalf("step %d: ids %v, want %v", step, ids, want)
				}
				if err := bt.checkIndex(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if int(bt.hw) > tc.pool {
					t.Fatalf("step %d: %d slots for at most %d live bookings: free slots not reused", step, bt.hw, tc.pool)
				}
			}
		})
	}
}

// TestBookTableDeterministic checks that two tables fed the same calls
// assign the same slots and list the IDs in the same order.
func TestBookTableDeterministic(t *testing.T) {
	run := func() ([]uint32, []string) {
		var bt bookTable
		var slots []uint32
		live := map[string]uint32{}
		for i := range 3000 {
			id := "x" + strconv.Itoa((i*7919)%1000)
			if s, ok := live[id]; ok {
				bt.remove(s)
				delete(live, id)
				continue
			}
			s := bt.add(entry{id: id})
			live[id] = s
			slots = append(slots, s)
		}
		return slots, slices.Collect(bt.ids())
	}
	s1, i1 := run()
	s2, i2 := run()
	if !slices.Equal(s1, s2) || !slices.Equal(i1, i2) {
		t.Fatal("same calls gave different slots or ID order")
	}
}

// TestEndHeapModel pushes, removes and re-keys random bookings in the
// expiry heap and checks after every step that it holds exactly the live
// slots, that every record knows its position, and that the root is the
// least (end, slot) of a brute-force scan.
func TestEndHeapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var bt bookTable
	var h endHeap
	live := map[string]uint32{}
	for step := range 5000 {
		id := "e" + strconv.Itoa(rng.IntN(300))
		if s, ok := live[id]; ok {
			if rng.IntN(2) == 0 {
				h.remove(&bt, s)
				bt.remove(s)
				delete(live, id)
			} else {
				e := bt.at(s)
				e.end = rng.Int64N(50)
				h.fix(&bt, int(e.pos))
			}
		} else {
			s := bt.add(entry{id: id, end: rng.Int64N(50)})
			h.push(&bt, s)
			live[id] = s
		}
		if len(h) != len(live) {
			t.Fatalf("step %d: heap holds %d, want %d", step, len(h), len(live))
		}
		if len(h) == 0 {
			continue
		}
		best := h[0]
		for _, s := range live {
			e := bt.at(s)
			if h[e.pos] != s {
				t.Fatalf("step %d: slot %d records pos %d holding %d", step, s, e.pos, h[e.pos])
			}
			if b := bt.at(best); e.end < b.end || (e.end == b.end && s < best) {
				t.Fatalf("step %d: root %d (end %d) but slot %d has end %d", step, best, b.end, s, e.end)
			}
		}
	}
}

// TestEntryFields guards addAt's field-by-field copy of a record: a
// field added to entry must be copied there too.
func TestEntryFields(t *testing.T) {
	want := []string{"id", "amount", "start", "end", "res", "pos"}
	var got []string
	for f := range reflect.TypeFor[entry]().Fields() {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entry has fields %v; addAt copies %v: copy the new ones", got, want)
	}
	var bt bookTable
	e := entry{id: "x", amount: 2, start: 3, end: 4, res: 5, pos: 6}
	if s := bt.add(e); *bt.at(s) != e {
		t.Fatalf("stored %+v, want %+v", *bt.at(s), e)
	}
}

// checkIndex verifies the index: every cell in use names a live record
// and holds the low half of its ID's hash, no two cells name one slot,
// as many cells are in use as bookings are live, and every cell lies in
// the probe run of its home cell (no empty cell between them).
func (t *bookTable) checkIndex() error {
	mask := uint64(len(t.index) - 1)
	seen := map[uint32]bool{}
	for i, c := range t.index {
		if c == 0 {
			continue
		}
		s := cellSlot(c)
		if s >= t.hw || t.at(s).id == "" {
			return fmt.Errorf("cell %d names slot %d, which is not live", i, s)
		}
		if seen[s] {
			return fmt.Errorf("cell %d names slot %d a second time", i, s)
		}
		seen[s] = true
		if want := hashID(t.at(s).id) & (1<<32 - 1); cellHash(c) != want {
			return fmt.Errorf("cell %d holds hash %#x for %q, want %#x", i, cellHash(c), t.at(s).id, want)
		}
		for j := cellHash(c) & mask; j != uint64(i); j = (j + 1) & mask {
			if t.index[j] == 0 {
				return fmt.Errorf("cell %d (%q) is past an empty cell %d of its probe run", i, t.at(s).id, j)
			}
		}
	}
	if len(seen) != t.n {
		return fmt.Errorf("%d cells in use, %d bookings live", len(seen), t.n)
	}
	return nil
}
