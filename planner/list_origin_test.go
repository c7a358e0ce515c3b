package planner

import "testing"

// TestEarliestNegativeOrigin pins a case where subtracting the candidate
// start from an open-ended block's end overflowed: every exact timeline
// must find the fit at a negative origin.
func TestEarliestNegativeOrigin(t *testing.T) {
	for name, f := range map[string]TimelineFactory{"list": NewList, "indexed": NewIndexed} {
		tl := f(10, -5)
		got, ok := tl.Earliest(3, 7, -5, MaxTime-7)
		if !ok || got != -5 {
			t.Errorf("%s: Earliest = (%d, %v), want (-5, true)", name, got, ok)
		}
	}
}
