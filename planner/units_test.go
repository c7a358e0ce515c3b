package planner

import (
	"errors"
	"fmt"
	"reflect"
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

// TestUnitsSearchBudget: a re-mapping search that spends its budget stops
// trying candidate starts and says so; with the default budget the same
// request gets the same (move-free) start without the flag.
func TestUnitsSearchBudget(t *testing.T) {
	for _, tc := range []struct {
		budget    int
		exhausted bool
	}{{0, false}, {3, true}} {
		names := []string{"n1", "n2"}
		u, err := NewUnitSchedule(names, 0, UnitConfig{SearchBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		mustBook(t, u, "A", 0, 1, false, "n1") // running
		mustBook(t, u, "M", 1, 2, true, "n2")  // movable
		mustBook(t, u, "P", 2, 3, false, "n2") // materialized
		mustBook(t, u, "Q", 3, 4, false, "n1") // materialized
		d, err := u.Reserve("C", UnitRequest{Amount: 1, Duration: 3, NotBefore: 0, Deadline: MaxTime}, UnitRemap)
		if err != nil || d.Start != 3 || d.Exhausted != tc.exhausted || len(d.Remaps) != 0 {
			t.Errorf("budget %d: %+v, %v; want start 3, exhausted %v", tc.budget, d, err, tc.exhausted)
		}
	}
}

// TestUnitsDown: a down window is refused with the affected bookings
// listed, or accepted with them moved to a spare unit; running and
// materialized bookings never move.
func TestUnitsDown(t *testing.T) {
	u := mustUnits(t, 3, FitBest)
	mustBook(t, u, "a", 5, 8, true, "n1")
	mustBook(t, u, "b", 8, 12, true, "n1")
	mustBook(t, u, "p", 12, 15, false, "n1") // materialized
	mustBook(t, u, "c", 0, 20, true, "n2")   // running from the origin on
	mustBook(t, u, "d", 7, 9, true, "n3")
	_, err := u.AddDown(UnitDown{ID: "m1", Unit: "n1", From: 6, To: 9}, UnitRefuse)
	var ce *UnitConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Bookings, []string{"a", "b"}) {
		t.Fatalf("refuse: %v", err)
	}
	// a [5,8) and d [7,9) overlap and only n3 is left for them: refused.
	if _, err := u.AddDown(UnitDown{ID: "m1", Unit: "n1", From: 6, To: 9}, UnitRemap); !errors.As(err, &ce) || !slices.Equal(ce.Bookings, []string{"a", "b"}) {
		t.Fatalf("remap without room: %v", err)
	}
	if _, err := u.Release("d"); err != nil {
		t.Fatal(err)
	}
	rs, err := u.AddDown(UnitDown{ID: "m2", Unit: "n1", From: 6, To: 9}, UnitRemap)
	if err != nil || fmt.Sprint(rs) != "[{a [n1] [n3]} {b [n1] [n3]}]" {
		t.Fatalf("remap: %v %v", rs, err)
	}
	if err := checkUnits(u); err != nil {
		t.Fatal(err)
	}
	// p is materialized: a window over it is refused even with room.
	if _, err := u.AddDown(UnitDown{ID: "m3", Unit: "n1", From: 13, To: 14}, UnitRemap); !errors.As(err, &ce) || !slices.Equal(ce.Bookings, []string{"p"}) {
		t.Fatalf("pinned: %v", err)
	}
	// An overlapping down window on the same unit is refused, naming it.
	if _, err := u.AddDown(UnitDown{ID: "m4", Unit: "n1", From: 7, To: 8}, UnitRemap); !errors.As(err, &ce) || !slices.Equal(ce.Downs, []string{"m2"}) {
		t.Fatalf("overlapping windows: %v", err)
	}
	// Down windows count against admission: nothing is left over [6,8).
	d, err := u.Find(UnitRequest{Amount: 1, Duration: 2, NotBefore: 6, Deadline: 8}, UnitRemap)
	if err != nil || d.Fits || d.CountFits {
		t.Fatalf("admission over a down unit: %+v %v", d, err)
	}
	if err := u.RemoveDown("m2"); err != nil {
		t.Fatal(err)
	}
	if got := u.Downs(); len(got) != 0 {
		t.Fatalf("downs after removal: %v", got)
	}
	if d, err := u.Find(UnitRequest{Amount: 1, Duration: 2, NotBefore: 6, Deadline: 8}, UnitRemap); err != nil || !d.Fits || !slices.Equal(d.Units, []string{"n1"}) {
		t.Fatalf("after the window is gone: %+v %v", d, err)
	}
	// Bad input names the field.
	for _, bad := range []UnitDown{{ID: "", Unit: "n1", From: 1, To: 2}, {ID: "x", Unit: "n9", From: 1, To: 2}, {ID: "x", Unit: "n1", From: 3, To: 2}} {
		var fe *FieldError
		if _, err := u.AddDown(bad, UnitRefuse); !errors.As(err, &fe) {
			t.Errorf("%+v: %v, want a field error", bad, err)
		}
	}
}

// TestUnitsBadInput: every malformed argument is a field error, never a
// panic, and changes nothing.
func TestUnitsBadInput(t *testing.T) {
	if _, err := NewUnitSchedule(nil, 0, UnitConfig{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no units: %v", err)
	}
	if _, err := NewUnitSchedule([]string{"a", "a"}, 0, UnitConfig{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("duplicate units: %v", err)
	}
	if _, err := NewUnitSchedule([]string{"a"}, 0, UnitConfig{Fit: 9}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad fit: %v", err)
	}
	u := mustUnits(t, 2, FitBest)
	u.Advance(10)
	for _, tc := range []struct {
		req    UnitRequest
		policy UnitPolicy
		field  string
	}{
		{UnitRequest{Amount: 0, Duration: 1, NotBefore: 10, Deadline: MaxTime}, UnitRefuse, "amount"},
		{UnitRequest{Amount: 3, Duration: 1, NotBefore: 10, Deadline: MaxTime}, UnitRefuse, "amount"},
		{UnitRequest{Amount: 1, Duration: 0, NotBefore: 10, Deadline: MaxTime}, UnitRefuse, "duration"},
		{UnitRequest{Amount: 1, Duration: 1, NotBefore: 9, Deadline: MaxTime}, UnitRefuse, "not_before"},
		{UnitRequest{Amount: 1, Duration: 5, NotBefore: 10, Deadline: 14}, UnitRefuse, "deadline"},
		{UnitRequest{Amount: 1, Duration: MaxTime, NotBefore: 10, Deadline: MaxTime}, UnitRefuse, "duration"},
		{UnitRequest{Amount: 1, Duration: 1, NotBefore: 10, Deadline: MaxTime}, 0, "policy"},
		{UnitRequest{Amount: 1, Duration: 1, NotBefore: 10, Deadline: -1 << 63}, UnitRemap, "deadline"},
	} {
		var fe *FieldError
		if _, err := u.Reserve("x", tc.req, tc.policy); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want field %s", tc.req, err, tc.field)
		}
	}
	for _, b := range []UnitBooking{
		{ID: "", Start: 10, End: 11, Units: []string{"n1"}},
		{ID: "x", Start: 10, End: 10, Units: []string{"n1"}},
		{ID: "x", Start: 10, End: 11, Units: nil},
		{ID: "x", Start: 10, End: 11, Units: []string{"n1", "n1"}},
		{ID: "x", Start: 10, End: 11, Units: []string{"zz"}},
		{ID: "x", Start: 1, End: 5, Units: []string{"n1"}},
	} {
		if err := u.Book(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", b, err)
		}
	}
	if u.Len() != 0 {
		t.Fatalf("bad input left %d bookings", u.Len())
	}
	if _, err := u.Release("nope"); !errors.Is(err, ErrUnknownBooking) {
		t.Errorf("release unknown: %v", err)
	}
}

// TestUnitsForgetMatchesRelease: Forget leaves a schedule in the state
// Release leaves, and reports what Release's error reports.
func TestUnitsForgetMatchesRelease(t *testing.T) {
	build := func() *UnitSchedule {
		u := mustUnits(t, 3, FitBest)
		mustBook(t, u, "a", 5, 8, true, "n1")
		mustBook(t, u, "b", 8, 12, true, "n1")
		mustBook(t, u, "c", 0, 20, true, "n2")
		return u
	}
	for _, id := range []string{"a", "b", "c", "nope"} {
		r, f := build(), build()
		_, err := r.Release(id)
		if got := f.Forget(id); got != (err == nil) {
			t.Fatalf("Forget(%q) = %v, Release error %v", id, got, err)
		}
		if !reflect.DeepEqual(r.Snapshot(), f.Snapshot()) {
			t.Fatalf("after %q: Forget left %+v, Release %+v", id, f.Snapshot(), r.Snapshot())
		}
		if err := checkUnits(f); err != nil {
			t.Fatalf("after Forget(%q): %v", id, err)
		}
		if f.Forget(id) {
			t.Fatalf("Forget(%q) twice reported it there", id)
		}
	}
}
