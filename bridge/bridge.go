package bridge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Driver is what a resource manager implements for the bridge. Slurm's is
// in bridge/slurm; PBS's would wrap pbs_rsub, pbs_rstat and pbs_rdel.
//
// Implementations must be safe for concurrent use, retry a manager that is
// briefly unreachable within ctx (returning ErrUnavailable when ctx ends
// first), return the errors of this package wrapped in *Error, and refuse
// (ErrNotOwned, without contacting the manager) any write to a name that
// does not carry their prefix.
type Driver interface {
	// Nodes lists the nodes of a partition (queue) with their state,
	// sorted by name.
	Nodes(ctx context.Context, partition string) ([]Node, error)
	// Reservations lists every reservation the manager holds, owned or
	// not, sorted by name.
	Reservations(ctx context.Context) ([]Reservation, error)
	// Create makes a reservation exactly as spec says. A Start at or before
	// the manager's present is created as starting now.
	Create(ctx context.Context, spec Spec) error
	// Update rewrites an existing reservation, have, to match want; it
	// writes only the fields Diff(want, have, now) names.
	Update(ctx context.Context, want Spec, have Reservation) error
	// Delete removes the named reservation.
	Delete(ctx context.Context, name string) error
}

// Spec is a reservation as the bridge wants it to exist in the resource
// manager. Times are whole seconds (see Window); Users and Accounts say who
// may run in it, and at least one of them must be non-empty.
type Spec struct {
	Name     string
	Nodes    []string
	Start    time.Time
	End      time.Time
	Users    []string
	Accounts []string
}

// Reservation is a reservation as the resource manager reports it. Nodes,
// Users, Accounts, Groups and Flags are sorted and free of duplicates.
type Reservation struct {
	Name      string
	Nodes     []string
	Start     time.Time
	End       time.Time
	Users     []string
	Accounts  []string
	Groups    []string
	Flags     []string
	Partition string
	// State is the manager's word for it (Slurm: ACTIVE or INACTIVE).
	State string
}

// Maintenance reports whether the reservation is a maintenance window
// (Slurm's Flags=MAINT).
func (r Reservation) Maintenance() bool {
	return slices.Contains(r.Flags, "MAINT")
}

// Spec returns the reservation's fields as a Spec, for comparisons.
func (r Reservation) Spec() Spec {
	return Spec{Name: r.Name, Nodes: r.Nodes, Start: r.Start, End: r.End, Users: r.Users, Accounts: r.Accounts}
}

// Node is one node of a partition and its state.
type Node struct {
	Name string
	// State is the base state in lower case: idle, allocated, mixed,
	// down, unknown, future, ...
	State string
	// Flags are the state's modifiers in lower case: drain, fail,
	// maint, not_responding, reserved, ...
	Flags []string
	// Reason is why an operator drained or downed it, if anyone said.
	Reason string
}

// Usable reports whether jobs can be started on the node: it is neither
// down nor drained (draining or drained), failing, or unknown to the
// controller. The ledger side turns unusable nodes into unit windows.
func (n Node) Usable() bool {
	switch n.State {
	case "down", "unknown", "future":
		return false
	}
	for _, f := range n.Flags {
		switch f {
		case "drain", "draining", "drained", "fail", "failing", "not_responding", "power_down", "powered_down":
			return false
		}
	}
	return true
}

// Window converts a booking [startMillis, endMillis) in Unix milliseconds to
// whole seconds by rounding inwards (start up, end down): the manager keeps
// seconds, and a window that grew outwards could overlap the next booking
// of the same node. ok is false when nothing of a second remains.
func Window(startMillis, endMillis int64) (start, end time.Time, ok bool) {
	s := startMillis / 1000
	if startMillis%1000 > 0 {
		s++
	}
	e := endMillis / 1000
	if endMillis%1000 < 0 {
		e--
	}
	if e <= s {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(s, 0).UTC(), time.Unix(e, 0).UTC(), true
}

// Validate checks a spec for what every resource manager needs: a name
// with the prefix and only the characters [A-Za-z0-9._-] after it, at
// least one node, no empty or duplicate node, user or account names, whole
// seconds, End after Start, and at least one user or account. The error
// names the field.
func (s Spec) Validate(prefix string) error {
	if err := ValidName(s.Name, prefix); err != nil {
		return err
	}
	if len(s.Nodes) == 0 {
		return fmt.Errorf("reservation %s: nodes: none given", s.Name)
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"nodes", s.Nodes}, {"users", s.Users}, {"accounts", s.Accounts}} {
		if err := checkNames(f.list); err != nil {
			return fmt.Errorf("reservation %s: %s: %w", s.Name, f.field, err)
		}
	}
	if s.Start.IsZero() || s.End.IsZero() {
		return fmt.Errorf("reservation %s: start and end: both must be set", s.Name)
	}
	if s.Start.Nanosecond() != 0 || s.End.Nanosecond() != 0 {
		return fmt.Errorf("reservation %s: start and end: must be whole seconds (see bridge.Window)", s.Name)
	}
	if !s.End.After(s.Start) {
		return fmt.Errorf("reservation %s: end: %s is not after start %s", s.Name, s.End.UTC().Format(time.RFC3339), s.Start.UTC().Format(time.RFC3339))
	}
	if len(s.Users) == 0 && len(s.Accounts) == 0 {
		return fmt.Errorf("reservation %s: users and accounts: neither given (the tenant has no mapping)", s.Name)
	}
	return nil
}

// checkNames refuses empty names, names with characters that a manager's
// key=value command line would split on, and duplicates.
func checkNames(list []string) error {
	seen := make(map[string]bool, len(list))
	for _, n := range list {
		if n == "" {
			return fmt.Errorf("empty name")
		}
		if strings.ContainsAny(n, " ,=\t\n\"'[]") {
			return fmt.Errorf("%q: contains a space, comma, bracket, quote or '='", n)
		}
		if seen[n] {
			return fmt.Errorf("%q: given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// MaxNameLen bounds reservation names; Slurm itself does not, but a name
// must fit a command line and a log line.
const MaxNameLen = 200

// ValidName checks that name carries prefix and uses only [A-Za-z0-9._-].
// Slurm accepts names with commas and other characters that its own
// key=value syntax then misreads, so the bridge allows none of them.
func ValidName(name, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("name prefix: empty (the bridge must own a prefix)")
	}
	if !Owns(prefix, name) {
		return fmt.Errorf("reservation name %q: %w: it must be the prefix %q followed by an id", name, ErrNotOwned, prefix)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("reservation name %q: longer than %d bytes: %w", name[:20]+"...", MaxNameLen, ErrInvalidName)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("reservation name %q: character %q: %w (allowed: A-Z a-z 0-9 . _ -)", name, c, ErrInvalidName)
		}
	}
	return nil
}

// Normalize returns the spec with sorted, duplicate-free lists and UTC
// times, the form Reconcile compares.
func (s Spec) Normalize() Spec {
	s.Nodes = sortedSet(s.Nodes)
	s.Users = sortedSet(s.Users)
	s.Accounts = sortedSet(s.Accounts)
	s.Start = s.Start.UTC()
	s.End = s.End.UTC()
	return s
}

func sortedSet(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
