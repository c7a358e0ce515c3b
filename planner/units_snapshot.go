package planner

import (
	"fmt"
	"slices"
	"strings"
)

// UnitSnapshot is the whole state of a UnitSchedule as plain values:
// the units in index order, the origin, the live bookings with their
// units and flags, and the down windows, both sorted by ID. Two schedules
// with equal state give equal snapshots, so a snapshot encodes byte for
// byte identically on every replica.
//
// The per-unit schedules and the global timeline are not part of it:
// RestoreUnitSchedule rebuilds them from the bookings and down windows
// (which the ledger stores anyway) and checks that they are consistent.
type UnitSnapshot struct {
	Origin   int64
	Units    []string
	Bookings []UnitBooking
	Downs    []UnitDown
}

// Snapshot returns a copy of the schedule's state.
func (u *UnitSchedule) Snapshot() UnitSnapshot {
	s := UnitSnapshot{Origin: u.origin, Units: slices.Clone(u.names), Downs: u.Downs()}
	s.Bookings = make([]UnitBooking, 0, len(u.books))
	for id := range u.books {
		b, _ := u.Get(id)
		s.Bookings = append(s.Bookings, b)
	}
	slices.SortFunc(s.Bookings, func(a, b UnitBooking) int { return strings.Compare(a.ID, b.ID) })
	return s
}

// RestoreUnitSchedule rebuilds a schedule from a snapshot. It checks the
// snapshot as it goes (unit names, windows, known and distinct units, no
// unit held twice at once) and returns an error wrapping ErrInvalid,
// ErrDuplicateID or ErrNoCapacity for a snapshot no schedule could have
// produced. Bookings may have started before the origin.
func RestoreUnitSchedule(s UnitSnapshot, cfg UnitConfig) (*UnitSchedule, error) {
	u, err := NewUnitSchedule(s.Units, s.Origin, cfg)
	if err != nil {
		return nil, fmt.Errorf("restore units: %w", err)
	}
	for i, d := range s.Downs {
		r, err := u.checkRecord(d.ID, d.From, d.To, []string{d.Unit})
		if err != nil {
			return nil, fmt.Errorf("restore units: downs[%d]: %w", i, err)
		}
		if d.ID == "" {
			return nil, fmt.Errorf("restore units: downs[%d]: %w", i, &FieldError{Field: "id", Reason: "must not be empty"})
		}
		if _, dup := u.downs[d.ID]; dup {
			return nil, fmt.Errorf("restore units: downs[%d] %q: %w", i, d.ID, ErrDuplicateID)
		}
		if !u.lines[r.units[0]].free(r.start, r.end) {
			return nil, fmt.Errorf("restore units: downs[%d] %q: unit %q not free: %w", i, d.ID, d.Unit, ErrNoCapacity)
		}
		r.down = true
		u.insertRec(r)
		u.downs[d.ID] = r
	}
	for i, b := range s.Bookings {
		if err := u.Book(b); err != nil {
			return nil, fmt.Errorf("restore units: bookings[%d]: %w", i, err)
		}
	}
	return u, nil
}
