package planner

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// splitBatches cuts bs into n batches at random points (some empty).
func splitBatches(r *rand.Rand, bs []Booking, n int) [][]Booking {
	cuts := make([]int, n-1)
	for i := range cuts {
		cuts[i] = r.IntN(len(bs) + 1)
	}
	slices.Sort(cuts)
	out := make([][]Booking, 0, n)
	from := 0
	for _, c := range cuts {
		out = append(out, bs[from:c])
		from = c
	}
	return append(out, bs[from:])
}

// stagedLoad loads batches into p through a StagedLoad, resolving the
// batches and running the stages as run orders them ("order", "reverse"
// or "concurrent": each on a goroutine of its own).
func stagedLoad(p *Planner, batches [][]Booking, run string) error {
	l := p.NewStagedLoad(len(batches))
	together := func(fs []func()) {
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Go(f)
		}
		wg.Wait()
	}
	var resolves []func()
	for k, bs := range batches {
		resolves = append(resolves, func() { l.Resolve(k, bs) })
	}
	stages := func() []func() { return l.Stages() }
	switch run {
	case "order":
		for _, f := range resolves {
			f()
		}
		for _, f := range stages() {
			f()
		}
	case "reverse":
		for _, f := range slices.Backward(resolves) {
			f()
		}
		for _, f := range slices.Backward(stages()) {
			f()
		}
	case "concurrent":
		together(resolves)
		together(stages())
	default:
		panic(run)
	}
	return l.Finish()
}

// sameTable fails unless a and b store the same bookings in the same
// slots, with the same expiry set and multi-part lists (Load's slots
// are part of the outcome a staged load must give).
func sameTable(t *testing.T, what string, a, b *Planner) {
	t.Helper()
	if a.bookings.hw != b.bookings.hw || a.bookings.n != b.bookings.n {
		t.Fatalf("%s: %d slots, %d bookings; want %d, %d", what, b.bookings.hw, b.bookings.n, a.bookings.hw, a.bookings.n)
	}
	for s := range a.bookings.hw {
		if ea, eb := *a.bookings.at(s), *b.bookings.at(s); ea != eb {
			t.Fatalf("%s: slot %d holds %+v, want %+v", what, s, eb, ea)
		}
	}
	if ea, eb := a.expiry, b.expiry; ea.horizon != eb.horizon || !slices.Equal(ea.near, eb.near) || !slices.Equal(ea.far, eb.far) {
		t.Fatalf("%s: expiry set %+v, want %+v", what, eb, ea)
	}
	if !reflect.DeepEqual(a.multi, b.multi) {
		t.Fatalf("%s: multi-part bookings differ", what)
	}
}

// TestStagedLoadEqualsLoad checks that a staged load, whatever the
// batches and however its stages run (in order, reversed, at the same
// time: under -race the last shows that they touch disjoint state),
// leaves the planner Load leaves: the same table, timelines and counts.
func TestStagedLoadEqualsLoad(t *testing.T) {
	for _, fac := range factories {
		for seed := range uint64(24) {
			r := rand.New(rand.NewPCG(seed, 11))
			bs := randomBookings(t, loadBase(t, fac.f), r, 300)
			// Every other seed loads into a fresh planner (a restore's).
			base := func() *Planner { return loadTarget(t, fac.f, seed%2 == 1) }
			want := base()
			if err := want.Load(bs); err != nil {
				t.Fatalf("seed %d: Load: %v", seed, err)
			}
			for _, run := range []string{"order", "reverse", "concurrent"} {
				what := fmt.Sprintf("%s/seed=%d/%s", fac.name, seed, run)
				got := base()
				if err := stagedLoad(got, splitBatches(r, bs, 1+r.IntN(6)), run); err != nil {
					t.Fatalf("%s: staged load: %v", what, err)
				}
				samePlanner(t, what, want, got)
				sameTable(t, what, want, got)
			}
		}
	}
}

// TestStagedLoadErrors checks that a staged load reports the error Load
// reports, word for word (the index is the booking's in the whole load,
// whichever batch holds it), and that it reports the first one in Load's
// order when there are several.
func TestStagedLoadErrors(t *testing.T) {
	ok := []Booking{
		{ID: "a", Parts: []Part{{"cpu", 10}}, Start: 60, End: 100},
		{ID: "b", Parts: []Part{{"gpu", 3}, {"cpu", 3}}, Start: 80, End: 120},
		{ID: "c", Parts: []Part{{"net", 1}}, Start: 70, End: 90},
	}
	over := Booking{ID: "x", Parts: []Part{{"cpu", 1}}, Start: 95, End: 96}
	overNet := Booking{ID: "y", Parts: []Part{{"net", 7}}, Start: 300, End: MaxTime}
	cases := []struct {
		name string
		add  []Booking
	}{
		{"duplicate in batch", []Booking{ok[0]}},
		{"duplicate of live", []Booking{{ID: "pre-1", Parts: []Part{{"cpu", 1}}, Start: 60, End: 70}}},
		{"empty id", []Booking{{Parts: []Part{{"cpu", 1}}, Start: 60, End: 70}}},
		{"unknown resource", []Booking{{ID: "x", Parts: []Part{{"tape", 1}}, Start: 60, End: 70}}},
		{"duplicate resource", []Booking{{ID: "x", Parts: []Part{{"cpu", 1}, {"cpu", 2}}, Start: 60, End: 70}}},
		{"ended", []Booking{{ID: "x", Parts: []Part{{"cpu", 1}}, Start: 10, End: 50}}},
		{"over capacity", []Booking{{ID: "x", Parts: []Part{{"cpu", 17}}, Start: 60, End: 70}}},
		{"overbooked", []Booking{over}},
		{"overbooked window", []Booking{overNet}},
		{"two overbooked: first by name", []Booking{overNet, over}},
		{"overbooked and duplicate", []Booking{over, ok[1]}},
		{"duplicate and invalid", []Booking{ok[1], {ID: "z", Parts: []Part{{"cpu", 0}}, Start: 60, End: 70}}},
	}
	r := rand.New(rand.NewPCG(3, 5))
	for _, fac := range factories {
		for _, tc := range cases {
			bs := append(slices.Clone(ok), tc.add...)
			want := loadBase(t, fac.f).Load(bs)
			if want == nil {
				t.Fatalf("%s/%s: Load accepted", fac.name, tc.name)
			}
			for _, run := range []string{"order", "reverse", "concurrent"} {
				for range 4 {
					got := stagedLoad(loadBase(t, fac.f), splitBatches(r, bs, 1+r.IntN(4)), run)
					if got == nil || got.Error() != want.Error() {
						t.Fatalf("%s/%s/%s: staged load: %v, want %v", fac.name, tc.name, run, got, want)
					}
				}
			}
		}
	}
}

// TestStagedLoadNothing checks the empty load: no stages, no error, no
// change.
func TestStagedLoadNothing(t *testing.T) {
	p := loadBase(t, NewIndexed)
	l := p.NewStagedLoad(3)
	for k := range 3 {
		l.Resolve(k, nil)
	}
	if st := l.Stages(); len(st) != 0 {
		t.Fatalf("%d stages for no bookings", len(st))
	}
	if err := l.Finish(); err != nil {
		t.Fatal(err)
	}
	samePlanner(t, "empty staged load", loadBase(t, NewIndexed), p)
}
