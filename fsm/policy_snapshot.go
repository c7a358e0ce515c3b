package fsm

import (
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// Snapshot of the scheduler: its live items (Snapshot.scheduler_items) and
// release model (Snapshot.release_model). Policies are on the resource
// rows. A state that never used the scheduler writes neither, so its
// snapshot is byte-identical to one written before policies existed.

// captureScheduler adds the scheduler's state to msg.
func (s *state) captureScheduler(msg *fsmv1.Snapshot) {
	if s.pol.sched == nil {
		return
	}
	st := s.pol.sched.Export()
	for _, it := range st.Items {
		msg.SchedulerItems = append(msg.SchedulerItems, &fsmv1.SchedulerItem{
			Id:              it.ID,
			Owner:           it.Owner,
			Kind:            itemKind(it.Kind),
			Resource:        it.Resource,
			Amount:          it.Amount,
			StartMillis:     it.Start,
			EndMillis:       it.End,
			NotBeforeMillis: it.NotBefore,
			Running:         it.Running,
			Pushes:          uint32(it.Pushes),
			Overbooked:      it.Overbooked,
		})
	}
	rel := st.Releases
	if len(rel.Global) == 0 && len(rel.Owners) == 0 &&
		rel.PriorWeight == planner.DefaultPriorWeight && rel.MinOwnerSamples == planner.DefaultMinOwnerSamples {
		return
	}
	m := &fsmv1.ReleaseModel{PriorWeight: rel.PriorWeight, MinOwnerSamples: rel.MinOwnerSamples, Global: ratioCounts(rel.Global)}
	for _, o := range rel.Owners {
		m.Owners = append(m.Owners, &fsmv1.OwnerRatios{Owner: o.Owner, Counts: ratioCounts(o.Counts)})
	}
	msg.ReleaseModel = m
}

func itemKind(k planner.ItemKind) fsmv1.Reservation_Kind {
	if k == planner.KindVariable {
		return fsmv1.Reservation_KIND_VARIABLE_JOB
	}
	return fsmv1.Reservation_KIND_RESERVATION
}

func ratioCounts(rc []planner.RatioCount) []*fsmv1.RatioCount {
	out := make([]*fsmv1.RatioCount, len(rc))
	for i, c := range rc {
		out[i] = &fsmv1.RatioCount{Permille: uint32(c.Permille), Count: c.Count}
	}
	return out
}

func plannerCounts(rc []*fsmv1.RatioCount) []planner.RatioCount {
	out := make([]planner.RatioCount, len(rc))
	for i, c := range rc {
		out[i] = planner.RatioCount{Permille: int64(c.GetPermille()), Count: c.GetCount()}
	}
	return out
}

// restoreScheduler rebuilds the scheduler of a state being restored, after
// the resources and the plain reservations are in its planner: it books
// the planned part of every item from the origin on, then hands items,
// policies and release model to planner.RestoreScheduler (which checks the
// bookings). Every item must belong to a live scheduled row and every
// such row that the scheduler still tracks (scheduledIDs lists the
// scheduled rows, in ID order) must have an item.
func (s *state) restoreScheduler(msg *fsmv1.Snapshot, scheduledIDs []string) error {
	var st planner.SchedulerState
	for _, r := range msg.GetResources() {
		if p := r.GetPolicy(); p != nil {
			if bad := checkPolicySpec("policy", p); bad != nil {
				return badf("resource %q: %s", r.GetName(), bad.result().GetMessage())
			}
			if pol := plannerPolicy(p); pol.Policy != planner.PolicyReject {
				st.Policies = append(st.Policies, planner.NamedPolicy{Resource: r.GetName(), Policy: pol})
			}
		}
	}
	origin := s.plan.Origin()
	items := make(map[string]bool, len(msg.GetSchedulerItems()))
	for i, it := range msg.GetSchedulerItems() {
		r, ok := s.resv.get(it.GetId())
		if !ok || !scheduled(r) || isTerminal(r.GetState()) || items[it.GetId()] {
			return badf("scheduler_items[%d]: %q is not a live scheduled reservation or job, or repeats", i, it.GetId())
		}
		items[it.GetId()] = true
		if it.GetKind() != r.GetKind() || len(r.GetParts()) != 1 || r.GetParts()[0].GetResource() != it.GetResource() ||
			r.GetParts()[0].GetAmount() != it.GetAmount() || r.GetStartMillis() != it.GetStartMillis() || r.GetEndMillis() != it.GetEndMillis() ||
			it.GetRunning() != (r.GetState() == fsmv1.Reservation_STATE_ACTIVE) && r.GetState() != fsmv1.Reservation_STATE_HELD {
			return badf("scheduler_items[%d]: %q does not match its row", i, it.GetId())
		}
		kind := planner.KindReservation
		if it.GetKind() == fsmv1.Reservation_KIND_VARIABLE_JOB {
			kind = planner.KindVariable
		}
		if planned := it.GetAmount() - it.GetOverbooked(); planned > 0 && it.GetOverbooked() >= 0 {
			part := []*fsmv1.Part{{Resource: it.GetResource(), Amount: planned}}
			if err := bookFrom(s.plan, it.GetId(), part, it.GetStartMillis(), it.GetEndMillis(), origin); err != nil {
				return badf("scheduler_items[%d]: %v", i, err)
			}
		}
		st.Items = append(st.Items, planner.Item{
			ID: it.GetId(), Owner: it.GetOwner(), Kind: kind, Resource: it.GetResource(), Amount: it.GetAmount(),
			Start: it.GetStartMillis(), End: it.GetEndMillis(), NotBefore: it.GetNotBeforeMillis(),
			Running: it.GetRunning(), Pushes: int(it.GetPushes()), Overbooked: it.GetOverbooked(),
		})
	}
	for _, id := range scheduledIDs {
		r, _ := s.resv.get(id)
		st := r.GetState()
		tracked := st == fsmv1.Reservation_STATE_COMMITTED || st == fsmv1.Reservation_STATE_ACTIVE ||
			st == fsmv1.Reservation_STATE_HELD && r.GetShortUnits() == 0
		if scheduled(r) && tracked && !items[r.GetId()] {
			return badf("reservation %q is scheduled but has no scheduler item", r.GetId())
		}
	}
	st.Releases = planner.ReleaseState{PriorWeight: planner.DefaultPriorWeight, MinOwnerSamples: planner.DefaultMinOwnerSamples}
	if m := msg.GetReleaseModel(); m != nil {
		st.Releases = planner.ReleaseState{PriorWeight: m.GetPriorWeight(), MinOwnerSamples: m.GetMinOwnerSamples(), Global: plannerCounts(m.GetGlobal())}
		for i, o := range m.GetOwners() {
			if i > 0 && o.GetOwner() <= m.GetOwners()[i-1].GetOwner() {
				return badf("release_model.owners not sorted at %d", i)
			}
			st.Releases.Owners = append(st.Releases.Owners, planner.OwnerCounts{Owner: o.GetOwner(), Counts: plannerCounts(o.GetCounts())})
		}
		if st.Releases.PriorWeight < 0 || st.Releases.MinOwnerSamples < 0 {
			return badf("release_model: negative prior settings")
		}
	}
	if len(st.Policies) == 0 && len(st.Items) == 0 && msg.GetReleaseModel() == nil {
		return nil
	}
	sch, err := planner.RestoreScheduler(s.plan, st)
	if err != nil {
		return fmt.Errorf("%w: scheduler: %v", ErrBadSnapshot, err)
	}
	s.pol.sched = sch
	return nil
}
