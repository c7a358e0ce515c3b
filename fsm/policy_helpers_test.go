package fsm

import (
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// ---- policy command builders ----

var (
	REJECT  = fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT
	MOVE    = fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE
	RELAXED = fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED
	JOB     = fsmv1.Reservation_KIND_VARIABLE_JOB
)

func spec(p fsmv1.AdmissionPolicy, vstar, pushes uint32) *fsmv1.PolicySpec {
	return &fsmv1.PolicySpec{Policy: p, MinSuccessPermille: vstar, MaxPushes: pushes}
}

func createPolicyRes(name string, capacity int64, p *fsmv1.PolicySpec) *fsmv1.Command {
	c := createRes(name, capacity)
	c.GetCreateResource().Policy = p
	return c
}

func setPolicy(name string, p *fsmv1.PolicySpec) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_SET_POLICY, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_SetPolicy{SetPolicy: &fsmv1.SetPolicy{Name: name, Policy: p}}}
}

func submitJob(id, res string, amount, dur, notBefore int64, opts ...reqOpt) *fsmv1.Command {
	c := &fsmv1.Command{Type: fsmv1.Command_TYPE_SUBMIT_JOB, Owner: "alice", Payload: &fsmv1.Command_SubmitJob{SubmitJob: &fsmv1.SubmitJob{
		Id: id, Part: part(res, amount), DurationMillis: dur, NotBeforeMillis: notBefore,
	}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ---- invariants of scheduled rows ----

// bookedParts returns what row r books in the planner: its parts, or for
// a scheduled row the scheduler's planned amount (nil when nothing is
// booked: degraded, violated while held, or wholly overbooked).
func bookedParts(s *state, r *fsmv1.Reservation) []*fsmv1.Part {
	if !scheduled(r) {
		return r.GetParts()
	}
	if s.pol.sched == nil {
		return nil
	}
	it, ok := s.pol.sched.Get(r.GetId())
	if !ok || it.Amount == it.Overbooked {
		return nil
	}
	return []*fsmv1.Part{{Resource: it.Resource, Amount: it.Amount - it.Overbooked}}
}

// checkScheduled checks the scheduler against the table and the planner
// and returns how many planner bookings belong to scheduler items:
// every item is a live scheduled row with the same resource, amount and
// interval, started exactly when its row is ACTIVE (a hold may be either);
// its planned part is booked; every scheduled row the scheduler should
// track has an item; degraded rows book nothing; only RELAXED resources
// carry overbooked items.
func checkScheduled(t testing.TB, s *state) int {
	t.Helper()
	n := 0
	rows := allRows(t, s)
	if s.pol.sched != nil {
		for name := range s.resources {
			for _, it := range s.pol.sched.Items(name) {
				r, ok := rows[it.ID]
				if !ok || !scheduled(r) || isTerminal(r.GetState()) {
					t.Fatalf("scheduler item %s has row %v", it.ID, r)
				}
				p := r.GetParts()[0]
				if len(r.GetParts()) != 1 || p.GetResource() != it.Resource || p.GetAmount() != it.Amount ||
					r.GetStartMillis() != it.Start || r.GetEndMillis() != it.End {
					t.Fatalf("item %+v, row %v", it, r)
				}
				if st := r.GetState(); st != HELD && (st == ACTIVE) != it.Running {
					t.Fatalf("item %s running=%v, row %s", it.ID, it.Running, st)
				}
				if it.Kind == planner.KindVariable && (r.GetKind() != JOB || r.GetPushes() != uint32(it.Pushes) || r.GetNotBeforeMillis() != it.NotBefore) {
					t.Fatalf("job %+v, row %v", it, r)
				}
				if it.Overbooked > 0 && s.resourcePolicy(name) != planner.PolicyRelaxed {
					t.Fatalf("item %s overbooks %d on %s, which is %v", it.ID, it.Overbooked, name, s.resourcePolicy(name))
				}
				planned := it.Amount - it.Overbooked
				b, booked := s.plan.Get(it.ID)
				if booked {
					n++
				}
				if planned > 0 && it.End > s.plan.Origin() {
					if !booked || len(b.Parts) != 1 || b.Parts[0].Amount != planned || b.End != it.End {
						t.Fatalf("item %+v: planner has %+v (%v)", it, b, booked)
					}
				}
			}
		}
	}
	for id, r := range rows {
		if !scheduled(r) {
			continue
		}
		var live bool
		if s.pol.sched != nil {
			_, live = s.pol.sched.Get(id)
		}
		switch st := r.GetState(); {
		case st == COMMITTED, st == ACTIVE, st == HELD && r.GetShortUnits() == 0:
			if !live {
				t.Fatalf("%s row %s has no scheduler item", id, st)
			}
		case live:
			t.Fatalf("%s row %s still has a scheduler item", id, st)
		}
		if _, ok := s.plan.Get(id); ok && !live {
			t.Fatalf("%s (%s) is booked in the planner without a scheduler item", id, r.GetState())
		}
	}
	return n
}
