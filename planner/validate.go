package planner

import "fmt"

// Argument validation. Checks run in a fixed order so that one bad input
// always yields the same error:
//
//	id → parts (per part: resource, then amount) → duration / start →
//	not_before / end → deadline
//
// and domain checks (duplicate or unknown booking id, capacity) come after
// the field they concern.

// checkNewID validates the ID of a booking about to be created.
func (p *Planner) checkNewID(id string) error {
	_, err := p.checkNewIDCell(id)
	return err
}

// checkNewIDCell is checkNewID that also returns where the booking table
// would index id, for a store that follows with no other change of the
// table in between (see bookTable.probe).
func (p *Planner) checkNewIDCell(id string) (cellRef, error) {
	if id == "" {
		return cellRef{}, &FieldError{Field: "id", Reason: "must not be empty"}
	}
	_, ref, ok := p.bookings.probe(id, hashID(id))
	if ok {
		return cellRef{}, fmt.Errorf("booking %q: %w", id, ErrDuplicateID)
	}
	return ref, nil
}

// partsBuf is the usual room for resolved parts: an admission names one
// resource, a co-allocation a few. The callers on the admission path keep
// one on their stack and resolve into it, so that validating a request
// does not allocate.
type partsBuf [4]resPart

// checkParts resolves and validates the parts of a request or booking
// into a new slice.
func (p *Planner) checkParts(parts []Part) ([]resPart, error) {
	return p.checkPartsTo(make([]resPart, 0, len(parts)), parts)
}

// checkPartsTo is checkParts appending to out[:0], which it returns; out
// grows (onto the heap) only when it is too short.
func (p *Planner) checkPartsTo(out []resPart, parts []Part) ([]resPart, error) {
	return p.appendParts(out[:0], parts, &p.last)
}

// appendParts validates parts and appends them, resolved, to out. *last
// caches the resource the previous part named (checkPartsTo passes the
// planner's own cache; a bulk load that must not write to the planner
// passes one of its own). Apart from *last it only reads the planner.
func (p *Planner) appendParts(out []resPart, parts []Part, last **resource) ([]resPart, error) {
	if len(parts) == 0 {
		return nil, &FieldError{Field: "parts", Reason: "must not be empty"}
	}
	from := len(out)
	// Field names are formatted only on error: this runs on every
	// admission and every booking of a bulk load.
	for i, pt := range parts {
		r := *last
		if r == nil || r.name != pt.Resource {
			var ok bool
			if r, ok = p.resources[pt.Resource]; !ok {
				return nil, partErr(p, i, pt.Resource)
			}
			*last = r
		}
		for _, prev := range out[from:] {
			if prev.res == r {
				return nil, &FieldError{Field: fmt.Sprintf("parts[%d].resource", i), Reason: fmt.Sprintf("duplicate resource %q", pt.Resource)}
			}
		}
		if pt.Amount <= 0 {
			return nil, &FieldError{Field: fmt.Sprintf("parts[%d].amount", i), Reason: "must be > 0"}
		}
		if pt.Amount > r.maxCap {
			return nil, &FieldError{Field: fmt.Sprintf("parts[%d].amount", i), Reason: fmt.Sprintf("exceeds the capacity %d of %q", r.maxCap, pt.Resource)}
		}
		out = append(out, resPart{res: r, amount: pt.Amount})
	}
	return out, nil
}

// checkRequest validates a request and returns its resolved parts (in
// buf's storage when they fit) and the latest start its window allows.
func (p *Planner) checkRequest(req Request, buf []resPart) ([]resPart, int64, error) {
	parts, err := p.checkPartsTo(buf, req.Parts)
	if err != nil {
		return nil, 0, err
	}
	if req.Duration <= 0 {
		return nil, 0, &FieldError{Field: "duration", Reason: "must be > 0"}
	}
	if req.NotBefore < p.origin {
		return nil, 0, &FieldError{Field: "not_before", Reason: fmt.Sprintf("must be >= origin %d", p.origin)}
	}
	if req.Duration > MaxTime-req.NotBefore {
		return nil, 0, &FieldError{Field: "duration", Reason: "not_before + duration overflows"}
	}
	if req.Deadline < req.NotBefore {
		return nil, 0, &FieldError{Field: "deadline", Reason: "must not be before not_before"}
	}
	if req.Deadline-req.NotBefore < req.Duration {
		return nil, 0, &FieldError{Field: "deadline", Reason: "window shorter than duration"}
	}
	return parts, req.Deadline - req.Duration, nil
}

// checkRect validates an exact rectangle parts × [start, end) and returns
// the resolved parts (in buf's storage when they fit).
func (p *Planner) checkRect(parts []Part, start, end int64, buf []resPart) ([]resPart, error) {
	rp, err := p.checkPartsTo(buf, parts)
	if err != nil {
		return nil, err
	}
	if start < p.origin {
		return nil, &FieldError{Field: "start", Reason: fmt.Sprintf("must be >= origin %d", p.origin)}
	}
	if end <= start {
		return nil, &FieldError{Field: "end", Reason: "must be after start"}
	}
	return rp, nil
}

// partErr is the lookup error for the resource of parts[i].
func partErr(p *Planner, i int, name string) error {
	_, err := p.lookup(fmt.Sprintf("parts[%d].resource", i), name)
	return err
}
