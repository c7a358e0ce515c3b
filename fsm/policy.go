package fsm

import (
	"fmt"
	"math"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// Admission policies (issue #7). A resource's policy lives on its row and
// in the planner.Scheduler that wraps the state's planner. Requests on a
// REJECT resource book the planner directly, exactly as before policies
// existed; a request with a part on a MOVE_VARIABLE or RELAXED resource,
// and every variable job, goes through the scheduler ("scheduled" rows,
// see scheduled). DESIGN.md explains the rules that keep the two in step.

// DefaultMinSuccessPermille is v* of a RELAXED resource that asks for none.
const DefaultMinSuccessPermille = 800

// policyState is the scheduler and what the fsm keeps beside it.
type policyState struct {
	// sched is created on first use (scheduler()), so a state that never
	// meets a policy or job pays nothing for it.
	sched *planner.Scheduler
	// moves collects the variable jobs re-planned by the current entry.
	moves []*fsmv1.Move
	// Counters since this process started or restored (not replicated
	// state: they feed metrics only).
	relaxedAdmissions int64
	violations        map[string]int64
	pushes            int64
	// due caches Scheduler.NextEvent (a scan of every item) while
	// dueValid: every entry asks for it at least twice, and only calls
	// through scheduler() can change it.
	due             int64
	dueOK, dueValid bool
}

// scheduler returns the state's scheduler, creating it on first use. Use
// it for every call that may change the plan (it drops the cached next
// event); reads may use s.pol.sched.
func (s *state) scheduler() *planner.Scheduler {
	s.pol.dueValid = false
	if s.pol.sched == nil {
		s.pol.sched = planner.NewScheduler(s.plan)
	}
	return s.pol.sched
}

// nextEvent is Scheduler.NextEvent, cached until the next scheduler()
// call.
func (s *state) nextEvent() (int64, bool) {
	if !s.pol.dueValid {
		s.pol.due, s.pol.dueOK = s.pol.sched.NextEvent()
		s.pol.dueValid = true
	}
	return s.pol.due, s.pol.dueOK
}

// hasItems reports whether the scheduler manages any live item.
func (s *state) hasItems() bool { return s.pol.sched != nil && s.pol.sched.Len() > 0 }

// resourcePolicy returns the admission policy of resource (REJECT when
// none was set, or when there is no such resource: the scheduler keeps the
// policy of a deleted one until the name is created again).
func (s *state) resourcePolicy(resource string) planner.Policy {
	if s.pol.sched == nil {
		// No policy was ever set: no lookup of the resource.
		return planner.PolicyReject
	}
	if _, ok := s.resources[resource]; !ok {
		return planner.PolicyReject
	}
	return s.pol.sched.Policy(resource).Policy
}

// scheduled reports whether a row is managed by the scheduler: every
// variable job, and every reservation admitted through a MOVE_VARIABLE or
// RELAXED resource (those carry probability_permille >= 1). Their time
// lifecycle (start, finish, violation) follows the scheduler's Advance
// instead of the table's timers, except for hold expiry.
func scheduled(r *fsmv1.Reservation) bool {
	return r.GetKind() == fsmv1.Reservation_KIND_VARIABLE_JOB || r.GetProbabilityPermille() > 0
}

// toPermille converts a probability to permille by the one rounding rule
// of the log: floor. Admitted reservations get at least 1, so that a
// stored 0 always means "not admitted by the scheduler".
func toPermille(p float64) uint32 {
	return uint32(min(max(math.Floor(p*1000), 1), 1000))
}

// checkPolicySpec validates a policy given with a command (nil is REJECT).
func checkPolicySpec(field string, p *fsmv1.PolicySpec) *FieldError {
	pol := p.GetPolicy()
	switch pol {
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_UNSPECIFIED, fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT,
		fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE, fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED:
	default:
		return fieldErr(field+".policy", fmt.Sprintf("unknown admission policy %d", int32(pol)))
	}
	if v := p.GetMinSuccessPermille(); v != 0 {
		if pol != fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED {
			return fieldErr(field+".min_success_permille", "only RELAXED uses it (leave it 0)")
		}
		if v > 1000 {
			return fieldErr(field+".min_success_permille", "must be in 1..1000 (0 selects 800)")
		}
	}
	if p.GetMaxPushes() != 0 && pol != fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE {
		return fieldErr(field+".max_pushes", "only MOVE_VARIABLE uses it (leave it 0)")
	}
	return nil
}

// normalPolicy returns the spec as stored on the resource row: the policy
// named explicitly and its defaults filled in.
func normalPolicy(p *fsmv1.PolicySpec) *fsmv1.PolicySpec {
	n := &fsmv1.PolicySpec{Policy: p.GetPolicy()}
	switch n.Policy {
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_UNSPECIFIED:
		n.Policy = fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE:
		n.MaxPushes = p.GetMaxPushes()
		if n.MaxPushes == 0 {
			n.MaxPushes = planner.DefaultMaxPushes
		}
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED:
		n.MinSuccessPermille = p.GetMinSuccessPermille()
		if n.MinSuccessPermille == 0 {
			n.MinSuccessPermille = DefaultMinSuccessPermille
		}
	}
	return n
}

// plannerPolicy converts a validated spec. v* is permille/1000 in
// float64; the scheduler admits when its estimate is >= that value.
func plannerPolicy(p *fsmv1.PolicySpec) planner.ResourcePolicy {
	n := normalPolicy(p)
	switch n.GetPolicy() {
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE:
		return planner.ResourcePolicy{Policy: planner.PolicyMoveVariable, MaxPushes: int(n.GetMaxPushes())}
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED:
		return planner.ResourcePolicy{Policy: planner.PolicyRelaxed, MinSuccess: float64(n.GetMinSuccessPermille()) / 1000}
	}
	return planner.ResourcePolicy{}
}

// installPolicy gives a new resource its policy (spec may be nil) and
// returns the spec to store on its row (nil keeps rows created without a
// policy exactly as before policies existed). A name reused after a
// delete must not inherit the old resource's policy, hence the reset.
func (s *state) installPolicy(name string, spec *fsmv1.PolicySpec) (*fsmv1.PolicySpec, error) {
	if spec == nil && s.pol.sched == nil {
		return nil, nil
	}
	if err := s.scheduler().SetPolicy(name, plannerPolicy(spec)); err != nil {
		return nil, fmt.Errorf("policy of %q: %w", name, err)
	}
	if spec == nil {
		return nil, nil
	}
	return normalPolicy(spec), nil
}

// setPolicy applies TYPE_SET_POLICY. Two switches are refused because the
// scheduler's estimates and violation checks only see its own items: to
// RELAXED while reservations booked outside the scheduler (or pending
// modifications) use the resource, and away from RELAXED while relaxed
// admissions still overbook it. Switching to REJECT with planned variable
// jobs is allowed: jobs may live on any resource; they just stop being
// pushed by reservations.
func (s *state) setPolicy(c *fsmv1.SetPolicy) *fsmv1.Result {
	if fe := checkNameSet("set_policy.name", c.GetName(), s.ver); fe != nil {
		return fe.result()
	}
	old, found := s.resources[c.GetName()]
	if !found {
		return notFound(fmt.Sprintf("resource %q not found", c.GetName()))
	}
	if fe := checkPolicySpec("set_policy.policy", c.GetPolicy()); fe != nil {
		return fe.result()
	}
	if p := c.GetPolicy().GetPolicy(); p != fsmv1.AdmissionPolicy_ADMISSION_POLICY_UNSPECIFIED && p != fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT {
		if bad := s.unitsUnsupported("set_policy.policy", old.GetName(), "only the REJECT admission policy is supported on it"); bad != nil {
			return bad
		}
	}
	name := old.GetName()
	now, next := s.resourcePolicy(name), plannerPolicy(c.GetPolicy()).Policy
	if next == planner.PolicyRelaxed && now != planner.PolicyRelaxed {
		if n := s.unscheduledOn(name); n > 0 {
			return conflict(fsmv1.Conflict_KIND_IN_USE, fmt.Sprintf(
				"resource %q carries %d live reservation(s) or modification(s) booked outside the scheduler; "+
					"RELAXED needs every booking there to be admitted by it", name, n))
		}
	}
	if now == planner.PolicyRelaxed && next != planner.PolicyRelaxed {
		if n := s.overbookedOn(name); n > 0 {
			return conflict(fsmv1.Conflict_KIND_IN_USE, fmt.Sprintf(
				"resource %q carries %d relaxed admission(s) beyond its free capacity; it stays RELAXED until they end", name, n))
		}
	}
	if err := s.scheduler().SetPolicy(name, plannerPolicy(c.GetPolicy())); err != nil {
		return s.fromPlanner(err, fieldMap{"set_policy.policy.", nil})
	}
	n := proto.CloneOf(old)
	n.Policy = normalPolicy(c.GetPolicy())
	n.UpdatedVersion = s.index
	s.resources[name] = n
	s.emit(fsmv1.Event_TYPE_POLICY_CHANGED, nil, n)
	return okResource(n)
}

// unscheduledOn counts live rows not managed by the scheduler that book
// resource (a pending modification counts as well).
func (s *state) unscheduledOn(resource string) int {
	n := 0
	var sc rowScan
	s.byID.Ascend(func(row string) bool {
		if err := scanRow(row, &sc); err != nil {
			panic(fmt.Sprintf("fsm: stored reservation %q: %v", rowID(row), err))
		}
		if !isTerminal(sc.state) && !sc.scheduled() && sc.books(resource) {
			n++
		}
		return true
	})
	return n
}

// overbookedOn counts the scheduler's items on resource that hold units
// beyond the planned free capacity.
func (s *state) overbookedOn(resource string) int {
	if s.pol.sched == nil {
		return 0
	}
	n := 0
	for _, it := range s.pol.sched.Items(resource) {
		if it.Overbooked > 0 {
			n++
		}
	}
	return n
}

// itemsOn counts the scheduler's live items on resource.
func (s *state) itemsOn(resource string) int {
	if s.pol.sched == nil {
		return 0
	}
	return len(s.pol.sched.Items(resource))
}
