package planner

import "fmt"

// Moves returns the variable jobs whose planned start the last call of
// Reserve, Complete, Cancel, Drop, Replan or Advance changed, in the order
// it changed them (a job may appear more than once). The slice is not
// reused by later calls.
func (s *Scheduler) Moves() []Move { return s.moves }

// Len returns the number of live items.
func (s *Scheduler) Len() int { return len(s.items) }

// NextEvent returns the earliest instant at which Advance has work: the
// start of an item that has not started or the end of a running one.
func (s *Scheduler) NextEvent() (int64, bool) {
	best, ok := int64(MaxTime), false
	for _, its := range s.byRes {
		for _, it := range its {
			t := it.Start
			if it.Running {
				t = it.End
			}
			if t < best {
				best, ok = t, true
			}
		}
	}
	return best, ok
}

// Drop removes the live item id whether or not it has started: an
// aborted or expired hold, or a cancelled item. Its planned capacity from
// the origin on is given back, no completion is recorded in Releases, and
// the resource's overbooked admissions and variable jobs are then
// re-planned into the freed capacity as after Cancel.
func (s *Scheduler) Drop(id string) error {
	s.moves = nil
	it, ok := s.items[id]
	if !ok {
		return fmt.Errorf("drop %q: %w", id, ErrUnknownBooking)
	}
	if err := s.drop(it); err != nil {
		return fmt.Errorf("drop %q: %w", id, err)
	}
	return nil
}

// drop releases the item's planned capacity, removes it and re-plans its
// resource into the freed capacity.
func (s *Scheduler) drop(it *Item) error {
	if s.p.has(it.ID) {
		if err := s.p.Remove(it.ID); err != nil {
			return err
		}
	}
	s.remove(it)
	s.claim(it.Resource)
	s.compress(it.Resource)
	return nil
}

// Replan gives capacity that was freed on resource outside the scheduler
// (a plain booking released or shortened, a capacity increase) to the
// overbooked admissions and waiting variable jobs there, exactly as after
// Cancel: jobs only ever move earlier.
func (s *Scheduler) Replan(resource string) {
	s.moves = nil
	if len(s.byRes[resource]) == 0 {
		return
	}
	s.claim(resource)
	s.compress(resource)
}
