package fsm

import (
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// advance performs everything log time has made due, up to s.now. Without
// scheduler items that is the table's timers alone (runTimers), exactly
// as before policies existed. With items, the table's timers and the
// scheduler's events (starts, finishes, violations) run interleaved in
// time order; at one instant the table's timers come first, so a hold
// that expires at an instant is gone before anything starts there. Before
// a timer fires the planner's origin moves to its instant, so that
// variable jobs re-planned by it are never planned before it.
func (s *state) advance() {
	if !s.hasItems() {
		s.runTimers()
		return
	}
	for {
		t, key, timerDue := s.nextTimer(s.dropBudget > 0)
		timerDue = timerDue && t.at <= s.now
		at, eventDue := s.nextEvent()
		eventDue = eventDue && at <= s.now
		switch {
		case timerDue && (!eventDue || t.at <= at):
			s.take(key)
			s.plan.Advance(t.at)
			s.fire(key)
		case eventDue:
			at = max(at, s.plan.Origin())
			s.applyReport(s.scheduler().Advance(at))
			if next, ok := s.nextEvent(); ok && next <= at {
				// Advance did not get past at (it cannot happen: every
				// due event starts, finishes or re-plans later); stop
				// rather than loop.
				return
			}
		default:
			return
		}
	}
}

// applyReport turns what a Scheduler.Advance did into row changes and
// events: finished items COMPLETED, started ones ACTIVE (a hold that began
// stays HELD until it is committed), violated reservations DEGRADED with
// their short units, violated variable jobs re-planned (REPLANNED).
func (s *state) applyReport(rep planner.AdvanceReport) {
	for _, id := range rep.Finished {
		r, ok := s.resv.get(id)
		if !ok || r.GetState() != fsmv1.Reservation_STATE_ACTIVE {
			continue
		}
		s.release(id)
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_COMPLETED
		s.put(id, n)
		s.emit(fsmv1.Event_TYPE_COMPLETED, n, nil)
	}
	for _, id := range rep.Started {
		r, ok := s.resv.get(id)
		if !ok || r.GetState() != fsmv1.Reservation_STATE_COMMITTED {
			continue
		}
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_ACTIVE
		s.put(id, n)
		s.emit(fsmv1.Event_TYPE_ACTIVATED, n, nil)
	}
	for _, v := range rep.Violations {
		if v.Replanned {
			continue
		}
		r, ok := s.resv.get(v.ID)
		if !ok {
			continue
		}
		if s.pol.violations == nil {
			s.pol.violations = make(map[string]int64)
		}
		s.pol.violations[v.Resource]++
		n := s.change(r)
		n.ShortUnits = v.Short
		if n.State != fsmv1.Reservation_STATE_HELD {
			// Started short: it runs to its end without a booking.
			n.State = fsmv1.Reservation_STATE_DEGRADED
		}
		s.put(v.ID, n)
		s.emit(fsmv1.Event_TYPE_VIOLATED, n, nil)
	}
	s.syncMoves()
}
