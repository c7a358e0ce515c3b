package fsm

import (
	"errors"
	"fmt"
	"math"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// Co-reservation (TYPE_CO_RESERVE): m sub-requests placed over candidate
// resources by Scheduler.CoReserve, all or nothing. Sub-request i becomes
// its own scheduled reservation row "<id>/<i>" (the scheduler's item ID),
// so Cancel, Complete, violations and snapshots treat it like any other
// reservation admitted through the scheduler.

// coSubID is the row and scheduler item ID of sub-request i; '/' is not
// allowed in client IDs, so it never collides with one.
func coSubID(id string, i int) string { return fmt.Sprintf("%s/%d", id, i) }

// coReserve applies TYPE_CO_RESERVE.
func (s *state) coReserve(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetCoReserve()
	id, bad := s.newID(cmd, "co_reserve.id", c.GetId())
	if bad != nil {
		return bad
	}
	if bad := s.checkCoReserve(id, c); bad != nil {
		return bad
	}
	if bad := s.coReserveLimits(cmd.GetOwner(), c); bad != nil {
		return bad
	}
	subs := make([]planner.SubRequest, len(c.GetSubs()))
	for i, sub := range c.GetSubs() {
		subs[i] = planner.SubRequest{Amount: sub.GetAmount(), Start: sub.GetStartMillis(), Duration: sub.GetDurationMillis()}
	}
	minJoint := float64(c.GetMinJointPermille()) / 1000
	adm, err := s.scheduler().CoReserve(id, cmd.GetOwner(), subs, c.GetCandidates(), minJoint)
	if err != nil {
		if errors.Is(err, planner.ErrNoCapacity) {
			return rejected(planner.Decision{}, fmt.Sprintf("co-reservation not admitted: %v", err))
		}
		return s.coPlannerError(err)
	}
	out := &fsmv1.CoAdmission{JointPermille: uint32(math.Floor(adm.Joint * 1000))}
	for i, res := range adm.Mapping {
		sub := subs[i]
		r := s.newRow(cmd, coSubID(id, i), c.GetLabels(), []planner.Part{{Resource: res, Amount: sub.Amount}},
			sub.Start, sub.Start+sub.Duration)
		r.State = fsmv1.Reservation_STATE_COMMITTED
		r.ProbabilityPermille = toPermille(adm.Probability[i])
		// A placement that did not fit rigidly is booked partly or wholly
		// beyond the free capacity.
		if it, ok := s.pol.sched.Get(r.Id); ok && it.Overbooked > 0 {
			r.Relaxed = true
			s.pol.relaxedAdmissions++
		}
		s.put(r.Id, r)
		s.emit(fsmv1.Event_TYPE_COMMITTED, r, nil)
		out.Placements = append(out.Placements, &fsmv1.CoPlacement{
			Resource: res, ProbabilityPermille: r.ProbabilityPermille, Reservation: r,
		})
	}
	return &fsmv1.Result{Status: fsmv1.Result_STATUS_OK, CoAdmission: out}
}

// checkCoReserve validates a co-reservation before the scheduler sees it,
// so every refusal names the command's field and nothing is booked.
func (s *state) checkCoReserve(id string, c *fsmv1.CoReserve) *fsmv1.Result {
	if fe := checkCoReserveHead(id, c); fe != nil {
		return fe.result()
	}
	seen := make(map[string]bool, len(c.GetCandidates()))
	for i, name := range c.GetCandidates() {
		_, exists := s.resources[name]
		if fe := checkCoCandidate(i, name, exists, seen); fe != nil {
			return fe.result()
		}
		if bad := s.unitsUnsupported(fmt.Sprintf("co_reserve.candidates[%d]", i), name, "co-reservation is not supported on it"); bad != nil {
			return bad
		}
	}
	for i, sub := range c.GetSubs() {
		if fe := checkCoSub(i, sub); fe != nil {
			return fe.result()
		}
		if sub.GetStartMillis() < s.now {
			return invalid(fmt.Sprintf("co_reserve.subs[%d].start_millis", i), fmt.Sprintf("must not be before the log time %d", s.now))
		}
		if fe := checkCoSubEnd(i, sub, s.ver); fe != nil {
			return fe.result()
		}
		if s.resv.has(coSubID(id, i)) {
			return conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, fmt.Sprintf("reservation %q already exists", coSubID(id, i)))
		}
	}
	return nil
}

// coPlannerError maps a scheduler refusal the checks above did not
// anticipate, renaming its argument names to the command's fields.
func (s *state) coPlannerError(err error) *fsmv1.Result {
	var fe *planner.FieldError
	if errors.As(err, &fe) {
		f := fe.Field
		for _, suf := range []string{"start", "duration"} {
			if strings.HasSuffix(f, "."+suf) {
				f += "_millis"
			}
		}
		if f == "min_joint" {
			f = "min_joint_permille"
		}
		return invalid("co_reserve."+f, fe.Reason)
	}
	return s.fromPlanner(err, fieldMap{"co_reserve.", nil})
}
