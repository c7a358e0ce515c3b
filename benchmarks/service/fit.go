package service

import (
	"fmt"
	"slices"
)

// Interval is an amount booked over [Start, End) in milliseconds.
type Interval struct {
	Start, End, Amount int64
}

// peak returns the largest total amount booked at any instant of [from, to).
func peak(bs []Interval, from, to int64) int64 {
	type ev struct{ at, d int64 }
	var evs []ev
	for _, b := range bs {
		if b.End <= from || b.Start >= to {
			continue
		}
		evs = append(evs, ev{max(b.Start, from), b.Amount}, ev{min(b.End, to), -b.Amount})
	}
	// Ends sort before starts at the same instant: [s, e) intervals.
	slices.SortFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		if a.d < b.d {
			return -1
		}
		if a.d > b.d {
			return 1
		}
		return 0
	})
	var cur, top int64
	for _, e := range evs {
		cur += e.d
		top = max(top, cur)
	}
	return top
}

// EarliestFit returns the earliest start s with notBefore <= s and
// s+dur <= deadline at which amount more units fit under capacity next to
// the bookings bs. The earliest fit is either notBefore or the end of some
// booking, so only those candidates are tried.
func EarliestFit(bs []Interval, capacity, amount, dur, notBefore, deadline int64) (int64, bool) {
	if amount > capacity || dur <= 0 || notBefore+dur > deadline {
		return 0, false
	}
	cands := []int64{notBefore}
	for _, b := range bs {
		if b.End > notBefore && b.End+dur <= deadline {
			cands = append(cands, b.End)
		}
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	for _, s := range cands {
		if peak(bs, s, s+dur)+amount <= capacity {
			return s, true
		}
	}
	return 0, false
}

// Overbooked checks that bs never exceed capacity at any instant and
// describes the first instant where they do.
func Overbooked(bs []Interval, capacity int64) error {
	if len(bs) == 0 {
		return nil
	}
	lo, hi := bs[0].Start, bs[0].End
	for _, b := range bs {
		lo, hi = min(lo, b.Start), max(hi, b.End)
	}
	if p := peak(bs, lo, hi); p > capacity {
		return fmt.Errorf("overbooked: peak %d > capacity %d", p, capacity)
	}
	return nil
}
