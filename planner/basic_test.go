package planner

import (
	"errors"
	"slices"
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
