package planner

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

func TestListBookSplitMerge(t *testing.T) {
	l := NewList(8, 0)
	if err := l.Book(10, 20, 3); err != nil {
		t.Fatal(err)
	}
	want := []Block{{0, 10, 8}, {10, 20, 5}, {20, MaxTime, 8}}
	if got := l.Blocks(0, MaxTime); !slices.Equal(got, want) {
		t.Fatalf("after book: %v, want %v", got, want)
	}
	if err := l.Book(20, 30, 3); err != nil {
		t.Fatal(err)
	}
	want = []Block{{0, 10, 8}, {10, 30, 5}, {30, MaxTime, 8}}
	if got := l.Blocks(0, MaxTime); !slices.Equal(got, want) {
		t.Fatalf("after adjacent book: %v, want %v", got, want)
	}
	if err := l.Book(0, 40, 6); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("overbook: err %v", err)
	}
	if s, ok := l.Earliest(6, 10, 0, 100); !ok || s != 0 {
		t.Fatalf("earliest = %d,%v want 30", s, ok)
	}
	if s, ok := l.Earliest(6, 5, 0, 100); !ok || s != 0 {
		t.Fatalf("earliest = %d,%v want 0", s, ok)
	}
	if s, ok := l.Earliest(6, 11, 0, 100); !ok || s != 30 {
		t.Fatalf("earliest = %d,%v want 30", s, ok)
	}
	if err := l.Release(10, 30, 3); err != nil {
		t.Fatal(err)
	}
	want = []Block{{0, MaxTime, 8}}
	if got := l.Blocks(0, MaxTime); !slices.Equal(got, want) {
		t.Fatalf("after release: %v, want %v", got, want)
	}
	l.Book(5, 15, 8)
	l.Advance(10)
	want = []Block{{10, 15, 0}, {15, MaxTime, 8}}
	if got := l.Blocks(0, MaxTime); !slices.Equal(got, want) {
		t.Fatalf("after advance: %v, want %v", got, want)
	}
}

func TestPlannerCoAllocation(t *testing.T) {
	p := New(NewList)
	p.AddResource("cpu", 8)
	p.AddResource("gpu", 2)
	must(t, p.Book(Booking{ID: "a", Parts: []Part{{"cpu", 8}}, Start: 0, End: 10}))
	must(t, p.Book(Booking{ID: "b", Parts: []Part{{"gpu", 2}}, Start: 10, End: 20}))
	d, err := p.Find(Request{Parts: []Part{{"cpu", 4}, {"gpu", 1}}, Duration: 5, NotBefore: 0, Deadline: MaxTime})
	if err != nil || !d.Fits || d.Start != 20 {
		t.Fatalf("find = %+v, %v; want start 20", d, err)
	}
	d, err = p.Find(Request{Parts: []Part{{"cpu", 4}, {"gpu", 1}}, Duration: 5, NotBefore: 0, Deadline: 20})
	if err != nil || d.Fits || !d.LaterOK || d.LaterStart != 20 {
		t.Fatalf("find = %+v, %v; want later 20", d, err)
	}
	offers, err := p.Offers(Request{Parts: []Part{{"cpu", 4}}, Duration: 5, NotBefore: 0, Deadline: MaxTime}, 3)
	if err != nil || !slices.Equal(offers, []int64{10}) {
		t.Fatalf("offers = %v, %v", offers, err)
	}
	err = p.SetCapacity("cpu", 5, 15, 4)
	var ce *CapacityConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Violated, []string{"a"}) {
		t.Fatalf("set capacity: %v", err)
	}
	must(t, p.Modify("a", []Part{{"cpu", 2}, {"gpu", 1}}, 0, 10))
	if err := p.Modify("a", []Part{{"gpu", 1}}, 12, 14); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("modify: %v", err)
	}
	b, _ := p.Get("a")
	if b.Start != 0 || len(b.Parts) != 2 {
		t.Fatalf("get: %+v", b)
	}
	p.Advance(10)
	if p.Len() != 1 {
		t.Fatalf("len = %d", p.Len())
	}
	u, err := p.Usage("cpu", 10, 20)
	if err != nil || u.CapacityArea != 80 || u.BookedArea != 0 {
		t.Fatalf("usage %+v %v", u, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// faultyTimeline fails exactly one of its Book or Release calls (when the
// shared countdown reaches zero), to check that the Planner never
// half-applies a change.
type faultyTimeline struct {
	Timeline
	budget *int
}

func (f faultyTimeline) spend() error {
	*f.budget--
	if *f.budget == -1 {
		return errors.New("injected timeline failure")
	}
	return nil
}

func (f faultyTimeline) Book(start, end, amount int64) error {
	if err := f.spend(); err != nil {
		return err
	}
	return f.Timeline.Book(start, end, amount)
}

func (f faultyTimeline) Release(start, end, amount int64) error {
	if err := f.spend(); err != nil {
		return err
	}
	return f.Timeline.Release(start, end, amount)
}

// TestNoHalfApply makes each timeline call of an operation fail in turn
// and checks that the failing operation leaves the whole state untouched.
func TestNoHalfApply(t *testing.T) {
	ops := []struct {
		name string
		run  func(p *Planner) error
	}{
		{"book", func(p *Planner) error {
			return p.Book(Booking{ID: "n", Parts: []Part{{"cpu", 1}, {"gpu", 1}, {"net", 1}}, Start: 40, End: 50})
		}},
		{"reserve", func(p *Planner) error {
			_, err := p.Reserve("n", Request{Parts: []Part{{"net", 1}, {"cpu", 1}, {"gpu", 1}}, Duration: 5, NotBefore: 0, Deadline: MaxTime})
			return err
		}},
		{"release", func(p *Planner) error { _, err := p.Release("m"); return err }},
		{"modify", func(p *Planner) error {
			return p.Modify("m", []Part{{"gpu", 2}, {"net", 3}, {"cpu", 1}}, 60, 70)
		}},
		{"raise capacity", func(p *Planner) error { return p.SetCapacity("cpu", 0, 100, 12) }},
		{"lower capacity", func(p *Planner) error { return p.SetCapacity("cpu", 0, 100, 6) }},
	}
	for _, o := range ops {
		for fail := 0; ; fail++ {
			budget := 1 << 30
			p := New(func(c, origin int64) Timeline { return faultyTimeline{NewList(c, origin), &budget} })
			must(t, p.AddResource("cpu", 8))
			must(t, p.AddResource("gpu", 2))
			must(t, p.AddResource("net", 10))
			must(t, p.Book(Booking{ID: "m", Parts: []Part{{"cpu", 2}, {"gpu", 1}, {"net", 4}}, Start: 10, End: 30}))
			must(t, p.SetCapacity("cpu", 20, 25, 4))
			before := stateOf(p)
			budget = fail
			err := o.run(p)
			budget = 1 << 30
			if err == nil {
				if fail == 0 {
					t.Fatalf("%s: no timeline call made", o.name)
				}
				break // the budget covered every call
			}
			if got := stateOf(p); !reflect.DeepEqual(got, before) {
				t.Fatalf("%s failing at call %d (%v): state changed\n got  %+v\n want %+v", o.name, fail, err, got, before)
			}
			if cerr := checkConsistent(p); cerr != nil {
				t.Fatalf("%s failing at call %d: %v", o.name, fail, cerr)
			}
		}
	}
}

// TestExpiryCompaction churns bookings without advancing, so stale expiry
// entries pile up, and checks that they are compacted and that Advance
// still forgets exactly the finished bookings.
func TestExpiryCompaction(t *testing.T) {
	for _, f := range factories {
		p := New(f.f)
		must(t, p.AddResource("cpu", 4))
		for i := range 1000 {
			id := "x" + strconv.Itoa(i%10)
			if _, ok := p.Get(id); ok {
				if i%3 == 0 {
					must(t, p.Modify(id, []Part{{"cpu", 1}}, int64(i), int64(i+5)))
				} else if _, err := p.Release(id); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := p.Get(id); !ok {
				must(t, p.Book(Booking{ID: id, Parts: []Part{{"cpu", 1}}, Start: int64(i), End: int64(i + 3)}))
			}
		}
		if p.expiry.len() > 2*p.Len()+64 {
			t.Fatalf("%s: %d expiry entries for %d bookings", f.name, p.expiry.len(), p.Len())
		}
		live := map[string]int64{}
		for i := range 10 {
			if b, ok := p.Get("x" + strconv.Itoa(i)); ok {
				live[b.ID] = b.End
			}
		}
		for now := int64(990); now <= 1010; now++ {
			p.Advance(now)
			for id, end := range live {
				if _, ok := p.Get(id); ok != (end > now) {
					t.Fatalf("%s: at %d booking %s (end %d) present=%v", f.name, now, id, end, ok)
				}
			}
		}
		if p.Len() != 0 || p.expiry.len() != 0 {
			t.Fatalf("%s: %d bookings, %d expiry entries left", f.name, p.Len(), p.expiry.len())
		}
	}
}

func TestUsageFormulas(t *testing.T) {
	u := Usage{CapacityArea: 100, BookedArea: 25, FreeArea: 75, LargestFreeBlock: 30}
	if got := u.Utilization(); got != 0.25 {
		t.Errorf("utilization %v", got)
	}
	if got := u.Fragmentation(); got != 0.6 {
		t.Errorf("fragmentation %v", got)
	}
	if (Usage{}).Utilization() != 0 || (Usage{}).Fragmentation() != 0 {
		t.Error("empty usage must report 0")
	}
	if _, ok := mulAdd(MaxTime, 1, 1); ok {
		t.Error("mulAdd overflow not detected")
	}
	if _, ok := mulAdd(0, 1<<32, 1<<31); ok {
		t.Error("mulAdd product overflow not detected")
	}
	if v, ok := mulAdd(5, 3, 4); !ok || v != 17 {
		t.Errorf("mulAdd = %d %v", v, ok)
	}
}

func TestRestoreRejectsBadSnapshots(t *testing.T) {
	good := func() Snapshot {
		p := New(NewList)
		must(t, p.AddResource("cpu", 8))
		must(t, p.AddResource("gpu", 2))
		must(t, p.Book(Booking{ID: "a", Parts: []Part{{"cpu", 8}}, Start: 0, End: 10}))
		must(t, p.SetCapacity("gpu", 5, 20, 1))
		p.Advance(5)
		return p.Snapshot()
	}
	if _, err := Restore(NewList, good()); err != nil {
		t.Fatalf("good snapshot: %v", err)
	}
	cases := []struct {
		name string
		edit func(s *Snapshot)
		want error
	}{
		{"origin", func(s *Snapshot) { s.Origin = -1 }, ErrInvalid},
		{"unsorted", func(s *Snapshot) { s.Resources[0], s.Resources[1] = s.Resources[1], s.Resources[0] }, ErrInvalid},
		{"gap in profile", func(s *Snapshot) { s.Resources[1].Capacity[0].End-- }, ErrInvalid},
		{"short profile", func(s *Snapshot) { s.Resources[0].Capacity = s.Resources[0].Capacity[:0] }, ErrInvalid},
		{"amount above capacity", func(s *Snapshot) { s.Resources[0].Capacity[0].Free = 4 }, ErrInvalid},
		{"overbooked", func(s *Snapshot) {
			s.Resources[0].Capacity = []Block{{5, 10, 7}, {10, MaxTime, 8}}
		}, ErrNoCapacity},
		{"duplicate", func(s *Snapshot) { s.Bookings = append(s.Bookings, s.Bookings[0]) }, ErrDuplicateID},
		{"unknown resource", func(s *Snapshot) { s.Bookings[0].Parts = []Part{{"tape", 1}} }, ErrUnknownResource},
		{"ended", func(s *Snapshot) { s.Bookings[0].End = 5 }, ErrInvalid},
		{"too much", func(s *Snapshot) {
			s.Bookings = append(s.Bookings, Booking{ID: "b", Parts: []Part{{"cpu", 1}}, Start: 6, End: 7})
		}, ErrNoCapacity},
	}
	for _, c := range cases {
		s := good()
		c.edit(&s)
		if _, err := Restore(NewList, s); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

// TestResolveAfterResourceChurn checks that a validation resolves a name
// to the resource that holds it now, not to the one an earlier
// validation resolved (the Planner remembers the last one): after the
// resource is removed, the name is unknown; after it is added again with
// another capacity, requests see the new one; other names still resolve.
func TestResolveAfterResourceChurn(t *testing.T) {
	for _, impl := range []struct {
		name string
		f    TimelineFactory
	}{{"list", NewList}, {"indexed", NewIndexed}} {
		t.Run(impl.name, func(t *testing.T) {
			p := New(impl.f)
			for _, r := range []struct {
				name string
				c    int64
			}{{"cpu", 8}, {"gpu", 2}} {
				if err := p.AddResource(r.name, r.c); err != nil {
					t.Fatal(err)
				}
			}
			req := func(res string, amount int64) Request {
				return Request{Parts: []Part{{res, amount}}, Duration: 10, NotBefore: 0, Deadline: 100}
			}
			if d, err := p.Find(req("cpu", 8)); err != nil || !d.Fits || d.Start != 0 {
				t.Fatalf("find cpu 8: %+v, %v", d, err)
			}
			if err := p.RemoveResource("cpu"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Find(req("cpu", 1)); !errors.Is(err, ErrUnknownResource) {
				t.Fatalf("find on removed cpu: err %v, want ErrUnknownResource", err)
			}
			if err := p.Book(Booking{ID: "x", Parts: []Part{{"cpu", 1}}, Start: 0, End: 10}); !errors.Is(err, ErrUnknownResource) {
				t.Fatalf("book on removed cpu: err %v, want ErrUnknownResource", err)
			}
			if err := p.AddResource("cpu", 4); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Find(req("cpu", 8)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("find cpu 8 on capacity 4: err %v, want ErrInvalid", err)
			}
			if err := p.Book(Booking{ID: "x", Parts: []Part{{"cpu", 4}}, Start: 0, End: 10}); err != nil {
				t.Fatal(err)
			}
			if d, err := p.Find(req("gpu", 2)); err != nil || !d.Fits || d.Start != 0 {
				t.Fatalf("find gpu 2: %+v, %v", d, err)
			}
			if d, err := p.Find(req("cpu", 1)); err != nil || !d.Fits || d.Start != 10 {
				t.Fatalf("find cpu 1 after booking x: %+v, %v", d, err)
			}
		})
	}
}
