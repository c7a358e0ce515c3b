package planner

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

// Fuzz targets for each public entry point of the Planner: arbitrary
// int64s and strings must give either an error (and leave the state
// exactly as it was) or a valid result (and a consistent state). No input
// may panic. Every target runs on every timeline factory.

// plannerState is everything observable about a Planner.
type plannerState struct {
	Origin    int64
	Len       int
	Resources []ResourceInfo
	Free      map[string][]Block
	Capacity  map[string][]Block
	Bookings  []Booking
}

func stateOf(p *Planner) plannerState {
	s := plannerState{
		Origin:    p.Origin(),
		Len:       p.Len(),
		Resources: p.Resources(),
		Free:      map[string][]Block{},
		Capacity:  map[string][]Block{},
	}
	for _, ri := range s.Resources {
		r := p.resources[ri.Name]
		s.Free[ri.Name] = r.tl.Blocks(p.Origin(), MaxTime)
		s.Capacity[ri.Name] = r.capacity.Blocks(p.Origin(), MaxTime)
	}
	ids := make([]string, 0, p.Len())
	for id := range p.bookings.ids() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b, _ := p.Get(id)
		s.Bookings = append(s.Bookings, b)
	}
	return s
}

// checkConsistent verifies, for every resource, the canonical form and
// free = capacity - sum of the live bookings at every instant where
// anything changes.
func checkConsistent(p *Planner) error {
	st := stateOf(p)
	if st.Len != len(st.Bookings) {
		return fmt.Errorf("Len %d but %d bookings", st.Len, len(st.Bookings))
	}
	at := func(bs []Block, t int64) int64 {
		for _, b := range bs {
			if b.Start <= t && t < b.End {
				return b.Free
			}
		}
		return math.MinInt64
	}
	for _, ri := range st.Resources {
		free, capacity := st.Free[ri.Name], st.Capacity[ri.Name]
		if err := checkCanonical(free, st.Origin); err != nil {
			return fmt.Errorf("%s: %w", ri.Name, err)
		}
		pts := []int64{st.Origin}
		for _, b := range free {
			pts = append(pts, b.Start)
		}
		for _, b := range capacity {
			pts = append(pts, b.Start)
		}
		for _, b := range st.Bookings {
			pts = append(pts, max(b.Start, st.Origin))
			if b.End < MaxTime {
				pts = append(pts, b.End)
			}
		}
		for _, t := range pts {
			booked := int64(0)
			for _, b := range st.Bookings {
				if b.Start <= t && t < b.End {
					for _, pt := range b.Parts {
						if pt.Resource == ri.Name {
							booked += pt.Amount
						}
					}
				}
			}
			if f, c := at(free, t), at(capacity, t); f != c-booked {
				return fmt.Errorf("%s at %d: free %d, capacity %d, booked %d", ri.Name, t, f, c, booked)
			}
		}
	}
	return nil
}

// fuzzFixture returns a Planner with a few resources, bookings and
// capacity changes, advanced past 0.
func fuzzFixture(t *testing.T, f TimelineFactory) *Planner {
	p := New(f)
	steps := []error{
		p.AddResource("cpu", 8),
		p.AddResource("gpu", 2),
		p.AddResource("net", 1000),
		p.Book(Booking{ID: "a", Parts: []Part{{"cpu", 4}}, Start: 0, End: 10}),
		p.Book(Booking{ID: "b", Parts: []Part{{"cpu", 2}, {"gpu", 1}}, Start: 5, End: 20}),
		p.Book(Booking{ID: "c", Parts: []Part{{"net", 500}}, Start: 100, End: 200}),
		p.SetCapacity("cpu", 30, 40, 2),
		p.SetCapacity("gpu", 50, MaxTime, 4),
	}
	if _, err := p.Reserve("d", Request{Parts: []Part{{"cpu", 6}, {"gpu", 2}}, Duration: 7, Deadline: MaxTime}); err != nil {
		steps = append(steps, err)
	}
	for _, err := range steps {
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
	}
	p.Advance(3)
	return p
}

// fuzzEach runs fn on a fresh fixture per factory and checks the common
// contract: on error nothing changed; afterwards the state is consistent.
func fuzzEach(t *testing.T, fn func(p *Planner) error) {
	for _, f := range factories {
		p := fuzzFixture(t, f.f)
		before := stateOf(p)
		err := fn(p)
		if err != nil && !reflect.DeepEqual(stateOf(p), before) {
			t.Fatalf("%s: error %v but the state changed", f.name, err)
		}
		if err != nil && errClass(err) == "unclassified: "+err.Error() {
			t.Fatalf("%s: error %v wraps no sentinel", f.name, err)
		}
		if cerr := checkConsistent(p); cerr != nil {
			t.Fatalf("%s: inconsistent after call (err=%v): %v", f.name, err, cerr)
		}
	}
}

func fuzzParts(n uint8, name1 string, amt1 int64, name2 string, amt2 int64) []Part {
	switch n % 3 {
	case 0:
		return nil
	case 1:
		return []Part{{name1, amt1}}
	}
	return []Part{{name1, amt1}, {name2, amt2}}
}

// checkDecision verifies a successful Find/Reserve decision.
func checkDecision(p *Planner, req Request, d Decision, booked bool) error {
	fitsAt := func(s int64) bool {
		for _, pt := range req.Parts {
			need := pt.Amount
			if booked {
				need = 0 // already subtracted
			}
			if p.resources[pt.Resource].tl.MinFree(s, s+req.Duration) < need {
				return false
			}
		}
		return true
	}
	latest := req.Deadline - req.Duration
	if d.Fits {
		if d.Start < req.NotBefore || d.Start > latest || !fitsAt(d.Start) {
			return fmt.Errorf("decision %+v outside window or not feasible", d)
		}
		if !booked && d.Start > req.NotBefore && fitsAt(d.Start-1) {
			// Not a proof of non-minimality in general, but a start one
			// earlier that fits inside the window must have been found.
			return fmt.Errorf("decision %+v: %d also fits", d, d.Start-1)
		}
	}
	if d.LaterOK && (d.Fits || d.LaterStart <= latest || !fitsAt(d.LaterStart)) {
		return fmt.Errorf("later start %+v invalid", d)
	}
	return nil
}

var fuzzNames = []string{"cpu", "gpu", "net", "", "tape", "CPU"}

func addRequestSeeds(f *testing.F) {
	f.Add(uint8(1), "cpu", int64(2), "gpu", int64(1), int64(5), int64(3), MaxTime)
	f.Add(uint8(2), "cpu", int64(6), "gpu", int64(2), int64(5), int64(3), int64(40))
	f.Add(uint8(2), "cpu", int64(1), "cpu", int64(1), int64(1), int64(3), int64(4))
	f.Add(uint8(1), "net", int64(1000), "", int64(0), MaxTime, int64(3), MaxTime)
	f.Add(uint8(1), "gpu", int64(4), "", int64(0), int64(1), MaxTime-1, MaxTime)
	f.Add(uint8(0), "", int64(-1), "x", int64(math.MinInt64), int64(-5), int64(math.MinInt64), int64(-1))
}

func FuzzFind(f *testing.F) {
	addRequestSeeds(f)
	f.Fuzz(func(t *testing.T, n uint8, r1 string, a1 int64, r2 string, a2 int64, dur, nb, dl int64) {
		req := Request{Parts: fuzzParts(n, r1, a1, r2, a2), Duration: dur, NotBefore: nb, Deadline: dl}
		fuzzEach(t, func(p *Planner) error {
			before := stateOf(p)
			d, err := p.Find(req)
			if !reflect.DeepEqual(stateOf(p), before) {
				t.Fatal("Find changed the state")
			}
			if err == nil {
				if cerr := checkDecision(p, req, d, false); cerr != nil {
					t.Fatal(cerr)
				}
			}
			return err
		})
	})
}

func FuzzOffers(f *testing.F) {
	addRequestSeeds(f)
	f.Fuzz(func(t *testing.T, n uint8, r1 string, a1 int64, r2 string, a2 int64, dur, nb, dl int64) {
		req := Request{Parts: fuzzParts(n, r1, a1, r2, a2), Duration: dur, NotBefore: nb, Deadline: dl}
		k := int(n%8) - 1
		fuzzEach(t, func(p *Planner) error {
			before := stateOf(p)
			offers, err := p.Offers(req, k)
			if !reflect.DeepEqual(stateOf(p), before) {
				t.Fatal("Offers changed the state")
			}
			if err != nil {
				return err
			}
			if len(offers) > k || !slices.IsSorted(offers) || len(slices.Compact(slices.Clone(offers))) != len(offers) {
				t.Fatalf("offers %v for k=%d", offers, k)
			}
			for _, s := range offers {
				if err := checkDecision(p, req, Decision{Fits: true, Start: s}, true); err != nil {
					t.Fatalf("offer %d: %v", s, err)
				}
				for _, pt := range req.Parts {
					if p.resources[pt.Resource].tl.MinFree(s, s+req.Duration) < pt.Amount {
						t.Fatalf("offer %d does not fit %v", s, pt)
					}
				}
			}
			if d, _ := p.Find(req); k > 0 && (d.Fits != (len(offers) > 0) || (d.Fits && offers[0] != d.Start)) {
				t.Fatalf("offers %v disagree with Find %+v", offers, d)
			}
			return nil
		})
	})
}

func FuzzReserve(f *testing.F) {
	addRequestSeeds(f)
	f.Fuzz(func(t *testing.T, n uint8, r1 string, a1 int64, r2 string, a2 int64, dur, nb, dl int64) {
		req := Request{Parts: fuzzParts(n, r1, a1, r2, a2), Duration: dur, NotBefore: nb, Deadline: dl}
		id := fuzzNames[int(n)%len(fuzzNames)] + "r"
		if n%7 == 0 {
			id = "a"
		}
		fuzzEach(t, func(p *Planner) error {
			n0 := p.Len()
			d, err := p.Reserve(id, req)
			if err != nil {
				return err
			}
			if err := checkDecision(p, req, d, true); err != nil || !d.Fits {
				t.Fatalf("reserve %+v: %v", d, err)
			}
			b, ok := p.Get(id)
			if !ok || p.Len() != n0+1 || b.Start != d.Start || b.End != d.Start+req.Duration || !slices.Equal(b.Parts, req.Parts) {
				t.Fatalf("reserved %+v, booking %+v %v", d, b, ok)
			}
			return nil
		})
	})
}

func FuzzBookModify(f *testing.F) {
	f.Add(uint8(1), "x", "cpu", int64(2), "gpu", int64(1), int64(10), int64(20))
	f.Add(uint8(2), "a", "cpu", int64(8), "gpu", int64(1), int64(3), int64(10))
	f.Add(uint8(5), "b", "gpu", int64(2), "cpu", int64(1), int64(3), MaxTime)
	f.Add(uint8(4), "", "", int64(0), "", int64(0), int64(math.MinInt64), MaxTime)
	f.Fuzz(func(t *testing.T, n uint8, id, r1 string, a1 int64, r2 string, a2 int64, start, end int64) {
		parts := fuzzParts(n, r1, a1, r2, a2)
		modify := n&4 != 0
		fuzzEach(t, func(p *Planner) error {
			var err error
			if modify {
				err = p.Modify(id, parts, start, end)
			} else {
				err = p.Book(Booking{ID: id, Parts: parts, Start: start, End: end})
			}
			if err != nil {
				return err
			}
			b, ok := p.Get(id)
			if !ok || b.Start != start || b.End != end || !slices.Equal(b.Parts, parts) {
				t.Fatalf("booking after success: %+v %v", b, ok)
			}
			return nil
		})
	})
}

func FuzzSetCapacity(f *testing.F) {
	f.Add("cpu", int64(0), int64(20), int64(1))
	f.Add("cpu", int64(3), MaxTime, int64(100))
	f.Add("gpu", int64(10), int64(11), int64(0))
	f.Add("net", int64(150), int64(151), MaxTime)
	f.Add("", int64(-1), int64(math.MinInt64), int64(-1))
	f.Fuzz(func(t *testing.T, res string, from, to, capacity int64) {
		fuzzEach(t, func(p *Planner) error {
			err := p.SetCapacity(res, from, to, capacity)
			if err != nil {
				return err
			}
			for _, b := range p.resources[res].capacity.Blocks(from, to) {
				if b.Free != capacity {
					t.Fatalf("capacity over [%d,%d) is %+v, want %d", from, to, b, capacity)
				}
			}
			return nil
		})
	})
}

func FuzzResources(f *testing.F) {
	f.Add(uint8(0), "tape", int64(3))
	f.Add(uint8(1), "gpu", int64(0))
	f.Add(uint8(2), "a", int64(0))
	f.Add(uint8(3), "c", MaxTime)
	f.Fuzz(func(t *testing.T, what uint8, name string, v int64) {
		fuzzEach(t, func(p *Planner) error {
			switch what % 4 {
			case 0:
				return p.AddResource(name, v)
			case 1:
				return p.RemoveResource(name)
			case 2:
				b, err := p.Release(name)
				if err == nil && b.ID != name {
					t.Fatalf("released %+v for %q", b, name)
				}
				if _, ok := p.Get(name); ok {
					t.Fatalf("%q still there", name)
				}
				return err
			default:
				old := p.Origin()
				p.Advance(v)
				if want := max(old, min(v, MaxTime-1)); p.Origin() != want {
					t.Fatalf("origin %d after Advance(%d) from %d", p.Origin(), v, old)
				}
				return nil
			}
		})
	})
}

func FuzzReports(f *testing.F) {
	f.Add("cpu", int64(3), int64(50))
	f.Add("net", int64(3), MaxTime)
	f.Add("gpu", MaxTime-1, MaxTime)
	f.Add("", int64(math.MinInt64), int64(0))
	f.Fuzz(func(t *testing.T, res string, from, to int64) {
		fuzzEach(t, func(p *Planner) error {
			before := stateOf(p)
			bs, err1 := p.Availability(res, from, to)
			u, err2 := p.Usage(res, from, to)
			if !reflect.DeepEqual(stateOf(p), before) {
				t.Fatal("a report changed the state")
			}
			if err1 == nil {
				if len(bs) == 0 || bs[0].Start != from || bs[len(bs)-1].End != to {
					t.Fatalf("availability over [%d,%d): %v", from, to, bs)
				}
			}
			if err2 == nil {
				if u.CapacityArea < 0 || u.BookedArea < 0 || u.FreeArea < 0 || u.LargestFreeBlock > u.FreeArea ||
					u.BookedArea+u.FreeArea != u.CapacityArea || u.Utilization() < 0 || u.Utilization() > 1 ||
					u.Fragmentation() < 0 || u.Fragmentation() > 1 {
					t.Fatalf("usage %+v", u)
				}
			}
			if err1 != nil {
				return err1
			}
			return err2
		})
	})
}
