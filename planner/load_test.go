package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// loadBase is a planner with resources, a capacity window and a few
// bookings, advanced past its origin, on which Load and Book must agree.
func loadBase(t *testing.T, f TimelineFactory) *Planner {
	t.Helper()
	p := New(f)
	must(t, p.AddResource("cpu", 16))
	must(t, p.AddResource("gpu", 4))
	must(t, p.AddResource("net", 10))
	must(t, p.SetCapacity("net", 200, 400, 6))
	must(t, p.Book(Booking{ID: "pre-1", Parts: []Part{{"cpu", 3}}, Start: 0, End: 150}))
	must(t, p.Book(Booking{ID: "pre-2", Parts: []Part{{"gpu", 1}, {"net", 2}}, Start: 40, End: 90}))
	p.Advance(50)
	return p
}

// loadTarget is the planner a load goes into: a fresh one with the
// resources alone (a restore's), or loadBase's.
func loadTarget(t *testing.T, f TimelineFactory, fresh bool) *Planner {
	t.Helper()
	if !fresh {
		return loadBase(t, f)
	}
	p := New(f)
	for _, name := range []string{"cpu", "gpu", "net"} {
		must(t, p.AddResource(name, 1<<40))
	}
	p.Advance(50)
	return p
}

// randomBookings books random rectangles on p one by one and returns the
// ones that fitted, in order.
func randomBookings(t *testing.T, p *Planner, r *rand.Rand, n int) []Booking {
	t.Helper()
	names := []string{"cpu", "gpu", "net"}
	var kept []Booking
	for i := range n {
		var parts []Part
		for j, name := range names {
			if r.IntN(3) == 0 || (j == 2 && len(parts) == 0) {
				parts = append(parts, Part{name, 1 + r.Int64N(4)})
			}
		}
		start := p.Origin() + r.Int64N(600)
		b := Booking{ID: fmt.Sprintf("b%04d", r.IntN(4*n)), Parts: parts, Start: start, End: start + 1 + r.Int64N(120)}
		if i%17 == 0 {
			b.End = MaxTime
		}
		if p.Book(b) == nil {
			kept = append(kept, b)
		}
	}
	return kept
}

// samePlanner fails unless a and b hold the same bookings and timelines.
func samePlanner(t *testing.T, what string, a, b *Planner) {
	t.Helper()
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatalf("%s: snapshots differ\n got  %+v\n want %+v", what, b.Snapshot(), a.Snapshot())
	}
	for _, name := range a.names {
		wa, _ := a.Availability(name, a.Origin(), MaxTime)
		wb, err := b.Availability(name, b.Origin(), MaxTime)
		if err != nil || !slices.Equal(wa, wb) {
			t.Fatalf("%s: %s free blocks\n got  %v (%v)\n want %v", what, name, wb, err, wa)
		}
		if it, ok := b.resources[name].tl.(*IndexedTimeline); ok {
			if err := it.checkInvariants(); err != nil {
				t.Fatalf("%s: %s: %v", what, name, err)
			}
		}
		if a.resources[name].refs != b.resources[name].refs {
			t.Fatalf("%s: %s refs %d, want %d", what, name, b.resources[name].refs, a.resources[name].refs)
		}
	}
}

// TestLoadEqualsBook checks that Load of bookings that fitted one by one
// gives the planner that booking them one by one gave, on every timeline
// (the plain one takes the fallback path), and that both planners then go
// on to make the same decisions, forget the same bookings as time passes
// and release the same capacity.
func TestLoadEqualsBook(t *testing.T) {
	for _, fac := range factories {
		for seed := range uint64(30) {
			t.Run(fmt.Sprintf("%s/seed=%d", fac.name, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 6))
				want := loadBase(t, fac.f)
				bs := randomBookings(t, want, r, 200)
				got := loadBase(t, fac.f)
				if err := got.Load(bs); err != nil {
					t.Fatalf("Load: %v", err)
				}
				samePlanner(t, "after Load", want, got)
				for step := range 60 {
					switch r.IntN(3) {
					case 0:
						req := Request{Parts: []Part{{"cpu", 1 + r.Int64N(8)}}, Duration: 1 + r.Int64N(80), NotBefore: want.Origin(), Deadline: MaxTime}
						id := fmt.Sprintf("r%d", step)
						dw, ew := want.Reserve(id, req)
						dg, eg := got.Reserve(id, req)
						if dw != dg || (ew == nil) != (eg == nil) {
							t.Fatalf("step %d: Reserve %+v %v, want %+v %v", step, dg, eg, dw, ew)
						}
					case 1:
						if len(bs) > 0 {
							id := bs[r.IntN(len(bs))].ID
							bw, ew := want.Release(id)
							bg, eg := got.Release(id)
							if !reflect.DeepEqual(bw, bg) || (ew == nil) != (eg == nil) {
								t.Fatalf("step %d: Release %+v %v, want %+v %v", step, bg, eg, bw, ew)
							}
						}
					case 2:
						now := want.Origin() + r.Int64N(40)
						want.Advance(now)
						got.Advance(now)
					}
					samePlanner(t, fmt.Sprintf("step %d", step), want, got)
				}
			})
		}
	}
}

// TestLoadRefusesAndChangesNothing checks each refusal: the error wraps
// the right sentinel and the planner is as it was, so a good Load still
// succeeds afterwards.
func TestLoadRefusesAndChangesNothing(t *testing.T) {
	ok := []Booking{
		{ID: "a", Parts: []Part{{"cpu", 10}}, Start: 60, End: 100},
		{ID: "b", Parts: []Part{{"gpu", 3}, {"cpu", 3}}, Start: 80, End: 120},
	}
	cases := []struct {
		name string
		add  []Booking
		want error
	}{
		{"duplicate in batch", []Booking{ok[0]}, ErrDuplicateID},
		{"duplicate of live", []Booking{{ID: "pre-1", Parts: []Part{{"cpu", 1}}, Start: 60, End: 70}}, ErrDuplicateID},
		{"empty id", []Booking{{Parts: []Part{{"cpu", 1}}, Start: 60, End: 70}}, ErrInvalid},
		{"unknown resource", []Booking{{ID: "x", Parts: []Part{{"tape", 1}}, Start: 60, End: 70}}, ErrUnknownResource},
		{"ended", []Booking{{ID: "x", Parts: []Part{{"cpu", 1}}, Start: 10, End: 50}}, ErrInvalid},
		{"over capacity", []Booking{{ID: "x", Parts: []Part{{"cpu", 17}}, Start: 60, End: 70}}, ErrInvalid},
		{"overbooked", []Booking{{ID: "x", Parts: []Part{{"cpu", 1}}, Start: 95, End: 96}}, ErrNoCapacity},
		{"overbooked with pre-origin start", []Booking{{ID: "x", Parts: []Part{{"net", 9}}, Start: 0, End: 60}}, ErrNoCapacity},
		{"overbooked window", []Booking{{ID: "x", Parts: []Part{{"net", 7}}, Start: 300, End: MaxTime}}, ErrNoCapacity},
	}
	for _, fac := range factories {
		for _, tc := range cases {
			t.Run(fac.name+"/"+tc.name, func(t *testing.T) {
				p := loadBase(t, fac.f)
				want := loadBase(t, fac.f)
				err := p.Load(append(slices.Clone(ok), tc.add...))
				if !errors.Is(err, tc.want) {
					t.Fatalf("Load: %v, want %v", err, tc.want)
				}
				samePlanner(t, "after refusal", want, p)
				if err := p.Load(ok); err != nil {
					t.Fatalf("Load after refusal: %v", err)
				}
				for _, b := range ok {
					must(t, want.Book(b))
				}
				samePlanner(t, "after good Load", want, p)
			})
		}
	}
}

// TestLoadTableAsAdd checks that Load leaves the booking table as a
// lookup followed by an add of each ID does: the same slots holding the
// same bookings, the same index cells in use, and every ID found in its
// slot (which booking sits in which cell of a probe run may differ:
// nothing the table answers or iterates depends on it). With a repeated
// ID, on a fresh planner (the restore's) or one in use, Load names the
// first repeat in order, as the adds find it, and changes nothing.
func TestLoadTableAsAdd(t *testing.T) {
	for _, f := range []TimelineFactory{NewList, NewIndexed} {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 7))
			bs := randomBookings(t, loadBase(t, f), r, 400)
			fresh := seed%2 == 0
			base := func() *Planner { return loadTarget(t, f, fresh) }
			got := base()
			if err := got.Load(bs); err != nil {
				t.Fatalf("seed %d: Load: %v", seed, err)
			}
			want := base()
			want.bookings.grow(len(bs))
			for _, b := range bs {
				if want.bookings.has(b.ID) {
					t.Fatalf("seed %d: %q duplicated", seed, b.ID)
				}
				want.bookings.add(newEntry(b.ID, nil, b.Start, b.End))
			}
			if got.bookings.hw != want.bookings.hw || got.bookings.len() != want.bookings.len() {
				t.Fatalf("seed %d: hw %d, %d live; want %d, %d", seed, got.bookings.hw, got.bookings.len(), want.bookings.hw, want.bookings.len())
			}
			if !slices.EqualFunc(got.bookings.index, want.bookings.index, func(a, b uint64) bool { return (a == 0) == (b == 0) }) {
				t.Fatalf("seed %d: the index cells in use differ from lookup-then-add", seed)
			}
			for s := range want.bookings.hw {
				id := want.bookings.at(s).id
				if g := got.bookings.at(s).id; g != id {
					t.Fatalf("seed %d: slot %d holds %q, want %q", seed, s, g, id)
				}
				if slot, ok := got.bookings.find(id); !ok || slot != s {
					t.Fatalf("seed %d: %q found in slot %d (%v), want %d", seed, id, slot, ok, s)
				}
			}
			// The same IDs with repeats: the first repeat in order is
			// named, and nothing changes.
			dups := slices.Clone(bs)
			for range 1 + r.IntN(3) {
				if len(dups) > 1 {
					i, k := r.IntN(len(dups)), r.IntN(len(dups))
					dups[i].ID = dups[k].ID
				}
			}
			wantErr := ""
			seen := map[string]bool{}
			if !fresh {
				seen["pre-1"], seen["pre-2"] = true, true
			}
			for i, b := range dups {
				if seen[b.ID] {
					wantErr = fmt.Sprintf("load bookings[%d] %q: %v", i, b.ID, ErrDuplicateID)
					break
				}
				seen[b.ID] = true
			}
			p := base()
			err := p.Load(dups)
			if fmt.Sprint(err) != wantErr && !(err == nil && wantErr == "") {
				t.Fatalf("seed %d: Load with repeats: %v, want %s", seed, err, wantErr)
			}
			if err != nil {
				samePlanner(t, fmt.Sprintf("seed %d: after a refused Load", seed), base(), p)
				if p.bookings.len() != base().bookings.len() {
					t.Fatalf("seed %d: %d bookings after a refused Load", seed, p.bookings.len())
				}
			}
		}
	}
}

// BenchmarkLoad measures Load of a million single-part bookings spread
// over 10,000 resources into an empty planner, the planner's share of a
// 1M node's restore (the fsm hands it the bookings of a snapshot).
// ns/op is per whole load; ns/booking divides it.
func BenchmarkLoad(b *testing.B) {
	const n, nres = 1_000_000, 10_000
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, nres)
	for r := range names {
		names[r] = fmt.Sprint("res", r)
	}
	bs := make([]Booking, n)
	for i := range bs {
		s := rng.Int64N(n * 100)
		bs[i] = Booking{ID: fmt.Sprint("r", i), Parts: []Part{{Resource: names[i%nres], Amount: 1}}, Start: s, End: s + 1 + rng.Int64N(5000)}
	}
	for b.Loop() {
		b.StopTimer()
		p := New(NewIndexed)
		for _, name := range names {
			if err := p.AddResource(name, 1<<40); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := p.Load(bs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/booking")
}
