package jepsen

import (
	"fmt"
	"slices"
)

// DefaultDecide is the admission function models use unless told otherwise:
// the product planner. ReferenceDecide cross-checks it in tests.
var DefaultDecide Decider = PlannerDecide

// ReferenceDecide is a deliberately plain earliest-fit search used to
// cross-check the planner-backed decider: it tries every candidate start (the
// window's opening and every end of a booked shape inside the window) in
// increasing order and checks each part's peak usage over the candidate
// interval by summing overlapping shapes. Quadratic, obviously correct.
func ReferenceDecide(capacity map[string]int64, booked []shape, req Input) (int64, bool, error) {
	if err := validateRequest(capacity, req); err != nil {
		return 0, false, err
	}
	latest := req.Deadline - req.Duration
	cands := []int64{req.NotBefore}
	for _, b := range booked {
		if b.End > req.NotBefore && b.End <= latest {
			cands = append(cands, b.End)
		}
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	for _, s := range cands {
		if fitsAt(capacity, booked, req.Parts, s, s+req.Duration) {
			return s, true, nil
		}
	}
	return 0, false, nil
}

func validateRequest(capacity map[string]int64, req Input) error {
	if len(req.Parts) == 0 {
		return fmt.Errorf("parts: must not be empty")
	}
	seen := map[string]bool{}
	for i, p := range req.Parts {
		if _, ok := capacity[p.Resource]; !ok {
			return fmt.Errorf("parts[%d].resource: unknown resource %q", i, p.Resource)
		}
		if seen[p.Resource] {
			return fmt.Errorf("parts[%d].resource: %q named twice", i, p.Resource)
		}
		seen[p.Resource] = true
		if p.Amount <= 0 {
			return fmt.Errorf("parts[%d].amount: must be > 0", i)
		}
	}
	if req.Duration <= 0 {
		return fmt.Errorf("duration: must be > 0")
	}
	if req.Deadline < req.NotBefore+req.Duration {
		return fmt.Errorf("deadline: must be >= not_before + duration")
	}
	return nil
}

// fitsAt reports whether every part fits over [start, end): usage is piecewise
// constant and only rises at a shape's start, so checking start and every
// shape start inside the interval finds the peak.
func fitsAt(capacity map[string]int64, booked []shape, parts []Part, start, end int64) bool {
	points := []int64{start}
	for _, b := range booked {
		if b.Start > start && b.Start < end {
			points = append(points, b.Start)
		}
	}
	for _, p := range parts {
		for _, t := range points {
			used := int64(0)
			for _, b := range booked {
				if b.Start <= t && t < b.End {
					for _, q := range b.Parts {
						if q.Resource == p.Resource {
							used += q.Amount
						}
					}
				}
			}
			if used+p.Amount > capacity[p.Resource] {
				return false
			}
		}
	}
	return true
}
