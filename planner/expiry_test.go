package planner

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestExpirySetModel drives the expiry set with random adds, removes,
// changes of end, loads and advances, and checks after every step its
// invariants against the booking table, and that each advance forgets
// exactly the bookings a sorted list of every live booking says are due,
// in (end, slot) order.
func TestExpirySetModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var bt bookTable
			var x expirySet
			live := map[string]uint32{}
			now := int64(0)
			// Ends spread over a window ahead of now, wider for some
			// seeds so that the horizon falls inside and outside it.
			spread := int64(20 + 400*(seed%3))
			for step := range 6000 {
				switch op := rng.IntN(20); {
				case op == 0:
					// A load: many added unordered, then settled.
					for k := range rng.IntN(40) {
						id := "l" + strconv.Itoa(step) + "-" + strconv.Itoa(k)
						s := bt.add(entry{id: id, end: now + 1 + rng.Int64N(spread)})
						x.addUnordered(&bt, s)
						live[id] = s
					}
					x.settle(&bt, now)
				case op <= 2:
					// An advance: forget what is due, as Planner.Advance.
					now += rng.Int64N(spread / 4)
					want := dueModel(&bt, live, now)
					var got []uint32
					for {
						s, ok := x.due(&bt, now)
						if !ok {
							break
						}
						got = append(got, s)
						x.remove(&bt, s)
						delete(live, bt.at(s).id)
						bt.remove(s)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: advance to %d forgot %v, want %v", step, now, got, want)
					}
				default:
					id := "e" + strconv.Itoa(rng.IntN(300))
					s, ok := live[id]
					switch {
					case !ok:
						s = bt.add(entry{id: id, end: now + 1 + rng.Int64N(spread)})
						x.add(&bt, s)
						live[id] = s
					case rng.IntN(2) == 0:
						x.remove(&bt, s)
						bt.remove(s)
						delete(live, id)
					default:
						bt.at(s).end = now + 1 + rng.Int64N(spread)
						x.rekeyed(&bt, s)
					}
				}
				checkExpirySet(t, step, &bt, &x, live, now)
			}
		})
	}
}

// dueModel returns what an advance to now must forget: the live bookings
// that end at or before now, by (end, slot).
func dueModel(bt *bookTable, live map[string]uint32, now int64) []uint32 {
	var due []uint32
	for _, s := range live {
		if bt.at(s).end <= now {
			due = append(due, s)
		}
	}
	slices.SortFunc(due, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(bt.at(a).end, bt.at(b).end), cmp.Compare(a, b))
	})
	return due
}

// checkExpirySet checks the expiry set's invariants: it holds exactly the
// live slots; each record's pos names its place; far copies ends
// faithfully and ends at or after the horizon; near is a heap by (end,
// slot); nothing live is due at now (the caller just advanced or did
// not move now).
func checkExpirySet(t *testing.T, step int, bt *bookTable, x *expirySet, live map[string]uint32, now int64) {
	t.Helper()
	if x.len() != len(live) {
		t.Fatalf("step %d: set holds %d, want %d", step, x.len(), len(live))
	}
	for id, s := range live {
		e := bt.at(s)
		if e.end <= now {
			t.Fatalf("step %d: %s ends at %d, due at %d but not forgotten", step, id, e.end, now)
		}
		if e.pos&farBit != 0 {
			i := int(e.pos &^ farBit)
			if i >= len(x.far) || x.far[i].slot != s {
				t.Fatalf("step %d: %s (slot %d) records far index %d", step, id, s, i)
			}
			if x.far[i].end != e.end {
				t.Fatalf("step %d: %s: far copies end %d, record says %d", step, id, x.far[i].end, e.end)
			}
			if e.end < x.horizon {
				t.Fatalf("step %d: %s in far ends at %d, before the horizon %d", step, id, e.end, x.horizon)
			}
			continue
		}
		if i := int(e.pos); i >= len(x.near) || x.near[i] != s {
			t.Fatalf("step %d: %s (slot %d) records heap position %d", step, id, s, i)
		}
	}
	key := func(s uint32) (int64, uint32) { return bt.at(s).end, s }
	for i := 1; i < len(x.near); i++ {
		pe, ps := key(x.near[(i-1)/2])
		ce, cs := key(x.near[i])
		if c := cmp.Or(cmp.Compare(ce, pe), cmp.Compare(cs, ps)); c < 0 {
			t.Fatalf("step %d: heap position %d (end %d) sorts before its parent (end %d)", step, i, ce, pe)
		}
	}
}
