package fsm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ledgerd/ledgerd/planner"
)

// WindowUsage is the booking of one resource over a window that starts at
// the log time.
type WindowUsage struct {
	// Name is the resource.
	Name string
	// FromMillis and ToMillis bound the window, [From, To).
	FromMillis, ToMillis int64
	// CapacityArea and BookedArea are the integrals of capacity and booked
	// units over the window, in unit·milliseconds.
	CapacityArea, BookedArea int64
	// Utilization is BookedArea/CapacityArea (0 without capacity).
	Utilization float64
}

// UsageAhead returns, for every resource sorted by name, how much of its
// capacity is booked over the window of windowMillis milliseconds that
// starts at the log time (the stamp of the last applied command, which the
// leader's periodic tick keeps within a tick of the wall clock). It reads
// only replicated state, so every replica that applied the same index
// answers the same. windowMillis must be positive.
func (f *FSM) UsageAhead(windowMillis int64) ([]WindowUsage, error) {
	if windowMillis <= 0 {
		return nil, fmt.Errorf("fsm: usage window: windowMillis must be positive, got %d", windowMillis)
	}
	// The planner is not safe for concurrent queries: take the exclusive
	// lock, like Stats.
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	from := max(s.now, s.plan.Origin())
	to := min(addSat(from, windowMillis), planner.MaxTime)
	out := make([]WindowUsage, 0, len(s.resources))
	for _, n := range slices.Sorted(maps.Keys(s.resources)) {
		wu := WindowUsage{Name: n, FromMillis: from, ToMillis: to}
		if from < planner.MaxTime && from < to {
			u, err := s.plan.Usage(n, from, to)
			if err != nil {
				return nil, fmt.Errorf("fsm: usage of resource %q: %w", n, err)
			}
			wu.CapacityArea, wu.BookedArea = u.CapacityArea, u.BookedArea
			wu.Utilization = u.Utilization()
		}
		out = append(out, wu)
	}
	return out, nil
}
