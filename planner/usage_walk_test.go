package planner

import (
	"fmt"
	"testing"
)

// TestUsageWalksIndexedBlocks: Usage on the indexed timeline, which walks
// its blocks without collecting them, agrees with the list's (which
// collects them) in both layouts of the indexed timeline, over windows
// that cut blocks, and on the area overflow; and it allocates at most once
// (the capacity profile, a short list), however many bookings the window
// holds.
func TestUsageWalksIndexedBlocks(t *testing.T) {
	for _, n := range []int{0, 3, 200, 3000} { // 3000 bookings leave the short layout
		t.Run(fmt.Sprintf("bookings=%d", n), func(t *testing.T) {
			ix, li := New(NewIndexed), New(NewList)
			for _, p := range []*Planner{ix, li} {
				must(t, p.AddResource("cpu", 64))
				for i := range n {
					start := int64(i) * 10
					must(t, p.Book(Booking{ID: fmt.Sprint("b", i), Parts: []Part{{"cpu", int64(1 + i%7)}}, Start: start, End: start + 5 + int64(i%3)}))
				}
				must(t, p.SetCapacity("cpu", 7, 1003, 32))
			}
			for _, w := range [][2]int64{{0, 1}, {3, 17}, {0, int64(n)*10 + 100}, {25, 26_000}, {4, MaxTime / 2}} {
				gi, erri := ix.Usage("cpu", w[0], w[1])
				gl, errl := li.Usage("cpu", w[0], w[1])
				if fmt.Sprint(erri) != fmt.Sprint(errl) || gi != gl {
					t.Fatalf("window %v: indexed %+v, %v; list %+v, %v", w, gi, erri, gl, errl)
				}
			}
			if _, err := ix.Usage("cpu", 0, MaxTime); err == nil {
				t.Fatal("a window whose area overflows int64 was accepted")
			}
			to := int64(n)*10 + 100
			if a := testing.AllocsPerRun(20, func() {
				if _, err := ix.Usage("cpu", 0, to); err != nil {
					t.Fatal(err)
				}
			}); a > 1 {
				t.Fatalf("Usage over %d bookings allocates %v times per call, want at most 1", n, a)
			}
		})
	}
}

// BenchmarkUsageAll is what a metrics scrape asks of the planner: the
// usage of every resource over the whole horizon, here 100 resources
// holding 1,000 bookings each (100k live).
func BenchmarkUsageAll(b *testing.B) {
	p := New(NewIndexed)
	names := make([]string, 100)
	for r := range names {
		names[r] = fmt.Sprint("res-", r)
		if err := p.AddResource(names[r], 64); err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			start := int64(i) * 10
			if err := p.Book(Booking{ID: fmt.Sprint(names[r], "-", i), Parts: []Part{{names[r], 1 + int64(i%5)}}, Start: start, End: start + 7}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			if _, err := p.Usage(n, 0, 1<<40); err != nil {
				b.Fatal(err)
			}
		}
	}
}
