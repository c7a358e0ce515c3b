package fsm

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// The reservation commands: hold and reserve, commit, abort, cancel,
// two-phase modify and early completion.

// AutoID returns the ID the state machine assigns to a reservation created
// by log entry index without a client-chosen ID. IDs sort by index.
func AutoID(index uint64) string { return string(appendAutoID(nil, index)) }

// appendAutoID appends AutoID(index): the prefix and the index in 20
// zero-padded digits (what fmt's %020d writes for a uint64, without
// fmt's cost on every admission that takes its ID from the index).
func appendAutoID(b []byte, index uint64) []byte {
	b = append(b, AutoIDPrefix...)
	var digits [20]byte
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = byte('0' + index%10)
		index /= 10
	}
	return append(b, digits[:]...)
}

// GroupAutoID returns the ID the state machine assigns to the reservation
// of the n-th member (from 0, counting only the members that take their
// ID from the index) of the group entry at index: AutoID(index) for the
// first, so a group with one such member names it as if it were alone,
// and AutoID(index) + "-n" for the others. These IDs stay unique, sort in
// log order (index, then member) and keep the reserved prefix.
func GroupAutoID(index uint64, n int) string {
	b := make([]byte, 0, len(AutoIDPrefix)+20+1+3)
	b = appendAutoID(b, index)
	if n != 0 {
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// newID resolves the ID of a new row (empty: assigned from the log index)
// and checks it, and the owner, before anything is booked.
func (s *state) newID(cmd *fsmv1.Command, field, id string) (string, *fsmv1.Result) {
	check := id
	if s.ser.occurrence != "" && id == s.ser.occurrence {
		// A series occurrence: its ID is made of a checked series ID
		// and '@', which no client ID may contain (series.go).
		check = ""
	}
	if fe := checkNewRow(cmd, field, check); fe != nil {
		return "", fe.result()
	}
	if id == "" {
		id = GroupAutoID(s.index, s.autoN)
	}
	if s.resv.has(id) {
		return "", conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, fmt.Sprintf("reservation %q already exists", id))
	}
	s.absent = id
	return id, nil
}

// newRow returns a new HELD row created by the current entry.
func (s *state) newRow(cmd *fsmv1.Command, id string, labels map[string]string, parts []planner.Part, start, end int64) *fsmv1.Reservation {
	return &fsmv1.Reservation{
		Id:             id,
		Owner:          cmd.GetOwner(),
		Labels:         maps.Clone(labels),
		Parts:          sortedParts(parts),
		StartMillis:    start,
		EndMillis:      end,
		State:          fsmv1.Reservation_STATE_HELD,
		CreatedVersion: s.index,
		UpdatedVersion: s.index,
		CreatedMillis:  s.now,
		UpdatedMillis:  s.now,
	}
}

// hold admits a request and stores it as HELD, or as COMMITTED when commit
// is set (one-phase reserve).
func (s *state) hold(cmd *fsmv1.Command, commit bool) *fsmv1.Result {
	req := cmd.GetRequest()
	id, bad := s.newID(cmd, "request.id", req.GetId())
	if bad != nil {
		return bad
	}
	ttl, fe := checkRequest(&s.cfg, req, commit, s.ver)
	if fe != nil {
		return fe.result()
	}

	dur := req.GetDurationMillis()
	pr := planner.Request{Parts: plannerParts(req.GetParts()), Duration: dur}
	fields := requestFields
	if req.StartMillis != nil {
		fields = exactFields
		start := req.GetStartMillis()
		if start < s.now {
			return invalid("request.start_millis", fmt.Sprintf("must not be before the log time %d", s.now))
		}
		pr.NotBefore, pr.Deadline = start, planner.MaxTime
		if dur > 0 && dur <= planner.MaxTime-start {
			pr.Deadline = start + dur
		}
	} else {
		// checkRequest has checked the window.
		nb, dl := req.GetNotBeforeMillis(), req.GetDeadlineMillis()
		if dl == 0 {
			dl = lastEnd(s.ver)
		}
		pr.NotBefore, pr.Deadline = max(nb, s.now), dl
		if dur > 0 && dl != planner.MaxTime && dl-pr.NotBefore < dur {
			// The window was fine when sent but has passed in log time:
			// a rejection, with the earliest start without a deadline.
			late := pr
			late.Deadline = lastEnd(s.ver)
			d, err := s.findMapped(late)
			if err != nil {
				return s.fromPlanner(err, fields)
			}
			return rejected(planner.Decision{LaterOK: d.Fits, LaterStart: d.Start},
				fmt.Sprintf("booking window ends before log time %d leaves room for the duration", s.now))
		}
	}

	viaScheduler, bad := s.routeScheduled(pr.Parts)
	if bad != nil {
		return bad
	}
	owner := cmd.GetOwner()
	var d planner.Decision
	var adm planner.Admission
	var approval string
	var approvalTTL int64
	if viaScheduler {
		if why, _ := s.approvalNeeded(owner, pr.Parts, 0, dur); why != "" {
			return conflict(fsmv1.Conflict_KIND_APPROVAL_UNSUPPORTED, why+", which a MOVE_VARIABLE or RELAXED resource cannot hold for approval")
		}
		// The scheduler may move variable jobs as it admits, so the
		// limits are checked before it, at the exact start when there
		// is one, else at the earliest start the window allows.
		if ttl, bad = s.admissionLimits(owner, pr.Parts, pr.NotBefore, pr.NotBefore+dur, ttl, req.GetHoldTtlMillis(), req.StartMillis != nil); bad != nil {
			return bad
		}
		if d.Start, adm, bad = s.admitScheduled(owner, id, req.StartMillis != nil, pr); bad != nil {
			return bad
		}
	} else if s.hasUnitPart(pr.Parts) {
		if d, bad = s.reserveUnits(id, pr, fields); bad != nil {
			return bad
		}
	} else {
		var err error
		if d, err = s.plan.Reserve(id, pr); err != nil {
			if errors.Is(err, planner.ErrNoCapacity) {
				return rejected(d, "no common start in the booking window has enough free capacity")
			}
			return s.fromPlanner(err, fields)
		}
		// Limits are checked where the request was placed; a refusal
		// gives the placement back, so the entry changes nothing.
		if ttl, bad = s.admissionLimits(owner, pr.Parts, d.Start, d.Start+dur, ttl, req.GetHoldTtlMillis(), true); bad != nil {
			s.release(id)
			return bad
		}
		approval, approvalTTL = s.approvalNeeded(owner, pr.Parts, d.Start, d.Start+dur)
	}
	r := s.newRow(cmd, id, req.GetLabels(), pr.Parts, d.Start, d.Start+dur)
	if s.units != nil {
		r.Parts = s.withUnits(id, r.Parts)
	}
	if viaScheduler {
		s.markAdmission(r, adm)
	}
	if approval != "" {
		// Held like a hold until an operator decides or the wait ends.
		r.State = fsmv1.Reservation_STATE_PENDING_APPROVAL
		r.HoldExpiresMillis = min(addSat(s.now, approvalTTL), r.EndMillis)
		r.ApprovalReason = approval
		s.put(id, r)
		s.emit(fsmv1.Event_TYPE_APPROVAL_REQUESTED, r, nil)
	} else if commit {
		r.State = fsmv1.Reservation_STATE_COMMITTED
		s.put(id, r)
		s.emit(fsmv1.Event_TYPE_COMMITTED, r, nil)
	} else {
		// A hold cannot outlive its interval: there is nothing left to
		// commit once it has ended.
		r.HoldExpiresMillis = min(addSat(s.now, ttl), r.EndMillis)
		s.put(id, r)
		s.emit(fsmv1.Event_TYPE_HELD, r, nil)
	}
	if viaScheduler {
		s.syncMoves()
	}
	return okResult(r)
}

func (s *state) commit(cmd *fsmv1.Command) *fsmv1.Result {
	r, bad := s.owned(cmd, "target.id", cmd.GetTarget().GetId())
	if bad != nil {
		return bad
	}
	switch {
	case r.GetState() == fsmv1.Reservation_STATE_HELD:
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_COMMITTED
		n.HoldExpiresMillis = 0
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_COMMITTED, n, nil)
		return okResult(s.afterCommit(n))
	case r.GetState() == fsmv1.Reservation_STATE_COMMITTED && r.GetPending() != nil:
		// Swap: free the held new shape, then move the booking onto it.
		// The capacity just freed is exactly what the move needs, so it
		// succeeds; should the planner refuse anyway, the held shape is
		// booked back and nothing has changed.
		p := r.GetPending()
		s.release(modKey(r.Id))
		parts := plannerParts(p.GetParts())
		if err := s.plan.Modify(r.Id, parts, p.GetStartMillis(), p.GetEndMillis()); err != nil {
			_ = s.plan.Book(planner.Booking{ID: modKey(r.Id), Parts: parts, Start: p.GetStartMillis(), End: p.GetEndMillis()})
			return s.fromPlanner(err, modifyFields)
		}
		if s.units != nil {
			s.swapUnits(r.Id, p.GetParts(), p.GetStartMillis(), p.GetEndMillis())
		}
		n := s.change(r)
		n.Parts, n.StartMillis, n.EndMillis = p.GetParts(), p.GetStartMillis(), p.GetEndMillis()
		n.Pending = nil
		// The new shape is a new request: an announced early end of the
		// old one no longer applies.
		n.RequestedDurationMillis, n.ActualEndMillis = 0, 0
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_MODIFY_COMMITTED, n, nil)
		return okResult(n)
	}
	return wrongState(r, "commit")
}

func (s *state) abort(cmd *fsmv1.Command) *fsmv1.Result {
	r, bad := s.owned(cmd, "target.id", cmd.GetTarget().GetId())
	if bad != nil {
		return bad
	}
	switch {
	case r.GetState() == fsmv1.Reservation_STATE_HELD, r.GetState() == fsmv1.Reservation_STATE_PENDING_APPROVAL:
		s.releaseRow(r)
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_ABORTED
		n.HoldExpiresMillis = 0
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_ABORTED, n, nil)
		return okResult(n)
	case r.GetPending() != nil:
		s.release(modKey(r.Id))
		n := s.change(r)
		n.Pending = nil
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_MODIFY_ABORTED, n, nil)
		return okResult(n)
	}
	return wrongState(r, "abort")
}

func (s *state) cancel(cmd *fsmv1.Command) *fsmv1.Result {
	r, bad := s.owned(cmd, "target.id", cmd.GetTarget().GetId())
	if bad != nil {
		return bad
	}
	switch r.GetState() {
	case fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_STATE_ACTIVE, fsmv1.Reservation_STATE_DEGRADED:
		s.releaseRow(r)
		if r.GetPending() != nil {
			s.release(modKey(r.Id))
		}
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_CANCELLED
		n.Pending = nil
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_CANCELLED, n, nil)
		return okResult(n)
	}
	return wrongState(r, "cancel")
}

// modify holds a new shape beside a committed reservation (two-phase,
// PluS): the old booking stays until a commit swaps them.
func (s *state) modify(cmd *fsmv1.Command) *fsmv1.Result {
	m := cmd.GetModify()
	r, bad := s.owned(cmd, "modify.id", m.GetId())
	if bad != nil {
		return bad
	}
	if scheduled(r) {
		return invalid("modify.id", "modifying a variable job or a reservation on a MOVE_VARIABLE or RELAXED resource is not supported yet; cancel it and reserve again")
	}
	if r.GetState() != fsmv1.Reservation_STATE_COMMITTED || r.GetPending() != nil {
		return wrongState(r, "modify")
	}
	ttl, fe := checkModify(&s.cfg, m, s.ver)
	if fe != nil {
		return fe.result()
	}
	if fe := checkModifyWindow(m, s.ver); fe != nil {
		return fe.result()
	}
	parts := r.GetParts()
	if len(m.GetParts()) > 0 {
		parts = m.GetParts()
	}
	pp := plannerParts(parts)
	var start, end int64
	if dur := m.GetWindowDurationMillis(); dur > 0 {
		// The state machine picks the start: the earliest in the window
		// where the new shape fits beside the current booking, at the
		// log time of this entry, so two racing modifications are
		// decided by the log order, not by the edges' reads.
		if bad := s.relaxedPart(pp); bad != nil {
			return bad
		}
		req, passed := s.modifyWindow(m, pp)
		d, err := s.findMapped(req)
		if err != nil {
			return s.fromPlanner(err, modifyWindowFields)
		}
		if passed {
			return rejected(planner.Decision{LaterOK: d.Fits, LaterStart: d.Start},
				fmt.Sprintf("booking window ends before log time %d leaves room for the duration", s.now))
		}
		if !d.Fits {
			return rejected(d, "the new shape does not fit in its window beside the current one")
		}
		start, end = d.Start, d.Start+dur
	} else {
		start = r.GetStartMillis()
		if m.StartMillis != nil {
			start = m.GetStartMillis()
		}
		if start <= s.now {
			return invalid("modify.start_millis", fmt.Sprintf("must be after the log time %d", s.now))
		}
		end = r.GetEndMillis()
		if m.EndMillis != nil {
			end = m.GetEndMillis()
		} else if m.StartMillis != nil {
			end = addSat(start, r.GetEndMillis()-r.GetStartMillis())
		}
		if fe := checkModifyEnd(start, end, s.ver); fe != nil {
			return fe.result()
		}
		if bad := s.relaxedPart(pp); bad != nil {
			return bad
		}
	}
	if _, bad := s.checkRequestLimits(r.GetOwner(), pp, start, end, 0, 0); bad != nil {
		return bad
	}
	if bad := s.checkUsageLimits(r.GetOwner(), pp, modifyRects(r, pp, start, end)); bad != nil {
		return bad
	}
	if err := s.plan.Book(planner.Booking{ID: modKey(r.Id), Parts: pp, Start: start, End: end}); err != nil {
		if errors.Is(err, planner.ErrNoCapacity) {
			// Where the same shape would fit later, beside the current one.
			d, ferr := s.plan.Find(planner.Request{Parts: pp, Duration: end - start, NotBefore: start, Deadline: planner.MaxTime})
			later := planner.Decision{LaterOK: ferr == nil && d.Fits, LaterStart: d.Start}
			return rejected(later, "the new shape does not fit beside the current one")
		}
		return s.fromPlanner(err, modifyFields)
	}
	if bad := s.modifyUnits(r.Id, pp, start, end); bad != nil {
		return bad
	}
	if s.units != nil {
		// Remaps may have stored a newer row.
		r, _ = s.resv.get(r.Id)
	}
	n := s.change(r)
	n.Pending = &fsmv1.Modification{
		Parts:       s.withUnits(modKey(r.Id), sortedParts(pp)),
		StartMillis: start,
		EndMillis:   end,
		// A modification must be decided before it would begin.
		HoldExpiresMillis: min(addSat(s.now, ttl), start),
		Version:           s.index,
	}
	s.put(n.Id, n)
	s.emit(fsmv1.Event_TYPE_MODIFY_HELD, n, nil)
	return okResult(n)
}

// relaxedPart refuses a modification onto a RELAXED resource.
func (s *state) relaxedPart(pp []planner.Part) *fsmv1.Result {
	for i, p := range pp {
		if s.resourcePolicy(p.Resource) == planner.PolicyRelaxed {
			// Everything booked on a RELAXED resource must be a
			// scheduler item; a modification is a plain booking.
			return invalid(fmt.Sprintf("modify.parts[%d].resource", i), fmt.Sprintf("resource %q is RELAXED: a reservation cannot be modified onto it", p.Resource))
		}
	}
	return nil
}

// modifyWindow is the planner request of a modification whose start the
// state machine picks: after the log time (a modification must begin
// later), inside [not_before, deadline]. When the window has passed in
// log time (passed), the request has no deadline instead, so that the
// rejection can say where the shape would fit.
func (s *state) modifyWindow(m *fsmv1.Modify, pp []planner.Part) (req planner.Request, passed bool) {
	dl := m.GetDeadlineMillis()
	if dl == 0 {
		dl = lastEnd(s.ver)
	}
	nb := max(m.GetNotBeforeMillis(), addSat(s.now, 1))
	if dl-nb < m.GetWindowDurationMillis() {
		dl, passed = lastEnd(s.ver), true
	}
	return planner.Request{Parts: pp, Duration: m.GetWindowDurationMillis(), NotBefore: nb, Deadline: dl}, passed
}

// complete ends a COMMITTED or ACTIVE reservation early: the planner gives
// back [at, end), the row keeps its requested duration and records the
// actual end. At the log time the reservation is COMPLETED at once; at a
// later instant its end moves there and the completion timer fires then.
func (s *state) complete(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetComplete()
	r, bad := s.owned(cmd, "complete.id", c.GetId())
	if bad != nil {
		return bad
	}
	if scheduled(r) {
		return s.completeScheduled(c, r)
	}
	switch st := r.GetState(); {
	case st != fsmv1.Reservation_STATE_COMMITTED && st != fsmv1.Reservation_STATE_ACTIVE,
		r.GetPending() != nil:
		return wrongState(r, "complete")
	}
	at := s.now
	if c.AtMillis != nil {
		// Like not_before: an instant already past in log time means now.
		at = max(c.GetAtMillis(), s.now)
	}
	if at < r.GetStartMillis() || at == r.GetStartMillis() && at != s.now {
		// Only a reservation that has begun can end at its start (it
		// then used nothing); ending one that has not begun is Cancel.
		return invalid("complete.at_millis", fmt.Sprintf("must be after the start %d (cancel gives the whole interval back)", r.GetStartMillis()))
	}
	if at >= r.GetEndMillis() {
		return invalid("complete.at_millis", fmt.Sprintf("must be before the booked end %d", r.GetEndMillis()))
	}
	if _, err := s.plan.Complete(r.GetId(), at); err != nil {
		fm := fieldMap{"complete.", map[string]string{"at": "at_millis"}}
		return s.fromPlanner(err, fm)
	}
	if s.units != nil {
		s.shortenUnits(r.GetId(), at)
	}
	n := s.endEarly(r, at)
	s.replan(r.GetParts())
	return okResult(n)
}

// endEarly stores r ended at at: COMPLETED at once when at is the log
// time, otherwise SHORTENED (its timers complete it at at). The row keeps
// the first requested duration.
func (s *state) endEarly(r *fsmv1.Reservation, at int64) *fsmv1.Reservation {
	n := s.change(r)
	if n.RequestedDurationMillis == 0 {
		n.RequestedDurationMillis = r.GetEndMillis() - r.GetStartMillis()
	}
	n.EndMillis, n.ActualEndMillis = at, at
	if at == s.now {
		n.State = fsmv1.Reservation_STATE_COMPLETED
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_COMPLETED, n, nil)
		return n
	}
	s.put(n.Id, n)
	s.emit(fsmv1.Event_TYPE_SHORTENED, n, nil)
	return n
}
