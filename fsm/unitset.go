package fsm

import (
	"fmt"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// Changing the unit set of a resource (TYPE_CHANGE_UNITS, envelope
// version 4): nodes join or leave the partition a resource follows.
// Adding units only adds capacity; nothing moves. Removing a unit moves
// every booking that holds it onto units free over that booking's whole
// window (the booking keeps its other units), decided here so every
// replica moves the same bookings onto the same units: bookings in ID
// order, spare units in index order. The entry is refused, changing
// nothing, when a booking on a removed unit has started (its nodes are in
// use), when no spare unit is free for it, or when the resource's unit
// policy is REFUSE; the refusal lists the reservations.

// maxChangeUnits bounds the names of one TYPE_CHANGE_UNITS entry.
const maxChangeUnits = MaxUnits

// checkChangeUnits runs the stateless checks of the payload.
func checkChangeUnits(c *fsmv1.ChangeUnits, ver uint32) *FieldError {
	if fe := checkNameSet("change_units.resource", c.GetResource(), ver); fe != nil {
		return fe
	}
	if len(c.GetAdd()) == 0 && len(c.GetRemove()) == 0 {
		return fieldErr("change_units.add", "add or remove at least one unit")
	}
	seen := make(map[string]string, len(c.GetAdd())+len(c.GetRemove()))
	for _, l := range []struct {
		field string
		names []string
	}{{"change_units.add", c.GetAdd()}, {"change_units.remove", c.GetRemove()}} {
		if len(l.names) > maxChangeUnits {
			return fieldErr(l.field, fmt.Sprintf("%d units: at most %d", len(l.names), maxChangeUnits))
		}
		for i, n := range l.names {
			f := fmt.Sprintf("%s[%d]", l.field, i)
			if why := validUnitName(n); why != "" {
				return fieldErr(f, why)
			}
			if other, dup := seen[n]; dup {
				return fieldErr(f, fmt.Sprintf("unit %q named twice (also %s)", n, other))
			}
			seen[n] = f
		}
	}
	return nil
}

// changeUnits applies TYPE_CHANGE_UNITS.
func (s *state) changeUnits(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetChangeUnits()
	if fe := checkChangeUnits(c, s.ver); fe != nil {
		return fe.result()
	}
	old, found := s.resources[c.GetResource()]
	if !found {
		return notFound(fmt.Sprintf("resource %q not found", c.GetResource()))
	}
	name := old.GetName()
	us := s.units[name]
	if us == nil {
		return invalid("change_units.resource", fmt.Sprintf("resource %q has no units", name))
	}
	have := make(map[string]bool, len(old.GetUnits()))
	for _, n := range old.GetUnits() {
		have[n] = true
	}
	for i, n := range c.GetAdd() {
		if have[n] {
			return invalid(fmt.Sprintf("change_units.add[%d]", i), fmt.Sprintf("resource %q already has unit %q", name, n))
		}
	}
	removed := make(map[string]bool, len(c.GetRemove()))
	for i, n := range c.GetRemove() {
		if !have[n] {
			return invalid(fmt.Sprintf("change_units.remove[%d]", i), fmt.Sprintf("resource %q has no unit %q", name, n))
		}
		removed[n] = true
	}
	units := slices.DeleteFunc(slices.Clone(old.GetUnits()), func(n string) bool { return removed[n] })
	units = append(units, c.GetAdd()...)
	switch {
	case len(units) == 0:
		return invalid("change_units.remove", fmt.Sprintf("would remove every unit of %q: at least one must stay", name))
	case len(units) > MaxUnits:
		return invalid("change_units.add", fmt.Sprintf("%q would have %d units: at most %d", name, len(units), MaxUnits))
	}

	snap := us.Snapshot()
	next := planner.UnitSnapshot{Origin: snap.Origin, Units: units}
	var endDowns []string
	for _, d := range snap.Downs {
		if removed[d.Unit] {
			endDowns = append(endDowns, d.ID)
			continue
		}
		next.Downs = append(next.Downs, d)
	}
	var moving []planner.UnitBooking
	var stuck []string
	for _, b := range snap.Bookings {
		if !slices.ContainsFunc(b.Units, func(n string) bool { return removed[n] }) {
			next.Bookings = append(next.Bookings, b)
			continue
		}
		if b.Start <= snap.Origin || unitPolicy(old) == planner.UnitRefuse {
			stuck = append(stuck, b.ID)
			continue
		}
		moving = append(moving, b)
	}
	if len(stuck) > 0 {
		why := "they have started"
		if unitPolicy(old) == planner.UnitRefuse {
			why = "the resource's unit policy is REFUSE"
		}
		return s.unitsInUse(name, stuck, why)
	}
	ns, err := planner.RestoreUnitSchedule(next, s.unitConfig())
	if err != nil {
		// The bookings and windows kept are a subset of a consistent
		// schedule's, on units the new set still has.
		panic(fmt.Sprintf("fsm: unit schedule of %q without its removed units: %v", name, err))
	}
	for _, b := range moving {
		keep := slices.DeleteFunc(slices.Clone(b.Units), func(n string) bool { return removed[n] })
		need := len(b.Units) - len(keep)
		free, err := ns.FreeUnits(max(b.Start, ns.Origin()), b.End)
		if err != nil {
			panic(fmt.Sprintf("fsm: free units of %q for %q: %v", name, b.ID, err))
		}
		for _, n := range free {
			if need == 0 {
				break
			}
			if !slices.Contains(keep, n) {
				keep = append(keep, n)
				need--
			}
		}
		if need > 0 {
			stuck = append(stuck, b.ID)
			continue
		}
		if err := ns.Book(planner.UnitBooking{ID: b.ID, Start: b.Start, End: b.End, Units: keep, Movable: b.Movable}); err != nil {
			panic(fmt.Sprintf("fsm: unit schedule of %q refused %q on units it found free: %v", name, b.ID, err))
		}
	}
	if len(stuck) > 0 {
		return s.unitsInUse(name, stuck, "no spare unit is free over their whole window")
	}

	// Decided: nothing below refuses.
	for _, id := range endDowns {
		s.release(downKey(name, id))
	}
	if err := s.plan.SetCapacity(name, s.plan.Origin(), planner.MaxTime, int64(len(units))); err != nil {
		// Every booking is on distinct units of the new set at every
		// instant, so the count fits.
		panic(fmt.Sprintf("fsm: count planner of %q refused %d units: %v", name, len(units), err))
	}
	s.units[name] = ns
	s.unitsAdvanced = false
	remaps := make([]planner.Remap, len(moving))
	for i, b := range moving {
		remaps[i] = planner.Remap{ID: b.ID, From: b.Units}
	}
	s.applyRemaps(remaps)
	n := proto.CloneOf(old)
	n.UpdatedVersion = s.index
	n.Units = units
	n.Capacity = int64(len(units))
	n.UnitDowns = slices.DeleteFunc(s.liveDowns(n.GetUnitDowns(), ""), func(d *fsmv1.UnitDown) bool { return removed[d.GetUnit()] })
	s.resources[name] = n
	s.emit(fsmv1.Event_TYPE_UNITS_CHANGED, nil, n)
	return okResource(n)
}

// unitsInUse refuses a unit change that would have to move the bookings
// keys (reservation IDs, or the keys of pending new shapes) and cannot.
func (s *state) unitsInUse(resource string, keys []string, why string) *fsmv1.Result {
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, strings.TrimSuffix(k, modSuffix))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	res := conflict(fsmv1.Conflict_KIND_CAPACITY, fmt.Sprintf("cannot remove units of %q: reservations %s hold them and cannot move: %s",
		resource, strings.Join(ids, ", "), why))
	res.GetConflict().ViolatedIds = ids
	return res
}
