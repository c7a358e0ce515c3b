package planner

import (
	"fmt"
	"slices"
	"strings"
)

// Per-unit windows: a unit that is down or drained over [From, To) is a
// record on that unit's schedule (and one unit less in the global sum),
// never a silent edit of the unit list.

// AddDown takes unit out of service over [from, to) under id. Bookings on
// the unit that overlap the window are the affected ones. Under UnitRefuse
// any affected booking makes it fail with a *UnitConflictError listing
// them. Under UnitRemap the affected bookings are moved to spare units
// when they are all movable and a mapping exists (moving other movable
// bookings too if needed); the moves are returned, sorted by ID, for the
// caller to log. A window that overlaps another down window of the unit
// is refused (the error lists that window). On error nothing changes.
func (u *UnitSchedule) AddDown(d UnitDown, policy UnitPolicy) ([]Remap, error) {
	if d.ID == "" {
		return nil, &FieldError{Field: "id", Reason: "must not be empty"}
	}
	if _, ok := u.downs[d.ID]; ok {
		return nil, fmt.Errorf("down window %q: %w", d.ID, ErrDuplicateID)
	}
	if policy != UnitRefuse && policy != UnitRemap {
		return nil, &FieldError{Field: "policy", Reason: fmt.Sprintf("unknown unit policy %d", policy)}
	}
	if d.From < u.origin {
		return nil, &FieldError{Field: "from", Reason: fmt.Sprintf("must be >= origin %d", u.origin)}
	}
	r, err := u.checkRecord(d.ID, d.From, d.To, []string{d.Unit})
	if err != nil {
		if fe, ok := err.(*FieldError); ok && fe.Field == "units[0]" {
			fe.Field = "unit"
		}
		return nil, err
	}
	r.down = true
	l := &u.lines[r.units[0]]
	var affected, downs []string
	var movable = true
	l.each(r.start, r.end, func(sp span) {
		o := sp.r
		if o.down {
			downs = append(downs, o.id)
			return
		}
		affected = append(affected, o.id)
		if u.pinned(o) {
			movable = false
		}
	})
	if len(affected) == 0 && len(downs) == 0 {
		u.insertRec(r)
		u.downs[d.ID] = r
		return nil, nil
	}
	slices.Sort(affected)
	conflict := &UnitConflictError{Unit: d.Unit, Bookings: affected, Downs: downs}
	if policy == UnitRefuse || len(downs) > 0 || !movable {
		return nil, fmt.Errorf("down window %q: %w", d.ID, conflict)
	}
	if u.global.MinFree(r.start, r.end) < 1 {
		return nil, fmt.Errorf("down window %q: no spare unit: %w", d.ID, conflict)
	}
	budget := u.cfg.SearchBudget
	p, ok, ex := u.remapAt(r.start, r.end, 0, r, &budget)
	if !ok {
		if ex {
			return nil, fmt.Errorf("down window %q: re-mapping search ran out of budget: %w", d.ID, conflict)
		}
		return nil, fmt.Errorf("down window %q: the affected bookings cannot all be moved: %w", d.ID, conflict)
	}
	u.applyPlan(p)
	u.insertRec(r)
	u.downs[d.ID] = r
	out := make([]Remap, 0, len(p.moves))
	for _, m := range p.moves {
		out = append(out, Remap{ID: m.r.id, From: m.fromNames, To: u.unitNames(m.to)})
	}
	slices.SortFunc(out, func(a, b Remap) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// RemoveDown returns the unit of down window id to service.
func (u *UnitSchedule) RemoveDown(id string) error {
	r, ok := u.downs[id]
	if !ok {
		return fmt.Errorf("down window %q: %w", id, ErrUnknownBooking)
	}
	u.removeRec(r)
	delete(u.downs, id)
	return nil
}

// Downs lists the down windows still in effect, sorted by ID.
func (u *UnitSchedule) Downs() []UnitDown {
	out := make([]UnitDown, 0, len(u.downs))
	for _, r := range u.downs {
		out = append(out, UnitDown{ID: r.id, Unit: u.names[r.units[0]], From: r.start, To: r.end})
	}
	slices.SortFunc(out, func(a, b UnitDown) int { return strings.Compare(a.ID, b.ID) })
	return out
}
