package planner

import "fmt"

// Completion reports an early end of a booking: the duration that was
// booked and the duration actually used. Callers record the pair (the
// relaxed admission policy learns its release-time distribution from it).
type Completion struct {
	ID        string
	Start     int64
	Requested int64 // booked end - start
	Actual    int64 // at - start
}

// Complete ends the booking id at instant at, which must lie inside the
// booking (start <= at < end) and not before the origin: the capacity over
// [at, end) is given back and the booking's end becomes at (at == start or
// at == origin removes the booking, since nothing of it is then left ahead
// of the origin). Nothing changes on error.
func (p *Planner) Complete(id string, at int64) (Completion, error) {
	if id == "" {
		return Completion{}, &FieldError{Field: "id", Reason: "must not be empty"}
	}
	slot, ok := p.bookings.find(id)
	if !ok {
		return Completion{}, fmt.Errorf("complete %q: %w", id, ErrUnknownBooking)
	}
	e := *p.bookings.at(slot)
	if at < p.origin {
		return Completion{}, &FieldError{Field: "at", Reason: fmt.Sprintf("must be >= origin %d", p.origin)}
	}
	if at < e.start || at >= e.end {
		return Completion{}, &FieldError{Field: "at", Reason: fmt.Sprintf("must lie in the booking [%d,%d)", e.start, e.end)}
	}
	c := Completion{ID: id, Start: e.start, Requested: e.end - e.start, Actual: at - e.start}
	parts := p.partsOf(e)
	if err := p.releaseParts(parts, at, e.end); err != nil {
		return Completion{}, fmt.Errorf("complete %q: %w", id, err)
	}
	if at == e.start || at == p.origin {
		// Nothing of the booking is left ahead of the origin.
		p.forget(slot)
		return c, nil
	}
	p.bookings.at(slot).end = at
	p.expiry.rekeyed(&p.bookings, slot)
	return c, nil
}
