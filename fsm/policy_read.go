package fsm

import (
	"maps"
	"slices"

	"github.com/ledgerd/ledgerd/planner"
)

// PolicyStats summarises admission policies and variable jobs for metrics.
// The counters count what this replica applied since it started or last
// restored a snapshot (they are not replicated state, like any process
// counter); the gauges describe the replicated state at the log time.
type PolicyStats struct {
	// RelaxedAdmissions counts reservations a RELAXED resource admitted by
	// overlapping others.
	RelaxedAdmissions int64
	// Violations counts, by resource, items that were due to start while
	// capacity was genuinely short and were not re-planned (they run
	// DEGRADED); variable jobs re-planned after a violation are not
	// counted.
	Violations map[string]int64
	// Pushes counts variable jobs pushed later by reservations.
	Pushes int64
	// WaitingJobs is the number of planned variable jobs not yet started.
	WaitingJobs int
	// PinnedJobs is the number of waiting variable jobs that have reached
	// their resource's push limit and will not be pushed again.
	PinnedJobs int
	// ReleaseSamples is the number of completions in the release model.
	ReleaseSamples int64
}

// PolicyStats returns the policy counters and gauges.
func (f *FSM) PolicyStats() PolicyStats {
	// The scheduler is not safe for concurrent queries: exclusive lock.
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	out := PolicyStats{
		RelaxedAdmissions: s.pol.relaxedAdmissions,
		Violations:        maps.Clone(s.pol.violations),
		Pushes:            s.pol.pushes,
	}
	sch := s.pol.sched
	if sch == nil {
		return out
	}
	out.ReleaseSamples = sch.Releases.Samples()
	for _, name := range slices.Sorted(maps.Keys(s.resources)) {
		limit := sch.Policy(name).MaxPushes
		if limit == 0 {
			limit = planner.DefaultMaxPushes
		}
		for _, it := range sch.Items(name) {
			if it.Kind != planner.KindVariable || it.Running {
				continue
			}
			out.WaitingJobs++
			if it.Pushes >= limit {
				out.PinnedJobs++
			}
		}
	}
	return out
}

// NextDue returns the earliest log time at which time-triggered work is
// due: a hold or modification expiry, a start or end of the table's
// rows, the end of an ended row's retention, the log time itself while
// more ended rows are kept than the limit (retention.go), or an event of
// the scheduler (a planned start or a running item's end). The leader's
// periodic tick (TickCommand) performs it; a caller may also schedule a
// tick for this instant.
func (f *FSM) NextDue() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	at, ok := int64(0), false
	if t, _, has := s.nextTimer(true); has {
		at, ok = t.at, true
	}
	if s.maxEnded > 0 && int64(s.drops.Len()) > s.maxEnded && (!ok || s.now < at) {
		// More ended rows than the limit: an entry's drop budget ran
		// out (retention.go); the next entry drops more.
		at, ok = s.now, true
	}
	if s.pol.sched != nil {
		if e, has := s.pol.sched.NextEvent(); has && (!ok || e < at) {
			at, ok = e, true
		}
	}
	return at, ok
}
