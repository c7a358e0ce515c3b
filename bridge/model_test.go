package bridge

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// model is an obviously simple resource manager for tests: a list of
// reservations with Slurm's rules as the driver sees them (no two
// reservations overlap on a node, names are unique, a passed start becomes
// now, only owned names are written) and a call log. It implements Driver.
type model struct {
	mu     sync.Mutex
	prefix string
	now    time.Time
	res    map[string]Reservation
	calls  []string
	// failAt makes the call with this index (1-based) fail with failErr.
	failAt  int
	failErr error
}

func newModel(prefix string, now time.Time, observed []Reservation) *model {
	m := &model{prefix: prefix, now: now, res: map[string]Reservation{}}
	for _, r := range observed {
		m.res[r.Name] = r
	}
	return m
}

func (m *model) call(op, name string) error {
	m.calls = append(m.calls, op+" "+name)
	if m.failAt == len(m.calls) {
		return &Error{Op: op, Name: name, Kind: m.failErr}
	}
	if op != "list" && op != "nodes" && !Owns(m.prefix, name) {
		return &Error{Op: op, Name: name, Kind: ErrNotOwned}
	}
	return nil
}

func (m *model) Nodes(context.Context, string) ([]Node, error) { return nil, nil }

func (m *model) Reservations(context.Context) ([]Reservation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call("list", ""); err != nil {
		return nil, err
	}
	return m.list(), nil
}

func (m *model) list() []Reservation {
	out := make([]Reservation, 0, len(m.res))
	for _, r := range m.res {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reservation) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// conflict returns a reservation other than r.Name that overlaps r on a
// node.
func (m *model) conflict(r Reservation) (string, bool) {
	for _, o := range m.list() {
		if o.Name == r.Name || !(r.Start.Before(o.End) && o.Start.Before(r.End)) {
			continue
		}
		for _, n := range r.Nodes {
			if slices.Contains(o.Nodes, n) {
				return o.Name, true
			}
		}
	}
	return "", false
}

func (m *model) fromSpec(s Spec) Reservation {
	s = s.Normalize()
	if !s.Start.After(m.now) {
		s.Start = m.now
	}
	return Reservation{Name: s.Name, Nodes: s.Nodes, Start: s.Start, End: s.End, Users: s.Users, Accounts: s.Accounts}
}

func (m *model) Create(_ context.Context, s Spec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call("create", s.Name); err != nil {
		return err
	}
	if err := s.Validate(m.prefix); err != nil {
		return &Error{Op: "create", Name: s.Name, Kind: ErrOther, Message: err.Error()}
	}
	if _, ok := m.res[s.Name]; ok {
		return &Error{Op: "create", Name: s.Name, Kind: ErrDuplicateName}
	}
	r := m.fromSpec(s)
	if o, ok := m.conflict(r); ok {
		return &Error{Op: "create", Name: s.Name, Kind: ErrOverlap, Message: "with " + o}
	}
	m.res[s.Name] = r
	return nil
}

func (m *model) Update(_ context.Context, want Spec, have Reservation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call("update", want.Name); err != nil {
		return err
	}
	cur, ok := m.res[want.Name]
	if !ok {
		return &Error{Op: "update", Name: want.Name, Kind: ErrUnknownReservation}
	}
	r := m.fromSpec(want)
	if !cur.Start.After(m.now) {
		r.Start = cur.Start // an active reservation's start stays
	}
	if o, ok := m.conflict(r); ok {
		return &Error{Op: "update", Name: want.Name, Kind: ErrOverlap, Message: "with " + o}
	}
	r.Flags, r.Groups = cur.Flags, cur.Groups
	m.res[want.Name] = r
	return nil
}

func (m *model) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.call("delete", name); err != nil {
		return err
	}
	if _, ok := m.res[name]; !ok {
		return &Error{Op: "delete", Name: name, Kind: ErrUnknownReservation}
	}
	delete(m.res, name)
	return nil
}

func (m *model) String() string {
	var b []byte
	for _, r := range m.list() {
		b = fmt.Appendf(b, "%s %v [%s, %s)\n", r.Name, r.Nodes, r.Start.Format("15:04"), r.End.Format("15:04"))
	}
	return string(b)
}
