package jepsen

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ledgerd/ledgerd/planner"
)

// PlannerDecide answers admission with the product's own planner: it builds
// a fresh planner.New(planner.NewList), adds the resources, replays every
// booked shape with Book, and asks Find. The model's states are immutable,
// so replaying is how a state is "cloned" into a mutable planner. Resources
// are added in sorted order so that the replay never depends on map order.
func PlannerDecide(capacity map[string]int64, booked []shape, req Input) (int64, bool, error) {
	if err := validateRequest(capacity, req); err != nil {
		return 0, false, err
	}
	p := planner.New(planner.NewList)
	for _, n := range slices.Sorted(maps.Keys(capacity)) {
		if err := p.AddResource(n, capacity[n]); err != nil {
			return 0, false, fmt.Errorf("model planner: add %q: %w", n, err)
		}
	}
	for i, b := range booked {
		err := p.Book(planner.Booking{ID: fmt.Sprintf("b%d", i), Parts: toPlannerParts(b.Parts), Start: b.Start, End: b.End})
		if err != nil {
			// The model only books what a decision admitted: a refusal
			// here means the model and the planner disagree.
			return 0, false, fmt.Errorf("model planner: replay booking %d [%d,%d): %w", i, b.Start, b.End, err)
		}
	}
	d, err := p.Find(planner.Request{Parts: toPlannerParts(req.Parts), Duration: req.Duration, NotBefore: req.NotBefore, Deadline: req.Deadline})
	if err != nil {
		return 0, false, fmt.Errorf("model planner: find: %w", err)
	}
	return d.Start, d.Fits, nil
}

func toPlannerParts(ps []Part) []planner.Part {
	out := make([]planner.Part, len(ps))
	for i, p := range ps {
		out[i] = planner.Part{Resource: p.Resource, Amount: p.Amount}
	}
	return out
}
