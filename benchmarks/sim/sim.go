package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/ledgerd/ledgerd/planner"
)

// Job is one simulated request. A reservation asks for Procs nodes from
// Start for Requested seconds; a variable job asks for them as early as
// possible from Submit. Actual is how long it really runs (it is cut at
// Requested). Split > 0 makes a reservation a co-reservation of
// ceil(Procs/Split) sub-requests of at most Split nodes each.
type Job struct {
	ID          int64
	Owner       string
	Submit      int64
	Procs       int64
	Requested   int64
	Actual      int64
	Reservation bool
	Start       int64
	Split       int64
}

// Config describes the simulated system.
type Config struct {
	// Clusters are the resources' capacities (names c00, c01, ...).
	Clusters []int64
	// Policy and its parameters apply to every cluster.
	Policy    planner.Policy
	VStar     float64 // RELAXED: v*
	MaxPushes int     // MOVE_VARIABLE: starvation guard (0 = default)
}

// Result holds the metrics of one run.
type Result struct {
	Reservations int64 // submitted
	Rejected     int64
	Relaxed      int64 // admitted by the relaxed policy
	Violations   int64 // reservations that could not start
	// RelaxedViolations counts the violations that hit a reservation
	// admitted by the relaxed policy itself (the rest hit rigid ones).
	RelaxedViolations int64
	VarJobs           int64 // variable jobs completed
	// SLDwA is the area-weighted slowdown of the variable jobs:
	// sum(area*slowdown)/sum(area), slowdown = (wait+run)/run.
	SLDwA float64
	// MeanResponse is the mean of (end - submit) over variable jobs, s.
	MeanResponse float64
	// Utilization is the used node-seconds over capacity * (last end -
	// first submit).
	Utilization float64
	Moves       int64 // variable jobs pushed later (MOVE_VARIABLE)
	// Skipped counts jobs Run did not submit: no size or requested time,
	// or a job (not a split co-reservation) larger than every cluster.
	// The workload builders drop and count such jobs first, so it is 0
	// for their output.
	Skipped int64
}

// RejectionRate is Rejected/Reservations in percent.
func (r Result) RejectionRate() float64 { return pct(r.Rejected, r.Reservations) }

// ViolationRate is Violations per admitted reservation in percent.
func (r Result) ViolationRate() float64 { return pct(r.Violations, r.Reservations-r.Rejected) }

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// running is a started item whose actual end is known to the simulator.
type running struct {
	end int64
	id  string
}

// Run simulates jobs (sorted by Submit, then ID) on cfg and returns the
// metrics. Errors come only from inconsistent input.
func Run(jobs []Job, cfg Config) (Result, error) {
	if len(cfg.Clusters) == 0 {
		return Result{}, errors.New("sim: Clusters is empty")
	}
	p := planner.New(planner.NewIndexed)
	s := planner.NewScheduler(p)
	names := make([]string, len(cfg.Clusters))
	var totalCap int64
	for i, c := range cfg.Clusters {
		names[i] = fmt.Sprintf("c%02d", i)
		if err := p.AddResource(names[i], c); err != nil {
			return Result{}, fmt.Errorf("sim: %w", err)
		}
		if err := s.SetPolicy(names[i], planner.ResourcePolicy{Policy: cfg.Policy, MinSuccess: cfg.VStar, MaxPushes: cfg.MaxPushes}); err != nil {
			return Result{}, fmt.Errorf("sim: policy: %w", err)
		}
		totalCap += c
	}
	maxCap := slices.Max(cfg.Clusters)
	jobs = slices.Clone(jobs)
	slices.SortStableFunc(jobs, func(a, b Job) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var res Result
	byID := map[string]*Job{}
	violated := map[*Job]bool{} // a co-reservation counts once
	relaxedIDs := map[string]bool{}
	var ends []running // actual ends of started items, kept sorted
	var used float64
	var sldNum, sldDen, respSum float64
	first, last := int64(0), int64(0)
	if len(jobs) > 0 {
		first = jobs[0].Submit
	}
	onStart := func(rep planner.AdvanceReport, now int64) {
		for _, v := range rep.Violations {
			if j := byID[v.ID]; v.Kind == planner.KindReservation && !violated[j] {
				violated[j] = true
				res.Violations++
				if relaxedIDs[v.ID] {
					res.RelaxedViolations++
				}
			}
		}
		for _, id := range rep.Started {
			it, _ := s.Get(id)
			j := byID[id]
			run := min(j.Actual, it.End-it.Start)
			end := it.Start + run
			last = max(last, end)
			used += float64(run) * float64(it.Amount)
			if it.Kind == planner.KindVariable {
				res.VarJobs++
				area := float64(run) * float64(it.Amount)
				resp := float64(end - j.Submit)
				sldNum += area * resp / float64(max(run, 1))
				sldDen += area
				respSum += resp
			}
			if end < it.End {
				i, _ := slices.BinarySearchFunc(ends, running{end, id}, cmpRunning)
				ends = slices.Insert(ends, i, running{end, id})
			}
		}
	}
	step := func(now int64) error {
		// Early completions due by now, in time order.
		for len(ends) > 0 && ends[0].end <= now {
			e := ends[0]
			ends = ends[1:]
			onStart(s.Advance(e.end), e.end)
			if _, err := s.Complete(e.id, e.end); err != nil {
				return fmt.Errorf("sim: complete %s: %w", e.id, err)
			}
		}
		onStart(s.Advance(now), now)
		return nil
	}
	next := 0
	for {
		t := int64(planner.MaxTime)
		if next < len(jobs) {
			t = jobs[next].Submit
		}
		if len(ends) > 0 {
			t = min(t, ends[0].end)
		}
		if ns, ok := s.NextStart(); ok {
			t = min(t, ns)
		}
		if t == planner.MaxTime {
			break
		}
		if err := step(t); err != nil {
			return res, err
		}
		for next < len(jobs) && jobs[next].Submit == t {
			j := &jobs[next]
			next++
			if j.Procs <= 0 || j.Requested <= 0 || j.Procs > maxCap && j.Split == 0 {
				res.Skipped++
				continue
			}
			if err := submit(s, names, j, byID, relaxedIDs, &res); err != nil {
				return res, err
			}
		}
		onStart(s.Advance(t), t)
	}
	if res.VarJobs > 0 {
		res.SLDwA = sldNum / sldDen
		res.MeanResponse = respSum / float64(res.VarJobs)
	}
	if last > first {
		res.Utilization = 100 * used / (float64(totalCap) * float64(last-first))
	}
	return res, nil
}

func cmpRunning(a, b running) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// submit hands one job to the scheduler.
func submit(s *planner.Scheduler, names []string, j *Job, byID map[string]*Job, relaxedIDs map[string]bool, res *Result) error {
	id := fmt.Sprintf("j%d", j.ID)
	now := s.Planner().Origin()
	if !j.Reservation {
		// Batch job: the cluster where it can start first (ties: lower name).
		best, bestStart := "", int64(planner.MaxTime)
		for _, n := range names {
			d, err := s.Planner().Find(planner.Request{Parts: []planner.Part{{Resource: n, Amount: j.Procs}}, Duration: j.Requested, NotBefore: now, Deadline: planner.MaxTime})
			if err != nil {
				continue // too large for this cluster
			}
			if d.Fits && d.Start < bestStart {
				best, bestStart = n, d.Start
			}
		}
		if best == "" {
			return nil
		}
		if _, err := s.Submit(id, j.Owner, planner.Part{Resource: best, Amount: j.Procs}, j.Requested, now); err != nil {
			return fmt.Errorf("sim: submit %s: %w", id, err)
		}
		byID[id] = j
		return nil
	}
	res.Reservations++
	start := max(j.Start, now)
	if j.Split <= 0 {
		a, err := s.Reserve(id, j.Owner, planner.Part{Resource: names[0], Amount: j.Procs}, start, j.Requested)
		if errors.Is(err, planner.ErrNoCapacity) {
			res.Rejected++
			return nil
		}
		if err != nil {
			return fmt.Errorf("sim: reserve %s: %w", id, err)
		}
		if a.Relaxed {
			res.Relaxed++
			relaxedIDs[id] = true
		}
		res.Moves += int64(len(a.Moved))
		byID[id] = j
		return nil
	}
	var subs []planner.SubRequest
	for left := j.Procs; left > 0; left -= j.Split {
		subs = append(subs, planner.SubRequest{Amount: min(left, j.Split), Start: start, Duration: j.Requested})
	}
	a, err := s.CoReserve(id, j.Owner, subs, names, 0)
	if errors.Is(err, planner.ErrNoCapacity) {
		res.Rejected++
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim: co-reserve %s: %w", id, err)
	}
	if a.Joint < 1 {
		res.Relaxed++
	}
	for i := range subs {
		sub := fmt.Sprintf("%s/%d", id, i)
		byID[sub] = j
		if a.Probability[i] < 1 {
			relaxedIDs[sub] = true
		}
	}
	return nil
}
