package planner

import (
	"fmt"
	"strconv"
	"testing"
)

// BenchmarkAdvanceBook is the planner's share of one fsm write in a
// cluster with many resources: the log time moves by one (Advance), then
// one booking of 100 time units lands 1000 ahead on the next resource in
// turn. Every resource starts with a few bookings, and the stream runs
// for a while before timing, so that in the timed loop bookings keep
// ending and Advance has timelines to trim.
func BenchmarkAdvanceBook(b *testing.B) {
	for _, nres := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("res=%d", nres), func(b *testing.B) {
			p := New(NewIndexed)
			names := make([]string, nres)
			for i := range names {
				names[i] = "r" + strconv.Itoa(i)
				if err := p.AddResource(names[i], 1<<40); err != nil {
					b.Fatal(err)
				}
				for k := range int64(4) {
					s := int64(i%97) + 300*k
					if err := p.Book(Booking{ID: fmt.Sprintf("pre-%d-%d", i, k), Parts: []Part{{names[i], 1}}, Start: s, End: s + 50}); err != nil {
						b.Fatal(err)
					}
				}
			}
			now, i := int64(0), 0
			step := func() {
				now++
				p.Advance(now)
				s := now + 1_000
				if err := p.Book(Booking{ID: "b" + strconv.Itoa(i), Parts: []Part{{names[i%nres], 1}}, Start: s, End: s + 100}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			for range 1_500 {
				step()
			}
			for b.Loop() {
				step()
			}
		})
	}
}
