package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Field names a part of a reservation that can differ between the ledger
// and the resource manager.
type Field string

// The fields Diff compares.
const (
	FieldNodes    Field = "nodes"
	FieldStart    Field = "start"
	FieldEnd      Field = "end"
	FieldUsers    Field = "users"
	FieldAccounts Field = "accounts"
)

// Diff lists the fields in which the manager's reservation have differs
// from want, in a fixed order. Starts that both lie at or before now count
// as equal: a reservation created late starts when it was created, and an
// active reservation's start cannot move anyway.
func Diff(want Spec, have Reservation, now time.Time) []Field {
	want = want.Normalize()
	hs := have.Spec().Normalize()
	var out []Field
	if !slices.Equal(want.Nodes, hs.Nodes) {
		out = append(out, FieldNodes)
	}
	if !want.Start.Equal(hs.Start) && (want.Start.After(now) || hs.Start.After(now)) {
		out = append(out, FieldStart)
	}
	if !want.End.Equal(hs.End) {
		out = append(out, FieldEnd)
	}
	if !slices.Equal(want.Users, hs.Users) {
		out = append(out, FieldUsers)
	}
	if !slices.Equal(want.Accounts, hs.Accounts) {
		out = append(out, FieldAccounts)
	}
	return out
}

// Op is what an Action does.
type Op string

// The operations of a plan, applied in this order: deletes, then updates,
// then creates.
const (
	OpDelete Op = "delete"
	OpUpdate Op = "update"
	OpCreate Op = "create"
)

// Action is one write to the resource manager.
type Action struct {
	Op   Op
	Name string
	// Want is the desired reservation (create, update).
	Want Spec
	// Have is the manager's reservation (update, delete).
	Have Reservation
	// Fields are the fields an update writes (Diff's answer).
	Fields []Field
	// Shorten, on a delete of an active reservation, is the same
	// reservation ending about now: what Apply writes instead when the
	// manager refuses the delete because jobs still run in it (ErrInUse),
	// so that a reservation completed early stops holding its nodes.
	Shorten *Spec
	// Why says in words why the action is needed.
	Why string
}

// String describes the action for logs: op, name, fields, why.
func (a Action) String() string {
	switch a.Op {
	case OpUpdate:
		return fmt.Sprintf("update %s (%s): %s", a.Name, joinFields(a.Fields), a.Why)
	default:
		return fmt.Sprintf("%s %s: %s", a.Op, a.Name, a.Why)
	}
}

// DriftKind classifies a difference between the ledger and the manager.
type DriftKind string

// The kinds of drift.
const (
	// DriftMissing: desired, but the manager has no such reservation.
	DriftMissing DriftKind = "missing"
	// DriftChanged: the manager's reservation differs (Drift.Fields).
	DriftChanged DriftKind = "changed"
	// DriftOrphan: the manager holds an owned reservation nobody wants.
	DriftOrphan DriftKind = "orphan"
)

// Drift is one difference found in a round; Fields are set for
// DriftChanged.
type Drift struct {
	Name   string
	Kind   DriftKind
	Fields []Field
}

// Rejection is a desired reservation the bridge will not write, and why
// (for the materialization state: "failed" with this reason).
type Rejection struct {
	Name   string
	Reason string
}

// Plan is the answer of Reconcile: the actions that make the manager's
// owned set equal the desired set, and what the round saw.
type Plan struct {
	// Actions, in the order they must be applied.
	Actions []Action
	// Drift found, sorted by name.
	Drift []Drift
	// Accepted are the names of the desired reservations the manager
	// must hold after the plan, sorted.
	Accepted []string
	// Rejected desired reservations, sorted by name; no action is
	// planned for them.
	Rejected []Rejection
	// Foreign are the reservations without the prefix, sorted by name:
	// never touched.
	Foreign []Reservation
	// Maintenance are the foreign reservations flagged as maintenance,
	// for the ledger side to mirror as maintenance windows.
	Maintenance []Reservation
}

// Converged reports whether the plan has nothing to do.
func (p Plan) Converged() bool { return len(p.Actions) == 0 }

// Reconcile computes the plan that makes the reservations with the prefix
// in observed equal desired, at time now. It is pure: the same arguments
// give the same plan.
//
// Desired reservations are refused (Plan.Rejected) when they are invalid
// (Spec.Validate), name a reservation twice, overlap an earlier-starting
// desired reservation on a node, or would have to be written overlapping a
// foreign reservation on a node (one the manager already holds exactly as
// desired stays, overlap or not); desired reservations whose end is not
// after now are dropped as over. An owned reservation that is not desired,
// refused ones included, is deleted: the manager holds the accepted set,
// nothing stale.
//
// An update that would move a reservation onto nodes and times another
// owned reservation still holds (two reservations swapping nodes), or
// move the start of an active reservation, becomes a delete followed by a
// create: deletes run first and creates last, so every write of the plan
// succeeds against a manager that holds exactly observed.
func Reconcile(desired []Spec, observed []Reservation, prefix string, now time.Time) Plan {
	var p Plan
	owned := map[string]Reservation{}
	for _, r := range observed {
		if Owns(prefix, r.Name) {
			owned[r.Name] = r
			continue
		}
		p.Foreign = append(p.Foreign, r)
		if r.Maintenance() {
			p.Maintenance = append(p.Maintenance, r)
		}
	}
	slices.SortFunc(p.Foreign, func(a, b Reservation) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(p.Maintenance, func(a, b Reservation) int { return cmp.Compare(a.Name, b.Name) })

	want := acceptDesired(desired, owned, p.Foreign, prefix, now, &p)

	p.Accepted = sortedKeys(want)
	var deletes, updates, creates []Action
	// Footprints of the owned reservations that stay as they are or are
	// updated in place, for the swap check below.
	kept := newFootprints(owned)
	for _, name := range sortedKeys(owned) {
		if _, ok := want[name]; ok {
			kept.add(name)
		}
	}
	for _, name := range sortedKeys(want) {
		w := want[name]
		have, ok := owned[name]
		if !ok {
			creates = append(creates, Action{Op: OpCreate, Name: name, Want: w, Why: "desired, not in the resource manager"})
			p.Drift = append(p.Drift, Drift{Name: name, Kind: DriftMissing})
			continue
		}
		fields := Diff(w, have, now)
		if len(fields) == 0 {
			continue
		}
		p.Drift = append(p.Drift, Drift{Name: name, Kind: DriftChanged, Fields: fields})
		active := !have.Start.After(now) && have.End.After(now)
		recreate := ""
		switch {
		case active && slices.Contains(fields, FieldStart):
			recreate = "the start of an active reservation cannot move"
		default:
			if other, ok := kept.collides(name, w); ok {
				recreate = "its new nodes and times are still held by " + other
			}
		}
		if recreate != "" {
			kept.gone[name] = true
			deletes = append(deletes, Action{Op: OpDelete, Name: name, Have: have, Why: "recreate: " + recreate})
			creates = append(creates, Action{Op: OpCreate, Name: name, Want: w, Why: "recreate: " + recreate})
			continue
		}
		updates = append(updates, Action{Op: OpUpdate, Name: name, Want: w, Have: have, Fields: fields, Why: "differs in " + joinFields(fields)})
	}
	for _, name := range sortedKeys(owned) {
		if _, ok := want[name]; !ok {
			have := owned[name]
			a := Action{Op: OpDelete, Name: name, Have: have, Why: "not desired"}
			// Whole seconds (the manager's granularity), in the future:
			// the manager refuses an end in the past.
			end := now.Truncate(time.Second).Add(2 * time.Second)
			if !have.Start.After(now) && have.End.After(end) {
				sh := have.Spec()
				sh.End = end
				a.Shorten = &sh
			}
			deletes = append(deletes, a)
			p.Drift = append(p.Drift, Drift{Name: name, Kind: DriftOrphan})
		}
	}
	slices.SortStableFunc(deletes, func(a, b Action) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(p.Drift, func(a, b Drift) int { return cmp.Compare(a.Name, b.Name) })
	p.Actions = slices.Concat(deletes, updates, creates)
	return p
}

// acceptDesired validates and normalizes desired, refusing what cannot be
// written, and returns the accepted specs by name.
func acceptDesired(desired []Spec, owned map[string]Reservation, foreign []Reservation, prefix string, now time.Time, p *Plan) map[string]Spec {
	norm := make([]Spec, 0, len(desired))
	for _, s := range desired {
		norm = append(norm, s.Normalize())
	}
	// Earliest start first, then by name, so that of two overlapping
	// reservations the later-starting one is refused, deterministically.
	slices.SortStableFunc(norm, func(a, b Spec) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	want := map[string]Spec{}
	count := map[string]int{}
	for _, s := range norm {
		count[s.Name]++
	}
	held := map[string][]int{} // node -> indexes in norm of the accepted specs on it
	for i, s := range norm {
		if n := count[s.Name]; n > 1 {
			count[s.Name] = 0 // report once
			p.Rejected = append(p.Rejected, Rejection{Name: s.Name, Reason: fmt.Sprintf("name desired %d times", n)})
			continue
		} else if n == 0 {
			continue
		}
		if err := s.Validate(prefix); err != nil {
			p.Rejected = append(p.Rejected, Rejection{Name: s.Name, Reason: err.Error()})
			continue
		}
		if !s.End.After(now) {
			continue
		}
		if reason := overlapsDesired(s, norm, held); reason != "" {
			p.Rejected = append(p.Rejected, Rejection{Name: s.Name, Reason: reason})
			continue
		}
		// A foreign reservation can overlap one the bridge already holds
		// (made with the manager's overlap flag): that one stays while it
		// needs no change. Anything to be written is checked.
		if have, ok := owned[s.Name]; !ok || len(Diff(s, have, now)) > 0 {
			if reason := overlapsForeign(s, foreign, now); reason != "" {
				p.Rejected = append(p.Rejected, Rejection{Name: s.Name, Reason: reason})
				continue
			}
		}
		want[s.Name] = s
		for _, n := range s.Nodes {
			held[n] = append(held[n], i)
		}
	}
	slices.SortStableFunc(p.Rejected, func(a, b Rejection) int { return cmp.Compare(a.Name, b.Name) })
	return want
}

func overlapsDesired(s Spec, norm []Spec, held map[string][]int) string {
	for _, n := range s.Nodes {
		for _, i := range held[n] {
			o := &norm[i]
			if s.Start.Before(o.End) && o.Start.Before(s.End) {
				return fmt.Sprintf("overlaps desired reservation %s on node %s", o.Name, n)
			}
		}
	}
	return ""
}

func overlapsForeign(s Spec, foreign []Reservation, now time.Time) string {
	start := s.Start
	if start.Before(now) {
		start = now
	}
	for _, f := range foreign {
		if !(start.Before(f.End) && f.Start.Before(s.End)) {
			continue
		}
		for _, n := range s.Nodes {
			if slices.Contains(f.Nodes, n) {
				kind := "hand-made reservation"
				if f.Maintenance() {
					kind = "maintenance reservation"
				}
				return fmt.Sprintf("overlaps %s %s on node %s", kind, f.Name, n)
			}
		}
	}
	return ""
}

// footprints indexes the owned reservations that stay in place by node,
// for the swap check: an update must not move onto nodes and times another
// of them still holds.
type footprints struct {
	owned  map[string]Reservation
	byNode map[string][]string // node -> names, in name order
	gone   map[string]bool     // recreated: deleted before any update
}

func newFootprints(owned map[string]Reservation) *footprints {
	return &footprints{owned: owned, byNode: map[string][]string{}, gone: map[string]bool{}}
}

// add indexes the owned reservation name; callers add in name order.
func (f *footprints) add(name string) {
	for _, n := range f.owned[name].Nodes {
		f.byNode[n] = append(f.byNode[n], name)
	}
}

// collides returns the first (by name) other reservation still in place
// whose present footprint overlaps w's desired one.
func (f *footprints) collides(name string, w Spec) (string, bool) {
	first := ""
	for _, n := range w.Nodes {
		for _, other := range f.byNode[n] {
			if other == name || f.gone[other] || first != "" && other >= first {
				continue
			}
			if o := f.owned[other]; w.Start.Before(o.End) && o.Start.Before(w.End) {
				first = other
			}
		}
	}
	return first, first != ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinFields(fs []Field) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// Owns reports whether a reservation name carries the prefix (and more):
// the bridge's ownership rule. An empty prefix owns nothing.
func Owns(prefix, name string) bool {
	return prefix != "" && len(name) > len(prefix) && strings.HasPrefix(name, prefix)
}

// Result is the outcome of one applied action.
type Result struct {
	Action Action
	Err    error
	// Shortened is set when a delete was refused because jobs still run
	// in the reservation and Apply ended it about now instead
	// (Action.Shorten); Err is then the shortening's outcome. The manager
	// drops the reservation once that end has passed.
	Shortened bool
}

// Apply performs the actions in order through d and returns one Result per
// action it attempted. A refusal of one action (overlap, busy nodes, ...)
// does not stop the others: the next round sees what is left. Apply stops
// at the first ErrUnavailable or when ctx ends, and returns that error:
// the actions after it were not attempted.
func Apply(ctx context.Context, d Driver, actions []Action) ([]Result, error) {
	out := make([]Result, 0, len(actions))
	for _, a := range actions {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("apply: stopped before %s: %w", a.Name, err)
		}
		var err error
		shortened := false
		switch a.Op {
		case OpCreate:
			err = d.Create(ctx, a.Want)
		case OpUpdate:
			err = d.Update(ctx, a.Want, a.Have)
		case OpDelete:
			err = d.Delete(ctx, a.Name)
			if errors.Is(err, ErrUnknownReservation) {
				err = nil // already gone: the goal is reached
			}
			if errors.Is(err, ErrInUse) && a.Shorten != nil {
				// Jobs still run in it: end it now instead; the next
				// round deletes it once it is over or empty.
				err, shortened = d.Update(ctx, *a.Shorten, a.Have), true
			}
		default:
			err = fmt.Errorf("apply %s: unknown op %q", a.Name, a.Op)
		}
		out = append(out, Result{Action: a, Err: err, Shortened: shortened})
		if errors.Is(err, ErrUnavailable) {
			return out, fmt.Errorf("apply: stopped at %s: %w", a, err)
		}
	}
	return out, nil
}
