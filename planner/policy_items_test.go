package planner

import (
	"errors"
	"reflect"
	"testing"
)

// TestSchedulerDrop drops a running reservation: the rest of its window is
// free again and the waiting variable job moves into it; dropping an
// unknown item changes nothing.
func TestSchedulerDrop(t *testing.T) {
	s := newSched(t, ResourcePolicy{Policy: PolicyMoveVariable})
	if _, err := s.Reserve("r", "u", Part{"cpu", 10}, 0, 20); err != nil {
		t.Fatal(err)
	}
	if start, err := s.Submit("v", "u", Part{"cpu", 4}, 5, 0); err != nil || start != 20 {
		t.Fatalf("submit: start %d, %v; want 20", start, err)
	}
	if at, ok := s.NextEvent(); !ok || at != 0 {
		t.Fatalf("next event %d %v, want 0", at, ok)
	}
	if rep := s.Advance(5); len(rep.Started) != 1 || rep.Started[0] != "r" {
		t.Fatalf("started %v", rep.Started)
	}
	if at, ok := s.NextEvent(); !ok || at != 20 {
		t.Fatalf("next event %d %v, want 20 (end of r, start of v)", at, ok)
	}
	if err := s.Cancel("r"); err == nil {
		t.Fatal("Cancel accepted a running item")
	}
	if err := s.Drop("nope"); !errors.Is(err, ErrUnknownBooking) {
		t.Fatalf("drop unknown: %v", err)
	}
	if s.Len() != 2 {
		t.Fatalf("len %d", s.Len())
	}
	if err := s.Drop("r"); err != nil {
		t.Fatal(err)
	}
	if got := s.Moves(); !reflect.DeepEqual(got, []Move{{ID: "v", From: 20, To: 5}}) {
		t.Fatalf("moves of the drop %v", got)
	}
	if _, ok := s.Get("r"); ok || s.Len() != 1 {
		t.Fatal("r still live")
	}
	if v, _ := s.Get("v"); v.Start != 5 {
		t.Fatalf("v not re-planned into the freed window: start %d, want 5", v.Start)
	}
	if s.Releases.Samples() != 0 {
		t.Fatal("drop recorded a completion")
	}
	if err := checkConsistent(s.p); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop("v"); err != nil {
		t.Fatal(err)
	}
	if got := s.Moves(); len(got) != 0 {
		t.Fatalf("moves of a drop that moved nothing %v", got)
	}
	if _, ok := s.NextEvent(); ok || s.p.Len() != 0 {
		t.Fatalf("empty scheduler has work or bookings (%d)", s.p.Len())
	}
}
