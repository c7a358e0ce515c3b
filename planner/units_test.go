package planner

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func mustUnits(t *testing.T, n int, fit FitRule) *UnitSchedule {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	u, err := NewUnitSchedule(names, 0, UnitConfig{Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustBook(t *testing.T, u *UnitSchedule, id string, start, end int64, movable bool, units ...string) {
	t.Helper()
	if err := u.Book(UnitBooking{ID: id, Start: start, End: end, Units: units, Movable: movable}); err != nil {
		t.Fatal(err)
	}
}

// The hard case of the issue: capacity 2; A on unit 1 at [0,1), B on unit
// 2 at [2,3); C wants one unit for [0,3). The count fits (at most one unit
// is busy at any instant) but no unit is free for the whole window.
func TestUnitsHardCase(t *testing.T) {
	exact := UnitRequest{Amount: 1, Duration: 3, NotBefore: 0, Deadline: 3, Movable: true}
	for _, tc := range []struct {
		name    string
		movable bool // A and B
		policy  UnitPolicy
		fits    bool
		units   []string
		remaps  []Remap
		later   int64
	}{
		{name: "refuse", movable: true, policy: UnitRefuse, later: 1},
		// A is running (start 0 <= origin 0) and stays; B moves to n1
		// and C gets n2.
		{name: "remap movable", movable: true, policy: UnitRemap, fits: true, units: []string{"n2"},
			remaps: []Remap{{ID: "B", From: []string{"n2"}, To: []string{"n1"}}}},
		{name: "remap pinned", movable: false, policy: UnitRemap, later: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := mustUnits(t, 2, FitBest)
			mustBook(t, u, "A", 0, 1, tc.movable, "n1")
			mustBook(t, u, "B", 2, 3, tc.movable, "n2")
			u.Advance(0)
			d, err := u.Reserve("C", exact, tc.policy)
			if !tc.fits {
				if !errors.Is(err, ErrUnmappable) {
					t.Fatalf("err = %v, want ErrUnmappable", err)
				}
				if d.Fits || !d.CountFits || d.CountStart != 0 || !d.LaterOK || d.LaterStart != tc.later {
					t.Fatalf("decision = %+v", d)
				}
				if err := checkUnits(u); err != nil {
					t.Fatal(err)
				}
				if u.Len() != 2 {
					t.Fatalf("refusal changed the schedule: %d bookings", u.Len())
				}
				t.Logf("reason: %v", err)
				return
			}
			if err != nil || !d.Fits || d.Start != 0 || !slices.Equal(d.Units, tc.units) {
				t.Fatalf("decision = %+v, %v", d, err)
			}
			if fmt.Sprint(d.Remaps) != fmt.Sprint(tc.remaps) {
				t.Fatalf("remaps = %+v, want %+v", d.Remaps, tc.remaps)
			}
			if b, _ := u.Get("B"); !slices.Equal(b.Units, []string{"n1"}) {
				t.Fatalf("B after the move: %+v", b)
			}
			if err := checkUnits(u); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestUnitsFitRules(t *testing.T) {
	// n1 holds a over [0,5), n2 holds b over [0,2), n3 holds c over
	// [6,9), n4 is empty. Best fit takes the free unit whose idle hole
	// around the window is smallest (n3's hole [0,6) before c), lowest
	// index the first free unit.
	for _, tc := range []struct {
		fit   FitRule
		req   UnitRequest
		start int64
		units []string
	}{
		{FitLowest, UnitRequest{Amount: 1, Duration: 1, NotBefore: 5, Deadline: MaxTime}, 5, []string{"n1"}},
		{FitBest, UnitRequest{Amount: 1, Duration: 1, NotBefore: 5, Deadline: MaxTime}, 5, []string{"n3"}},
		{FitLowest, UnitRequest{Amount: 1, Duration: 1, NotBefore: 2, Deadline: 3}, 2, []string{"n2"}},
		{FitBest, UnitRequest{Amount: 1, Duration: 1, NotBefore: 2, Deadline: 3}, 2, []string{"n3"}},
		{FitBest, UnitRequest{Amount: 3, Duration: 1, NotBefore: 0, Deadline: MaxTime}, 2, []string{"n2", "n3", "n4"}},
		{FitLowest, UnitRequest{Amount: 4, Duration: 2, NotBefore: 0, Deadline: MaxTime}, 9, []string{"n1", "n2", "n3", "n4"}},
	} {
		u := mustUnits(t, 4, tc.fit)
		mustBook(t, u, "a", 0, 5, true, "n1")
		mustBook(t, u, "b", 0, 2, true, "n2")
		mustBook(t, u, "c", 6, 9, true, "n3")
		d, err := u.Find(tc.req, UnitRefuse)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Fits || d.Start != tc.start || !slices.Equal(d.Units, tc.units) {
			t.Errorf("%v %+v: start %d units %v, want %d %v", tc.fit, tc.req, d.Start, d.Units, tc.start, tc.units)
		}
	}
}
