package planner

import (
	"fmt"
	"maps"
	"slices"
)

// SchedulerState is everything a Scheduler keeps beyond its Planner's own
// Snapshot: policies, live items and the learned release model. Together
// with the Planner snapshot it restores an identical Scheduler.
type SchedulerState struct {
	// Policies, sorted by resource (resources left at the default
	// PolicyReject with no options are omitted).
	Policies []NamedPolicy
	// Items per resource in resource-name order, each resource's items in
	// submission order.
	Items    []Item
	Releases ReleaseState
}

// NamedPolicy is one resource's policy.
type NamedPolicy struct {
	Resource string
	Policy   ResourcePolicy
}

// ReleaseState is a ReleaseModel's content: the prior settings and the
// non-zero histogram buckets, globally and per owner (sorted by owner).
type ReleaseState struct {
	PriorWeight     int64
	MinOwnerSamples int64
	Global          []RatioCount
	Owners          []OwnerCounts
}

// RatioCount is one histogram bucket: Count completions used Permille of
// their requested time.
type RatioCount struct {
	Permille int64
	Count    int64
}

// OwnerCounts is one owner's histogram.
type OwnerCounts struct {
	Owner  string
	Counts []RatioCount
}

func (h *histogram) export() []RatioCount {
	var out []RatioCount
	for i, c := range h.counts {
		if c != 0 {
			out = append(out, RatioCount{Permille: int64(i), Count: c})
		}
	}
	return out
}

func (h *histogram) restore(rc []RatioCount) error {
	for _, c := range rc {
		if c.Permille < 0 || c.Permille > ratioScale || c.Count < 0 {
			return &FieldError{Field: "releases.counts", Reason: fmt.Sprintf("bucket %d count %d out of range", c.Permille, c.Count)}
		}
		h.counts[c.Permille] += c.Count
		h.total += c.Count
	}
	return nil
}

// Export returns the Scheduler's state (see SchedulerState).
func (s *Scheduler) Export() SchedulerState {
	var st SchedulerState
	for _, n := range s.p.names {
		if pol, ok := s.policies[n]; ok {
			st.Policies = append(st.Policies, NamedPolicy{Resource: n, Policy: pol})
		}
		for _, it := range s.byRes[n] {
			st.Items = append(st.Items, *it)
		}
	}
	m := s.Releases
	st.Releases = ReleaseState{PriorWeight: m.PriorWeight, MinOwnerSamples: m.MinOwnerSamples, Global: m.global.export()}
	for _, o := range slices.Sorted(maps.Keys(m.owners)) {
		st.Releases.Owners = append(st.Releases.Owners, OwnerCounts{Owner: o, Counts: m.owners[o].export()})
	}
	return st
}

// RestoreScheduler rebuilds a Scheduler over p, the Planner restored from
// the snapshot taken together with st. It checks that every item names a
// resource of p and that the planned part of every item still ahead of
// the origin is booked in p under its ID.
func RestoreScheduler(p *Planner, st SchedulerState) (*Scheduler, error) {
	s := NewScheduler(p)
	for i, np := range st.Policies {
		if err := s.SetPolicy(np.Resource, np.Policy); err != nil {
			return nil, fmt.Errorf("restore policies[%d]: %w", i, err)
		}
	}
	for i, it := range st.Items {
		field := fmt.Sprintf("items[%d]", i)
		if _, ok := p.resources[it.Resource]; !ok {
			return nil, fmt.Errorf("restore %s %q: resource %q: %w", field, it.ID, it.Resource, ErrUnknownResource)
		}
		if _, dup := s.items[it.ID]; dup || it.ID == "" {
			return nil, &FieldError{Field: field + ".id", Reason: fmt.Sprintf("empty or duplicate %q", it.ID)}
		}
		if it.Amount <= 0 || it.Overbooked < 0 || it.Overbooked > it.Amount || it.End <= it.Start {
			return nil, &FieldError{Field: field, Reason: fmt.Sprintf("inconsistent item %+v", it)}
		}
		if planned := it.Amount - it.Overbooked; planned > 0 && it.End > p.origin {
			e, ok := p.entryOf(it.ID)
			if !ok || p.resOf(e) == nil || p.resOf(e).name != it.Resource || e.amount != planned {
				return nil, &FieldError{Field: field, Reason: fmt.Sprintf("item %q has no matching booking of %d on %q", it.ID, planned, it.Resource)}
			}
		}
		c := it
		s.add(&c)
	}
	m := s.Releases
	m.PriorWeight, m.MinOwnerSamples = st.Releases.PriorWeight, st.Releases.MinOwnerSamples
	if err := m.global.restore(st.Releases.Global); err != nil {
		return nil, err
	}
	for _, oc := range st.Releases.Owners {
		h := &histogram{}
		if err := h.restore(oc.Counts); err != nil {
			return nil, err
		}
		m.owners[oc.Owner] = h
	}
	return s, nil
}
