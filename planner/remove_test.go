package planner

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

// TestRemoveMatchesRelease drives two planners with the same seeded
// bookings and takes each booking away from one with Release and from the
// other with Remove: the errors and every resource's free blocks must stay
// identical, for single-part and multi-part bookings, on both timelines.
func TestRemoveMatchesRelease(t *testing.T) {
	for _, impl := range []struct {
		name string
		f    TimelineFactory
	}{{"list", NewList}, {"indexed", NewIndexed}} {
		t.Run(impl.name, func(t *testing.T) {
			rel, rem := New(impl.f), New(impl.f)
			for _, p := range []*Planner{rel, rem} {
				must(t, p.AddResource("cpu", 64))
				must(t, p.AddResource("gpu", 8))
			}
			// 1,200 bookings take the indexed timeline past the short
			// layout into chunks.
			var ids []string
			for i := range 1200 {
				parts := []Part{{"cpu", int64(1 + i%7)}}
				if i%5 == 0 {
					parts = append(parts, Part{"gpu", int64(1 + i%3)})
				}
				b := Booking{ID: "b" + strconv.Itoa(i), Parts: parts, Start: int64(i*3) % 5000, End: int64(i*3)%5000 + int64(1+i%40)}
				for _, p := range []*Planner{rel, rem} {
					if err := p.Book(b); err != nil && !errors.Is(err, ErrNoCapacity) {
						t.Fatalf("book %s: %v", b.ID, err)
					}
				}
				if rel.has(b.ID) {
					ids = append(ids, b.ID)
				}
			}
			if len(ids) < 1000 {
				t.Fatalf("only %d of 1200 bookings fit", len(ids))
			}
			if tl, ok := rel.resources["cpu"].tl.(*IndexedTimeline); ok && tl.rev != nil {
				t.Fatalf("the indexed timeline holds %d blocks in the short layout, want chunks", tl.Len())
			}
			rel.Advance(100)
			rem.Advance(100)
			// Every other booking, in a scrambled order, plus unknown IDs.
			for _, j := range []int{0, 7, 3, len(ids) - 1} {
				ids = append(ids, ids[j]) // a second removal must fail
			}
			ids = append(ids, "missing", "")
			for i := 0; i < len(ids); i += 2 {
				id := ids[(i*7919)%len(ids)]
				_, errRel := rel.Release(id)
				errRem := rem.Remove(id)
				if (errRel == nil) != (errRem == nil) || (errRel != nil && errRel.Error() != errRem.Error()) {
					t.Fatalf("%q: Release error %v, Remove error %v", id, errRel, errRem)
				}
				if errRem != nil && id != "" && !errors.Is(errRem, ErrUnknownBooking) {
					t.Fatalf("%q: Remove error %v does not wrap ErrUnknownBooking", id, errRem)
				}
				if rel.Len() != rem.Len() {
					t.Fatalf("%q: %d bookings after Release, %d after Remove", id, rel.Len(), rem.Len())
				}
			}
			for _, r := range []string{"cpu", "gpu"} {
				a, _ := rel.Availability(r, 100, MaxTime)
				b, _ := rem.Availability(r, 100, MaxTime)
				if !slices.Equal(a, b) {
					t.Fatalf("%s: free blocks differ after Release (%d) and Remove (%d)", r, len(a), len(b))
				}
			}
			// The resources' reference counts agree: removing them is
			// refused or allowed alike.
			for _, r := range []string{"cpu", "gpu"} {
				if (rel.RemoveResource(r) == nil) != (rem.RemoveResource(r) == nil) {
					t.Fatalf("%s: RemoveResource disagrees after Release and Remove", r)
				}
			}
		})
	}
}

// TestRemoveDoesNotAllocate checks the point of Remove: releasing a
// single-part booking through it allocates nothing (Release allocates the
// returned booking's parts).
func TestRemoveDoesNotAllocate(t *testing.T) {
	p := New(NewIndexed)
	must(t, p.AddResource("cpu", 16))
	for i := range 2000 {
		must(t, p.Book(Booking{ID: "f" + strconv.Itoa(i), Parts: []Part{{"cpu", 1 + int64(i%5)}}, Start: int64(i * 2), End: int64(i*2 + 3)}))
	}
	parts := []Part{{"cpu", 4}}
	b := Booking{ID: "x", Parts: parts, Start: 1001, End: 1009}
	allocs := testing.AllocsPerRun(200, func() {
		if err := p.Book(b); err != nil {
			t.Fatal(err)
		}
		if err := p.Remove("x"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Book + Remove allocates %.1f times per run, want 0", allocs)
	}
}
