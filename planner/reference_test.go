package planner

import (
	"fmt"
	"math/big"
	"slices"
)

// refModel is the deliberately dumb second planner the differential tests
// compare against. It stores nothing derived: per resource the base
// capacity and the list of capacity changes in the order they were made,
// plus the plain list of live bookings. Free capacity at an instant is
// computed by summing; the earliest start is found by trying every
// instant at which anything begins or ends. It shares no code with the
// Planner or the timelines (only the exported types and errors).
type refModel struct {
	origin int64
	res    map[string]*refResource
	books  []Booking // live bookings, in no particular order
}

type refResource struct {
	base    int64
	changes []refChange // applied in order; a later one wins
}

type refChange struct{ from, to, capacity int64 }

func newRefModel() *refModel {
	return &refModel{res: map[string]*refResource{}}
}

// find returns the index of booking id in m.books, or -1.
func (m *refModel) find(id string) int {
	return slices.IndexFunc(m.books, func(b Booking) bool { return b.ID == id })
}

// capAt is the total capacity of r at t.
func (m *refModel) capAt(name string, t int64) int64 {
	r := m.res[name]
	c := r.base
	for _, ch := range r.changes {
		if ch.from <= t && t < ch.to {
			c = ch.capacity
		}
	}
	return c
}

// bookedAt is the capacity of r booked at t.
func (m *refModel) bookedAt(name string, t int64) int64 {
	sum := int64(0)
	for _, b := range m.books {
		if b.Start <= t && t < b.End {
			for _, p := range b.Parts {
				if p.Resource == name {
					sum += p.Amount
				}
			}
		}
	}
	return sum
}

func (m *refModel) freeAt(name string, t int64) int64 { return m.capAt(name, t) - m.bookedAt(name, t) }

// points returns, sorted and unique, the origin and every instant after it
// (below MaxTime) at which a booking or capacity change of r begins or
// ends, plus the extra instants given. Between two consecutive points
// nothing about r changes.
func (m *refModel) points(name string, extra ...int64) []int64 {
	pts := []int64{m.origin}
	add := func(t int64) {
		if t > m.origin && t < MaxTime {
			pts = append(pts, t)
		}
	}
	for _, t := range extra {
		add(t)
	}
	for _, ch := range m.res[name].changes {
		add(ch.from)
		add(ch.to)
	}
	for _, b := range m.books {
		for _, p := range b.Parts {
			if p.Resource == name {
				add(b.Start)
				add(b.End)
			}
		}
	}
	slices.Sort(pts)
	return slices.Compact(pts)
}

// profile is the canonical free list of r over [origin, MaxTime).
func (m *refModel) profile(name string) []Block {
	pts := m.points(name)
	var out []Block
	for i, t := range pts {
		end := MaxTime
		if i+1 < len(pts) {
			end = pts[i+1]
		}
		f := m.freeAt(name, t)
		if n := len(out); n > 0 && out[n-1].Free == f {
			out[n-1].End = end
			continue
		}
		out = append(out, Block{Start: t, End: end, Free: f})
	}
	return out
}

// fits reports whether amount fits on r over [s, s+d).
func (m *refModel) fits(name string, amount, s, d int64, pts []int64) bool {
	if m.freeAt(name, s) < amount {
		return false
	}
	for _, t := range pts {
		if t > s && t < s+d && m.freeAt(name, t) < amount {
			return false
		}
	}
	return true
}

// allFit reports whether every part fits over [s, s+d).
func (m *refModel) allFit(parts []Part, s, d int64, pts map[string][]int64) bool {
	for _, p := range parts {
		if !m.fits(p.Resource, p.Amount, s, d, pts[p.Resource]) {
			return false
		}
	}
	return true
}

// candidates returns nb and every point of any requested resource in
// (nb, latest], ascending.
func (m *refModel) candidates(parts []Part, nb, latest int64) ([]int64, map[string][]int64) {
	pts := map[string][]int64{}
	cands := []int64{nb}
	for _, p := range parts {
		pts[p.Resource] = m.points(p.Resource)
		for _, t := range pts[p.Resource] {
			if t > nb && t <= latest {
				cands = append(cands, t)
			}
		}
	}
	slices.Sort(cands)
	return slices.Compact(cands), pts
}

// earliest tries every candidate start in order.
func (m *refModel) earliest(parts []Part, d, nb, latest int64) (int64, bool) {
	cands, pts := m.candidates(parts, nb, latest)
	for _, s := range cands {
		if m.allFit(parts, s, d, pts) {
			return s, true
		}
	}
	return 0, false
}

func (m *refModel) maxCap(name string) int64 {
	best := m.capAt(name, m.origin)
	for _, ch := range m.res[name].changes {
		if ch.to > m.origin {
			best = max(best, m.capAt(name, max(ch.from, m.origin)))
		}
		if ch.to > m.origin && ch.to < MaxTime {
			best = max(best, m.capAt(name, ch.to))
		}
	}
	return best
}

// Error results are compared by class: the sentinel, the field of a
// FieldError and the list of a CapacityConflictError.

func refField(field string) error { return &FieldError{Field: field, Reason: "reference"} }

func refWrap(sentinel error) error { return fmt.Errorf("reference: %w", sentinel) }

func (m *refModel) checkParts(parts []Part) error {
	if len(parts) == 0 {
		return refField("parts")
	}
	seen := map[string]bool{}
	for i, p := range parts {
		f := fmt.Sprintf("parts[%d].resource", i)
		if p.Resource == "" {
			return refField(f)
		}
		if m.res[p.Resource] == nil {
			return refWrap(ErrUnknownResource)
		}
		if seen[p.Resource] {
			return refField(f)
		}
		seen[p.Resource] = true
		if p.Amount <= 0 || p.Amount > m.maxCap(p.Resource) {
			return refField(fmt.Sprintf("parts[%d].amount", i))
		}
	}
	return nil
}

func (m *refModel) checkRequest(req Request) error {
	if err := m.checkParts(req.Parts); err != nil {
		return err
	}
	switch {
	case req.Duration <= 0:
		return refField("duration")
	case req.NotBefore < m.origin:
		return refField("not_before")
	case req.NotBefore > MaxTime-req.Duration:
		return refField("duration")
	case req.Deadline < req.NotBefore, req.Deadline-req.Duration < req.NotBefore:
		return refField("deadline")
	}
	return nil
}

func (m *refModel) checkRect(parts []Part, start, end int64) error {
	if err := m.checkParts(parts); err != nil {
		return err
	}
	if start < m.origin {
		return refField("start")
	}
	if end <= start {
		return refField("end")
	}
	return nil
}

func (m *refModel) AddResource(name string, capacity int64) error {
	switch {
	case name == "":
		return refField("name")
	case capacity < 0:
		return refField("capacity")
	case m.res[name] != nil:
		return refWrap(ErrResourceExists)
	}
	m.res[name] = &refResource{base: capacity}
	return nil
}

func (m *refModel) uses(name string) bool {
	for _, b := range m.books {
		for _, p := range b.Parts {
			if p.Resource == name {
				return true
			}
		}
	}
	return false
}

func (m *refModel) RemoveResource(name string) error {
	switch {
	case name == "":
		return refField("name")
	case m.res[name] == nil:
		return refWrap(ErrUnknownResource)
	case m.uses(name):
		return refWrap(ErrInUse)
	}
	delete(m.res, name)
	return nil
}

func (m *refModel) Resources() []ResourceInfo {
	out := []ResourceInfo{}
	for n, r := range m.res {
		out = append(out, ResourceInfo{Name: n, Capacity: r.base})
	}
	slices.SortFunc(out, func(a, b ResourceInfo) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}

func (m *refModel) SetCapacity(name string, from, to, capacity int64) error {
	switch {
	case name == "":
		return refField("resource")
	case m.res[name] == nil:
		return refWrap(ErrUnknownResource)
	case capacity < 0:
		return refField("capacity")
	case from < m.origin:
		return refField("from")
	case to <= from:
		return refField("to")
	}
	// Instants where the new capacity would be below what is booked.
	var bad [][2]int64
	pts := m.points(name, from, to)
	for i, t := range pts {
		end := MaxTime
		if i+1 < len(pts) {
			end = pts[i+1]
		}
		if t >= from && t < to && m.bookedAt(name, t) > capacity {
			bad = append(bad, [2]int64{t, end})
		}
	}
	if len(bad) > 0 {
		var ids []string
		for _, b := range m.books {
			if !slices.ContainsFunc(b.Parts, func(p Part) bool { return p.Resource == name }) {
				continue
			}
			for _, w := range bad {
				if b.Start < w[1] && w[0] < b.End {
					ids = append(ids, b.ID)
					break
				}
			}
		}
		slices.Sort(ids)
		return &CapacityConflictError{Resource: name, Violated: ids}
	}
	r := m.res[name]
	r.changes = append(r.changes, refChange{from: from, to: to, capacity: capacity})
	return nil
}

func (m *refModel) Find(req Request) (Decision, error) {
	if err := m.checkRequest(req); err != nil {
		return Decision{}, err
	}
	latest := req.Deadline - req.Duration
	if s, ok := m.earliest(req.Parts, req.Duration, req.NotBefore, latest); ok {
		return Decision{Fits: true, Start: s}, nil
	}
	s, ok := m.earliest(req.Parts, req.Duration, req.NotBefore, MaxTime-req.Duration)
	return Decision{LaterOK: ok, LaterStart: s}, nil
}

// Offers: every candidate in the window at which all parts fit, where a
// candidate is NotBefore or an instant at which the free capacity of a
// requested resource differs from the instant before.
func (m *refModel) Offers(req Request, k int) ([]int64, error) {
	if err := m.checkRequest(req); err != nil {
		return nil, err
	}
	if k < 0 {
		return nil, refField("k")
	}
	latest := req.Deadline - req.Duration
	cands, pts := m.candidates(req.Parts, req.NotBefore, latest)
	out := []int64{}
	for _, s := range cands {
		if len(out) == k {
			break
		}
		changes := s == req.NotBefore
		for _, p := range req.Parts {
			if s > m.origin && m.freeAt(p.Resource, s) != m.freeAt(p.Resource, s-1) {
				changes = true
			}
		}
		if changes && m.allFit(req.Parts, s, req.Duration, pts) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *refModel) Reserve(id string, req Request) (Decision, error) {
	if id == "" {
		return Decision{}, refField("id")
	}
	if m.find(id) >= 0 {
		return Decision{}, refWrap(ErrDuplicateID)
	}
	d, err := m.Find(req)
	if err != nil {
		return d, err
	}
	if !d.Fits {
		return d, refWrap(ErrNoCapacity)
	}
	m.books = append(m.books, Booking{ID: id, Parts: slices.Clone(req.Parts), Start: d.Start, End: d.Start + req.Duration})
	return d, nil
}

// rectFits checks an exact rectangle against the current bookings.
func (m *refModel) rectFits(parts []Part, start, end int64) bool {
	pts := map[string][]int64{}
	for _, p := range parts {
		pts[p.Resource] = m.points(p.Resource)
	}
	return m.allFit(parts, start, end-start, pts)
}

func (m *refModel) Book(b Booking) error {
	if b.ID == "" {
		return refField("id")
	}
	if m.find(b.ID) >= 0 {
		return refWrap(ErrDuplicateID)
	}
	if err := m.checkRect(b.Parts, b.Start, b.End); err != nil {
		return err
	}
	if !m.rectFits(b.Parts, b.Start, b.End) {
		return refWrap(ErrNoCapacity)
	}
	b.Parts = slices.Clone(b.Parts)
	m.books = append(m.books, b)
	return nil
}

func (m *refModel) Release(id string) (Booking, error) {
	i := m.find(id)
	if i < 0 {
		return Booking{}, refWrap(ErrUnknownBooking)
	}
	b := m.books[i]
	m.books = slices.Delete(m.books, i, i+1)
	return b, nil
}

func (m *refModel) Get(id string) (Booking, bool) {
	if i := m.find(id); i >= 0 {
		return m.books[i], true
	}
	return Booking{}, false
}

func (m *refModel) Modify(id string, parts []Part, start, end int64) error {
	if id == "" {
		return refField("id")
	}
	i := m.find(id)
	if i < 0 {
		return refWrap(ErrUnknownBooking)
	}
	if err := m.checkRect(parts, start, end); err != nil {
		return err
	}
	old := m.books[i]
	m.books = slices.Delete(m.books, i, i+1)
	if !m.rectFits(parts, start, end) {
		m.books = append(m.books, old)
		return refWrap(ErrNoCapacity)
	}
	m.books = append(m.books, Booking{ID: id, Parts: slices.Clone(parts), Start: start, End: end})
	return nil
}

func (m *refModel) checkWindow(name string, from, to int64) error {
	switch {
	case name == "":
		return refField("resource")
	case m.res[name] == nil:
		return refWrap(ErrUnknownResource)
	case from < m.origin:
		return refField("from")
	case to <= from:
		return refField("to")
	}
	return nil
}

func (m *refModel) Availability(name string, from, to int64) ([]Block, error) {
	if err := m.checkWindow(name, from, to); err != nil {
		return nil, err
	}
	out := []Block{}
	for _, b := range m.profile(name) {
		s, e := max(b.Start, from), min(b.End, to)
		if s < e {
			out = append(out, Block{Start: s, End: e, Free: b.Free})
		}
	}
	return out, nil
}

func (m *refModel) Usage(name string, from, to int64) (Usage, error) {
	blocks, err := m.Availability(name, from, to)
	if err != nil {
		return Usage{}, err
	}
	capArea, freeArea, largest := new(big.Int), new(big.Int), new(big.Int)
	pts := m.points(name, from, to)
	for i, t := range pts {
		end := MaxTime
		if i+1 < len(pts) {
			end = pts[i+1]
		}
		s, e := max(t, from), min(end, to)
		if s >= e {
			continue
		}
		n := big.NewInt(e - s)
		capArea.Add(capArea, new(big.Int).Mul(n, big.NewInt(m.capAt(name, t))))
		freeArea.Add(freeArea, new(big.Int).Mul(n, big.NewInt(m.freeAt(name, t))))
	}
	for _, b := range blocks {
		a := new(big.Int).Mul(big.NewInt(b.End-b.Start), big.NewInt(b.Free))
		if a.Cmp(largest) > 0 {
			largest = a
		}
	}
	if !capArea.IsInt64() {
		return Usage{}, refField("to")
	}
	return Usage{
		Resource: name, From: from, To: to,
		CapacityArea: capArea.Int64(), FreeArea: freeArea.Int64(),
		BookedArea: capArea.Int64() - freeArea.Int64(), LargestFreeBlock: largest.Int64(),
	}, nil
}

func (m *refModel) Advance(now int64) {
	now = min(now, MaxTime-1)
	if now <= m.origin {
		return
	}
	m.origin = now
	m.books = slices.DeleteFunc(m.books, func(b Booking) bool { return b.End <= now })
}
