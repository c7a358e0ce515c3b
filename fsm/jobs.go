package fsm

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// Rows admitted through the scheduler: variable jobs, and reservations on
// MOVE_VARIABLE and RELAXED resources.

// schedulerError turns a scheduler error into a result: field errors are
// renamed to the command's fields (prefix, the single part as part or
// parts[0], and the scheduler's argument names via rename).
func (s *state) schedulerError(err error, prefix, partField string, rename map[string]string) *fsmv1.Result {
	var fe *planner.FieldError
	if errors.As(err, &fe) {
		f := fe.Field
		if rest, ok := strings.CutPrefix(f, "parts[0]"); ok {
			f = partField + rest
		} else if r, ok := rename[f]; ok {
			f = r
		}
		return invalid(prefix+f, fe.Reason)
	}
	return s.fromPlanner(err, fieldMap{prefix, nil})
}

// routeScheduled decides whether a request goes through the scheduler:
// when a part is on a MOVE_VARIABLE or RELAXED resource. Such a request
// must have exactly one part (scheduler items are single-resource).
func (s *state) routeScheduled(parts []planner.Part) (bool, *fsmv1.Result) {
	for _, p := range parts {
		if pol := s.resourcePolicy(p.Resource); pol != planner.PolicyReject {
			if len(parts) != 1 {
				return true, invalid("request.parts", fmt.Sprintf(
					"resource %q has admission policy %s: a request on it must have exactly one part", p.Resource, pol))
			}
			return true, nil
		}
	}
	return false, nil
}

// admitScheduled admits a one-part request through the scheduler. With an
// exact start it asks Scheduler.Reserve there. Otherwise it takes the
// earliest rigid fit in [not_before, deadline] that the planner finds
// (it counts every planned job) and, when there is none, asks
// Scheduler.Reserve at not_before, where the policy may move variable
// jobs or admit by overlap.
func (s *state) admitScheduled(owner, id string, exact bool, pr planner.Request) (int64, planner.Admission, *fsmv1.Result) {
	rename := map[string]string{"start": "start_millis", "duration": "duration_millis"}
	start := pr.NotBefore
	var found planner.Decision
	if !exact {
		d, err := s.plan.Find(pr)
		if err != nil {
			return 0, planner.Admission{}, s.fromPlanner(err, requestFields)
		}
		found = d
		if d.Fits {
			start = d.Start
		} else {
			rename["start"] = "not_before_millis"
		}
	}
	adm, err := s.scheduler().Reserve(id, owner, pr.Parts[0], start, pr.Duration)
	if err == nil {
		return start, adm, nil
	}
	if !errors.Is(err, planner.ErrNoCapacity) {
		return 0, planner.Admission{}, s.schedulerError(err, "request.", "parts[0]", rename)
	}
	if exact {
		found, _ = s.plan.Find(pr)
	}
	return 0, planner.Admission{}, rejected(planner.Decision{LaterOK: found.LaterOK, LaterStart: found.LaterStart},
		fmt.Sprintf("not admitted on %q under its policy: %v", pr.Parts[0].Resource, errors.Unwrap(err)))
}

// markAdmission records the scheduler's decision on a new row and counts it.
func (s *state) markAdmission(r *fsmv1.Reservation, adm planner.Admission) {
	r.ProbabilityPermille = toPermille(adm.Probability)
	r.Relaxed = adm.Relaxed
	if adm.Relaxed {
		s.pol.relaxedAdmissions++
	}
	s.pol.pushes += int64(len(adm.Moved))
}

// submitJob applies TYPE_SUBMIT_JOB: a variable job planned at its
// earliest start by the scheduler, stored as COMMITTED.
func (s *state) submitJob(cmd *fsmv1.Command) *fsmv1.Result {
	j := cmd.GetSubmitJob()
	id, bad := s.newID(cmd, "submit_job.id", j.GetId())
	if bad != nil {
		return bad
	}
	if fe := checkSubmitJob(j, s.ver); fe != nil {
		return fe.result()
	}
	if s.ver >= versionEdge && checkSubmitJobPlan(j, 1) == nil {
		// The end-of-time bound is the last of the job's stateless
		// checks; it comes before the scheduler's so that nothing is
		// planned to end after it.
		if fe := checkSubmitJobPlan(j, s.ver); fe != nil {
			return fe.result()
		}
	}
	if bad := s.unitsUnsupported("submit_job.part.resource", j.GetPart().GetResource(), "variable jobs are not supported on it"); bad != nil {
		return bad
	}
	nb := max(j.GetNotBeforeMillis(), s.now)
	part := planner.Part{Resource: j.GetPart().GetResource(), Amount: j.GetPart().GetAmount()}
	// Its start moves until it runs: only the limits of the request
	// itself apply (duration, and the horizon from its earliest start).
	if _, bad := s.checkRequestLimits(cmd.GetOwner(), []planner.Part{part}, nb, addSat(nb, j.GetDurationMillis()), 0, 0); bad != nil {
		return bad
	}
	start, err := s.scheduler().Submit(id, cmd.GetOwner(), part, j.GetDurationMillis(), nb)
	if err != nil {
		if errors.Is(err, planner.ErrNoCapacity) {
			return rejected(planner.Decision{}, fmt.Sprintf("job never fits on %q: %v", part.Resource, errors.Unwrap(err)))
		}
		return s.schedulerError(err, "submit_job.", "part",
			map[string]string{"duration": "duration_millis", "not_before": "not_before_millis"})
	}
	r := s.newRow(cmd, id, j.GetLabels(), []planner.Part{part}, start, start+j.GetDurationMillis())
	r.State, r.Kind, r.ProbabilityPermille, r.NotBeforeMillis = fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_KIND_VARIABLE_JOB, 1000, nb
	s.put(id, r)
	s.emit(fsmv1.Event_TYPE_JOB_SUBMITTED, r, nil)
	return okResult(r)
}

// releaseRow gives back what a live row books: a scheduled row leaves the
// scheduler (whose re-planning may move variable jobs), any other row
// frees its planner booking. Rows the scheduler already forgot (violated
// or degraded) have nothing left to give back.
func (s *state) releaseRow(r *fsmv1.Reservation) {
	if !scheduled(r) {
		s.releaseOwn(r)
		s.replan(r.GetParts())
		return
	}
	if s.pol.sched == nil {
		return
	}
	if err := s.scheduler().Drop(r.GetId()); err == nil {
		s.syncMoves()
	}
}

// replan lets the scheduler re-plan waiting variable jobs (and grow
// overbooked admissions) into capacity a plain row just freed on parts.
func (s *state) replan(parts []*fsmv1.Part) {
	if !s.hasItems() {
		return
	}
	for _, p := range parts {
		// Not through scheduler(): only moved jobs (compress) change the
		// next event; grown overbooked admissions (claim) do not.
		s.pol.sched.Replan(p.GetResource())
		if len(s.pol.sched.Moves()) > 0 {
			s.pol.dueValid = false
			s.syncMoves()
		}
	}
}

// afterCommit finishes the commit of a scheduled hold: one that began
// while held is ACTIVE at once, one that was violated while held (it has
// short_units) is DEGRADED. It returns the row as stored.
func (s *state) afterCommit(n *fsmv1.Reservation) *fsmv1.Reservation {
	if !scheduled(n) {
		return n
	}
	switch it, live := s.scheduler().Get(n.GetId()); {
	case n.GetShortUnits() > 0:
		// n was stored (and emitted): change a copy.
		d := s.change(proto.CloneOf(n))
		d.State = fsmv1.Reservation_STATE_DEGRADED
		s.put(d.Id, d)
		s.emit(fsmv1.Event_TYPE_VIOLATED, d, nil)
		return d
	case live && it.Running:
		a := s.change(proto.CloneOf(n))
		a.State = fsmv1.Reservation_STATE_ACTIVE
		s.put(a.Id, a)
		s.emit(fsmv1.Event_TYPE_ACTIVATED, a, nil)
		return a
	}
	return n
}

// completeScheduled ends a scheduled row early. A running one completes
// at the log time only (Scheduler.Complete records the actual against the
// requested duration in the release model and re-plans waiting jobs into
// the freed capacity); a DEGRADED one, which the scheduler no longer
// tracks, completes like a plain reservation.
func (s *state) completeScheduled(c *fsmv1.Complete, r *fsmv1.Reservation) *fsmv1.Result {
	at := s.now
	if c.AtMillis != nil {
		at = max(c.GetAtMillis(), s.now)
	}
	st := r.GetState()
	if st != fsmv1.Reservation_STATE_ACTIVE && st != fsmv1.Reservation_STATE_DEGRADED {
		res := wrongState(r, "complete")
		res.Message += ": a variable job or a reservation on a policy resource completes only after it has started (cancel gives the whole interval back)"
		return res
	}
	if at >= r.GetEndMillis() {
		return invalid("complete.at_millis", fmt.Sprintf("must be before the booked end %d", r.GetEndMillis()))
	}
	if st == fsmv1.Reservation_STATE_ACTIVE {
		if at != s.now {
			return invalid("complete.at_millis", "a running variable job or reservation on a policy resource completes at the log time only")
		}
		if _, err := s.scheduler().Complete(r.GetId(), at); err != nil {
			return s.schedulerError(err, "complete.", "", map[string]string{"at": "at_millis"})
		}
	} else {
		s.scheduler().Releases.Record(r.GetOwner(), r.GetEndMillis()-r.GetStartMillis(), at-r.GetStartMillis())
	}
	n := s.endEarly(r, at)
	if st == fsmv1.Reservation_STATE_ACTIVE {
		s.syncMoves()
	}
	return okResult(n)
}

// syncMoves copies the variable jobs the last scheduler call re-planned
// (Scheduler.Moves) into their rows: each gets its new interval and push
// count, a REPLANNED event (in the order the scheduler moved them) and an
// entry in the result's moves. It costs O(moves), not O(items).
func (s *state) syncMoves() {
	if s.pol.sched == nil {
		return
	}
	for _, m := range s.pol.sched.Moves() {
		r, ok := s.resv.get(m.ID)
		it, live := s.pol.sched.Get(m.ID)
		if !ok || !live {
			continue
		}
		n := s.change(r)
		n.StartMillis, n.EndMillis, n.Pushes = m.To, m.To+(r.GetEndMillis()-r.GetStartMillis()), uint32(it.Pushes)
		s.put(n.Id, n)
		s.pol.moves = append(s.pol.moves, &fsmv1.Move{Id: m.ID, FromMillis: m.From, ToMillis: m.To})
		s.emit(fsmv1.Event_TYPE_REPLANNED, n, nil)
	}
}

// takeMoves returns the moves of the current entry sorted by job ID, a
// job moved twice reported once from its first to its last start, and
// clears them.
func (s *state) takeMoves() []*fsmv1.Move {
	ms := s.pol.moves
	s.pol.moves = nil
	if len(ms) == 0 {
		return nil
	}
	slices.SortStableFunc(ms, func(a, b *fsmv1.Move) int { return cmp.Compare(a.GetId(), b.GetId()) })
	out := ms[:0]
	for _, m := range ms {
		if n := len(out); n > 0 && out[n-1].GetId() == m.GetId() {
			out[n-1].ToMillis = m.GetToMillis()
			continue
		}
		out = append(out, m)
	}
	return slices.DeleteFunc(out, func(m *fsmv1.Move) bool { return m.GetFromMillis() == m.GetToMillis() })
}
