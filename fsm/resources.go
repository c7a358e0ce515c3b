package fsm

import (
	"fmt"
	"maps"
	"slices"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// The resource commands: create, update (capacity, for good or over a
// window) and delete.

func (s *state) createResource(c *fsmv1.CreateResource) *fsmv1.Result {
	if fe := checkCreateResource(c); fe != nil {
		return fe.result()
	}
	if _, exists := s.resources[c.GetName()]; exists {
		return conflict(fsmv1.Conflict_KIND_RESOURCE_EXISTS, fmt.Sprintf("resource %q already exists", c.GetName()))
	}
	capacity := c.GetCapacity()
	if len(c.GetUnits()) > 0 {
		capacity = int64(len(c.GetUnits()))
	}
	if err := s.plan.AddResource(c.GetName(), capacity); err != nil {
		return s.fromPlanner(err, createFields)
	}
	r := &fsmv1.Resource{
		Name:           c.GetName(),
		Capacity:       capacity,
		Unit:           c.GetUnit(),
		Labels:         maps.Clone(c.GetLabels()),
		CreatedVersion: s.index,
		UpdatedVersion: s.index,
	}
	var err error
	if r.Policy, err = s.installPolicy(r.Name, c.GetPolicy()); err != nil {
		_ = s.plan.RemoveResource(r.Name)
		return s.fromPlanner(err, createFields)
	}
	if len(c.GetUnits()) > 0 {
		r.Units = slices.Clone(c.GetUnits())
		r.UnitPolicy = c.GetUnitPolicy()
		if err := s.addUnits(r); err != nil {
			_ = s.plan.RemoveResource(r.Name)
			return s.fromPlanner(err, createFields)
		}
	}
	s.resources[r.Name] = r
	s.emit(fsmv1.Event_TYPE_RESOURCE_CREATED, nil, r)
	return okResource(r)
}

func (s *state) updateResource(c *fsmv1.UpdateResource) *fsmv1.Result {
	if fe := checkNameSet("update_resource.name", c.GetName(), s.ver); fe != nil {
		return fe.result()
	}
	old, found := s.resources[c.GetName()]
	if !found {
		return notFound(fmt.Sprintf("resource %q not found", c.GetName()))
	}
	if fe := checkUpdateResource(c, s.ver); fe != nil {
		return fe.result()
	}
	if bad := s.unitsUnsupported("update_resource.name", old.GetName(), "its capacity is its number of units; take a unit out of service with a unit down window"); bad != nil {
		return bad
	}
	from, to := s.now, planner.MaxTime
	if c.FromMillis != nil {
		// The past cannot change: a window that began earlier applies
		// from the log time on.
		from = max(c.GetFromMillis(), s.now)
	}
	if c.ToMillis != nil {
		if c.GetToMillis() <= from {
			return invalid("update_resource.to_millis", fmt.Sprintf("window ends before the log time %d", s.now))
		}
		to = c.GetToMillis()
	}
	if err := s.plan.SetCapacity(old.GetName(), from, to, c.GetCapacity()); err != nil {
		return s.fromPlanner(err, updateFields)
	}
	n := proto.CloneOf(old)
	n.UpdatedVersion = s.index
	if from == s.now && to == planner.MaxTime {
		// The whole future now has one capacity: earlier windows are moot.
		n.Capacity = c.GetCapacity()
		n.Windows = nil
	} else {
		n.Windows = slices.DeleteFunc(n.Windows, func(w *fsmv1.CapacityWindow) bool { return w.GetToMillis() <= s.now })
		n.Windows = append(n.Windows, &fsmv1.CapacityWindow{FromMillis: from, ToMillis: to, Capacity: c.GetCapacity()})
	}
	s.resources[n.Name] = n
	s.emit(fsmv1.Event_TYPE_RESOURCE_UPDATED, nil, n)
	s.replan([]*fsmv1.Part{{Resource: n.Name}})
	return okResource(n)
}

// clearResource gives back everything booked on resource, in ID order,
// as the operator would one by one: holds are aborted, commitments
// (reservations and variable jobs) cancelled, and pending modifications
// onto the resource dropped, each with its own event. It is the first
// half of a forced delete, which therefore happens in one entry: a crash
// can leave all of it or none of it, never half.
func (s *state) clearResource(resource string) {
	var ids []string
	var sc rowScan
	s.byID.Ascend(func(row string) bool {
		if err := scanRow(row, &sc); err != nil {
			panic(fmt.Sprintf("fsm: stored reservation %q: %v", rowID(row), err))
		}
		if sc.books(resource) {
			ids = append(ids, rowID(row))
		}
		return true
	})
	op := &fsmv1.Command{Privileged: true}
	for _, id := range ids {
		r, ok := s.resv.get(id)
		if !ok {
			continue
		}
		op.Payload = &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}
		onRow := false
		for _, p := range r.GetParts() {
			onRow = onRow || p.GetResource() == resource
		}
		switch st := r.GetState(); {
		case st == fsmv1.Reservation_STATE_HELD, st == fsmv1.Reservation_STATE_PENDING_APPROVAL:
			s.abort(op)
		case !onRow && r.GetPending() != nil:
			// Only the pending new shape is on the resource: drop it,
			// keep the reservation.
			s.abort(op)
		case st == fsmv1.Reservation_STATE_COMMITTED, st == fsmv1.Reservation_STATE_ACTIVE, st == fsmv1.Reservation_STATE_DEGRADED:
			s.cancel(op)
		}
	}
}

func (s *state) deleteResource(c *fsmv1.DeleteResource) *fsmv1.Result {
	if fe := checkNameSet("delete_resource.name", c.GetName(), s.ver); fe != nil {
		return fe.result()
	}
	old, found := s.resources[c.GetName()]
	if !found {
		return notFound(fmt.Sprintf("resource %q not found", c.GetName()))
	}
	if c.GetForce() {
		s.clearResource(old.GetName())
	}
	if n := s.itemsOn(old.GetName()); n > 0 {
		return conflict(fsmv1.Conflict_KIND_IN_USE, fmt.Sprintf("resource %q carries %d scheduled reservation(s) or job(s)", old.GetName(), n))
	}
	for _, d := range old.GetUnitDowns() {
		_ = s.plan.Remove(downKey(old.GetName(), d.GetId()))
	}
	if err := s.plan.RemoveResource(old.GetName()); err != nil {
		return s.fromPlanner(err, deleteFields)
	}
	delete(s.units, old.GetName())
	delete(s.resources, old.GetName())
	s.emit(fsmv1.Event_TYPE_RESOURCE_DELETED, nil, old)
	return okResource(old)
}
