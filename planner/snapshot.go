package planner

import (
	"fmt"
	"slices"
	"strings"
)

// Snapshot is a complete, canonical copy of a Planner's state: two
// Planners with equal state give equal Snapshots (resources sorted by
// name, bookings by ID, capacity profiles in canonical form), so a
// snapshot can be encoded byte for byte identically on every replica.
type Snapshot struct {
	Origin    int64
	Resources []ResourceSnapshot
	Bookings  []Booking
}

// ResourceSnapshot is one resource: its base capacity and its capacity
// profile from the origin on (the canonical blocks of total capacity,
// which reflect every SetCapacity still in effect).
type ResourceSnapshot struct {
	Name     string
	Base     int64
	Capacity []Block
}

// Snapshot returns a copy of the planner's state. The free timelines are
// not part of it: they are derived from the capacity profiles and the
// bookings.
func (p *Planner) Snapshot() Snapshot {
	s := Snapshot{Origin: p.origin}
	for _, n := range p.names {
		r := p.resources[n]
		s.Resources = append(s.Resources, ResourceSnapshot{
			Name: n, Base: r.base, Capacity: r.capacity.Blocks(p.origin, MaxTime),
		})
	}
	s.Bookings = make([]Booking, 0, p.bookings.len())
	for slot := range p.bookings.hw {
		if e := p.bookings.at(slot); e.id != "" {
			s.Bookings = append(s.Bookings, p.booking(*e))
		}
	}
	slices.SortFunc(s.Bookings, func(a, b Booking) int { return strings.Compare(a.ID, b.ID) })
	return s
}

// Restore builds a Planner with timelines made by f from a snapshot. It
// checks the snapshot as it goes (names, capacity profiles covering
// [Origin, MaxTime), valid bookings that fit) and returns an error
// wrapping ErrInvalid, ErrUnknownResource, ErrDuplicateID or ErrNoCapacity
// for a snapshot no Planner could have produced. Bookings may have started
// before the origin; only their part from the origin on is booked.
func Restore(f TimelineFactory, s Snapshot) (*Planner, error) {
	if s.Origin < 0 || s.Origin >= MaxTime {
		return nil, &FieldError{Field: "origin", Reason: "must be in [0, MaxTime)"}
	}
	p := New(f)
	p.origin = s.Origin
	*p.clock = s.Origin
	for i, rs := range s.Resources {
		if i > 0 && s.Resources[i-1].Name >= rs.Name {
			return nil, &FieldError{Field: fmt.Sprintf("resources[%d].name", i), Reason: "resources must be sorted and unique"}
		}
		if err := p.AddResource(rs.Name, rs.Base); err != nil {
			return nil, fmt.Errorf("restore resources[%d]: %w", i, err)
		}
		if err := checkProfile(rs.Capacity, s.Origin); err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("resources[%d].capacity", i), Reason: err.Error()}
		}
		for _, b := range rs.Capacity {
			if err := p.SetCapacity(rs.Name, b.Start, b.End, b.Free); err != nil {
				return nil, fmt.Errorf("restore resources[%d].capacity: %w", i, err)
			}
		}
	}
	if err := p.Load(s.Bookings); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return p, nil
}

// checkProfile verifies that blocks tile [origin, MaxTime) with
// non-negative capacities.
func checkProfile(blocks []Block, origin int64) error {
	at := origin
	for _, b := range blocks {
		if b.Start != at || b.End <= b.Start || b.Free < 0 {
			return fmt.Errorf("block %+v does not continue the profile at %d", b, at)
		}
		at = b.End
	}
	if at != MaxTime {
		return fmt.Errorf("profile ends at %d, not MaxTime", at)
	}
	return nil
}
