package planner

import (
	"errors"
	"fmt"
)

// SubRequest is one part of a co-reservation: Amount units over
// [Start, Start+Duration) on any one of the candidate resources.
type SubRequest struct {
	Amount   int64
	Start    int64
	Duration int64
}

// CoAdmission is the outcome of CoReserve: Mapping[i] is the resource
// chosen for sub-request i (booked under ID "<id>/<i>"), Probability[i]
// its estimated probability of no violation, and Joint their product.
type CoAdmission struct {
	Mapping     []string
	Probability []float64
	Joint       float64
}

// CoReserve admits a co-reservation of m sub-requests over the candidate
// resources (Xiao & Hu, Algorithm 3): sub-requests are placed in order;
// each goes to the first candidate (in the given order) where it fits
// rigidly, and only when none exists to the RELAXED candidate with the
// highest probability of no violation (ties: the earlier candidate) that
// reaches that resource's MinSuccess. The whole request is admitted only
// if every sub-request is placed and the joint probability is at least
// minJoint; otherwise nothing is booked and the error wraps
// ErrNoCapacity.
func (s *Scheduler) CoReserve(id, owner string, subs []SubRequest, candidates []string, minJoint float64) (CoAdmission, error) {
	if id == "" {
		return CoAdmission{}, &FieldError{Field: "id", Reason: "must not be empty"}
	}
	if len(subs) == 0 {
		return CoAdmission{}, &FieldError{Field: "subs", Reason: "must not be empty"}
	}
	if len(candidates) == 0 {
		return CoAdmission{}, &FieldError{Field: "candidates", Reason: "must not be empty"}
	}
	if !(minJoint >= 0 && minJoint <= 1) {
		return CoAdmission{}, &FieldError{Field: "min_joint", Reason: "must be in [0, 1]"}
	}
	for i, c := range candidates {
		if _, err := s.p.lookup(fmt.Sprintf("candidates[%d]", i), c); err != nil {
			return CoAdmission{}, err
		}
	}
	for i, sr := range subs {
		subID := fmt.Sprintf("%s/%d", id, i)
		if err := s.p.checkNewID(subID); err != nil {
			return CoAdmission{}, err
		}
		if sr.Amount <= 0 {
			return CoAdmission{}, &FieldError{Field: fmt.Sprintf("subs[%d].amount", i), Reason: "must be > 0"}
		}
		if sr.Duration <= 0 {
			return CoAdmission{}, &FieldError{Field: fmt.Sprintf("subs[%d].duration", i), Reason: "must be > 0"}
		}
		if err := s.checkWindow(sr.Start, sr.Duration); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Field = fmt.Sprintf("subs[%d].%s", i, fe.Field)
			}
			return CoAdmission{}, err
		}
	}
	out := CoAdmission{Joint: 1}
	var placed []*Item
	undo := func() {
		for _, it := range placed {
			if s.p.has(it.ID) {
				_ = s.p.Remove(it.ID)
			}
			s.remove(it)
		}
	}
	for i, sr := range subs {
		mk := func(res string) *Item {
			return &Item{ID: fmt.Sprintf("%s/%d", id, i), Owner: owner, Kind: KindReservation, Resource: res,
				Amount: sr.Amount, Start: sr.Start, End: sr.Start + sr.Duration, NotBefore: sr.Start}
		}
		var chosen *Item
		best := 0.0
		for _, c := range candidates {
			if sr.Amount > s.p.resources[c].maxCap {
				continue
			}
			it := mk(c)
			if s.rigidFits(it) {
				chosen, best = it, 1
				break
			}
		}
		if chosen != nil {
			if err := s.book(chosen, chosen.Amount); err != nil {
				undo()
				return CoAdmission{}, fmt.Errorf("co-reserve %q: %w", id, err)
			}
		} else {
			for _, c := range candidates {
				pol := s.policies[c]
				if pol.Policy != PolicyRelaxed {
					continue
				}
				pr := s.Probability(owner, c, sr.Amount, sr.Start, sr.Start+sr.Duration)
				if pr >= pol.MinSuccess && pr > best {
					chosen, best = mk(c), pr
				}
			}
			if chosen == nil {
				undo()
				return CoAdmission{}, fmt.Errorf("co-reserve %q: sub-request %d fits nowhere: %w", id, i, ErrNoCapacity)
			}
			s.bookRelaxed(chosen)
		}
		s.add(chosen)
		placed = append(placed, chosen)
		out.Mapping = append(out.Mapping, chosen.Resource)
		out.Probability = append(out.Probability, best)
		out.Joint *= best
	}
	if out.Joint < minJoint {
		undo()
		return CoAdmission{}, fmt.Errorf("co-reserve %q: joint probability %.3f below %.3f: %w", id, out.Joint, minJoint, ErrNoCapacity)
	}
	return out, nil
}
