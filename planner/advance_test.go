package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAdvanceTrimsDueResources drives many resources through capacity
// windows, bookings, releases, bulk loads and small Advance steps, and
// after every step checks, per resource, what a resource left untrimmed
// would get wrong: the largest capacity that admission checks against
// (a capacity window that has ended no longer counts), and the number of
// blocks the free timeline and the capacity profile keep (nothing before
// the origin is kept).
func TestAdvanceTrimsDueResources(t *testing.T) {
	for _, fc := range factories {
		t.Run(fc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			p := New(fc.f)
			const nres = 24
			for i := range nres {
				if err := p.AddResource("r"+strconv.Itoa(i), 4); err != nil {
					t.Fatal(err)
				}
			}
			var ids []string
			for step := range 3000 {
				name := "r" + strconv.Itoa(rng.IntN(nres))
				o := p.Origin()
				switch op := rng.IntN(10); {
				case op < 2:
					from := o + rng.Int64N(40)
					_ = p.SetCapacity(name, from, from+1+rng.Int64N(30), rng.Int64N(20))
				case op < 6:
					s := o + rng.Int64N(40)
					id := "b" + strconv.Itoa(step)
					if p.Book(Booking{ID: id, Parts: []Part{{name, 1 + rng.Int64N(3)}}, Start: s, End: s + 1 + rng.Int64N(20)}) == nil {
						ids = append(ids, id)
					}
				case op == 6 && rng.IntN(2) == 0:
					// Two parts: a failing second part rolls the first
					// back (touchParts after both writes).
					s := o + rng.Int64N(40)
					id := "m" + strconv.Itoa(step)
					other := "r" + strconv.Itoa(rng.IntN(nres))
					if other != name && p.Book(Booking{ID: id, Parts: []Part{{name, 1 + rng.Int64N(3)}, {other, 1 + rng.Int64N(4)}}, Start: s, End: s + 1 + rng.Int64N(20)}) == nil {
						ids = append(ids, id)
					}
				case op < 7 && len(ids) > 0:
					k := rng.IntN(len(ids))
					_, _ = p.Release(ids[k])
					ids = append(ids[:k], ids[k+1:]...)
				case op < 8:
					s := o + rng.Int64N(40)
					id := "l" + strconv.Itoa(step)
					if p.Load([]Booking{{ID: id, Parts: []Part{{name, 1}}, Start: s, End: s + 1 + rng.Int64N(20)}}) == nil {
						ids = append(ids, id)
					}
				default:
					p.Advance(o + rng.Int64N(6))
				}
				if err := checkTrimmed(p); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
		})
	}
}

// checkTrimmed compares every resource of p with what a fully trimmed
// resource would hold.
func checkTrimmed(p *Planner) error {
	o := p.Origin()
	for _, ri := range p.Resources() {
		r := p.resources[ri.Name]
		caps := r.capacity.Blocks(o, MaxTime)
		want := int64(0)
		for _, b := range caps {
			want = max(want, b.Free)
		}
		if r.maxCap != want {
			return fmt.Errorf("%s: maxCap %d, want %d (profile %v)", ri.Name, r.maxCap, want, caps)
		}
		// Admission sees the same bound.
		_, err := p.Find(Request{Parts: []Part{{ri.Name, want + 1}}, Duration: 1, NotBefore: o, Deadline: MaxTime})
		if !errors.Is(err, ErrInvalid) {
			return fmt.Errorf("%s: amount %d above capacity %d accepted: %v", ri.Name, want+1, want, err)
		}
		if n := len(caps); r.capacity.Len() != n {
			return fmt.Errorf("%s: capacity profile keeps %d blocks, %d from the origin on", ri.Name, r.capacity.Len(), n)
		}
		if n := len(r.tl.Blocks(o, MaxTime)); r.tl.Len() != n {
			return fmt.Errorf("%s: free timeline keeps %d blocks, %d from the origin on", ri.Name, r.tl.Len(), n)
		}
		if r.tl.Origin() != o || r.capacity.Origin() != o {
			return fmt.Errorf("%s: origins %d, %d, want %d", ri.Name, r.tl.Origin(), r.capacity.Origin(), o)
		}
		if r.key <= o {
			return fmt.Errorf("%s: trim key %d not after the origin %d", ri.Name, r.key, o)
		}
		// The key is current: writes that skip re-keying (touchAt) must
		// leave it what a re-key would give.
		if k := p.trimKey(r); r.key != k {
			return fmt.Errorf("%s: trim key %d, re-keyed %d", ri.Name, r.key, k)
		}
	}
	return nil
}

// TestAdvanceSkipsUndueResources checks that Advance leaves alone the
// resources with nothing to trim: their trimmed origin stays where it was
// while the one whose capacity window ended is trimmed.
func TestAdvanceSkipsUndueResources(t *testing.T) {
	p := New(NewList)
	for _, n := range []string{"a", "b", "c"} {
		if err := p.AddResource(n, 4); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SetCapacity("b", 0, 10, 9); err != nil {
		t.Fatal(err)
	}
	p.Advance(5)
	for n, want := range map[string]int64{"a": 0, "b": 0, "c": 0} {
		if got := p.resources[n].capacity.origin; got != want {
			t.Errorf("after Advance(5): %s trimmed to %d, want %d", n, got, want)
		}
	}
	p.Advance(10)
	for n, want := range map[string]int64{"a": 0, "b": 10, "c": 0} {
		if got := p.resources[n].capacity.origin; got != want {
			t.Errorf("after Advance(10): %s trimmed to %d, want %d", n, got, want)
		}
	}
	if got := p.resources["b"].maxCap; got != 4 {
		t.Errorf("b maxCap %d after its window ended, want 4", got)
	}
}
