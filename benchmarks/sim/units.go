package sim

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	"github.com/ledgerd/ledgerd/planner"
)

// The units experiment: how much acceptance and admission time concrete
// units cost. The same stream of advance reservations is admitted on a
// resource of named units four ways: count-only (the planner as before:
// the sum of free capacity decides), REFUSE (a start maps only if enough
// units are free for the whole window, with the lowest-index or the
// best-fit rule), and REMAP (movable bookings may move to other units;
// bookings are pinned once running, or once materialized, which happens
// Horizon seconds before their start).

// UnitsMode is one way of admitting.
type UnitsMode struct {
	Name    string
	Count   bool // count-only admission on a planner.Planner
	Policy  planner.UnitPolicy
	Fit     planner.FitRule
	Horizon int64 // seconds before its start a booking is materialized (REMAP)
}

// DefaultUnitsModes are the rows of the experiment.
func DefaultUnitsModes() []UnitsMode {
	return []UnitsMode{
		{Name: "count-only", Count: true},
		{Name: "refuse, lowest-index", Policy: planner.UnitRefuse, Fit: planner.FitLowest},
		{Name: "refuse, best-fit", Policy: planner.UnitRefuse, Fit: planner.FitBest},
		{Name: "remap, pinned when running", Policy: planner.UnitRemap, Fit: planner.FitBest},
		{Name: "remap, pinned 1 h ahead", Policy: planner.UnitRemap, Fit: planner.FitBest, Horizon: 3600},
		{Name: "remap, lowest-index, pinned 1 h ahead", Policy: planner.UnitRemap, Fit: planner.FitLowest, Horizon: 3600},
	}
}

// UnitsResult is what one run measured.
type UnitsResult struct {
	Requests int
	Accepted int
	// Unmappable counts refusals of count-feasible requests (REFUSE and
	// REMAP only).
	Unmappable int
	// Remaps is the number of moves of existing bookings (REMAP only);
	// Exhausted counts admissions whose re-mapping search ran out of
	// budget.
	Remaps, Exhausted int
	// AdmitNs is the total wall time spent in admission calls; P50Ns and
	// P99Ns the median and 99th percentile of one call.
	AdmitNs, P50Ns, P99Ns int64
	// Booked is the accepted work in unit-seconds.
	Booked int64
}

// Acceptance is the accepted share of requests in percent.
func (r UnitsResult) Acceptance() float64 {
	if r.Requests == 0 {
		return 0
	}
	return 100 * float64(r.Accepted) / float64(r.Requests)
}

// MeanUs is the mean admission time in microseconds.
func (r UnitsResult) MeanUs() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.AdmitNs) / float64(r.Requests) / 1e3
}

// RunUnits admits rs (sorted by arrival, then job) on capacity units named
// n1..nC under mode m. Before each request the schedule advances to its
// arrival; bookings that start within the horizon are materialized.
func RunUnits(rs []workload.Reservation, capacity int64, m UnitsMode) (res UnitsResult, err error) {
	if capacity <= 0 {
		return res, fmt.Errorf("sim: units: capacity %d: must be > 0", capacity)
	}
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b workload.Reservation) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.Job, b.Job))
	})
	names := make([]string, capacity)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	var p *planner.Planner
	var u *planner.UnitSchedule
	if m.Count {
		p = planner.New(planner.NewIndexed)
		if err := p.AddResource("r", capacity); err != nil {
			return res, err
		}
	} else {
		if u, err = planner.NewUnitSchedule(names, 0, planner.UnitConfig{Fit: m.Fit}); err != nil {
			return res, err
		}
	}
	var pend startHeap
	var lat []int64
	defer func() {
		if len(lat) > 0 {
			slices.Sort(lat)
			res.P50Ns, res.P99Ns = lat[len(lat)/2], lat[len(lat)*99/100]
		}
	}()
	for i, r := range rs {
		if r.Amount > capacity || r.Duration <= 0 {
			continue
		}
		now := max(r.Arrival, 0)
		nb := max(r.Start, now)
		deadline := max(r.Deadline, nb+r.Duration)
		id := fmt.Sprintf("r%d", i)
		res.Requests++
		if m.Count {
			p.Advance(now)
			req := planner.Request{Parts: []planner.Part{{Resource: "r", Amount: r.Amount}}, Duration: r.Duration, NotBefore: nb, Deadline: deadline}
			t0 := time.Now()
			_, err := p.Reserve(id, req)
			ns := time.Since(t0).Nanoseconds()
			res.AdmitNs += ns
			lat = append(lat, ns)
			switch {
			case err == nil:
				res.Accepted++
				res.Booked += r.Amount * r.Duration
			case !errors.Is(err, planner.ErrNoCapacity):
				return res, fmt.Errorf("request %s: %w", id, err)
			}
			continue
		}
		u.Advance(now)
		for len(pend) > 0 && pend[0].start < now+m.Horizon {
			b := heap.Pop(&pend).(pending)
			if _, ok := u.Get(b.id); ok {
				if err := u.SetMovable(b.id, false); err != nil {
					return res, err
				}
			}
		}
		req := planner.UnitRequest{Amount: r.Amount, Duration: r.Duration, NotBefore: nb, Deadline: deadline, Movable: true}
		t0 := time.Now()
		d, err := u.Reserve(id, req, m.Policy)
		ns := time.Since(t0).Nanoseconds()
		res.AdmitNs += ns
		lat = append(lat, ns)
		if d.Exhausted {
			res.Exhausted++
		}
		switch {
		case err == nil:
			res.Accepted++
			res.Booked += r.Amount * r.Duration
			res.Remaps += len(d.Remaps)
			heap.Push(&pend, pending{start: d.Start, id: id})
		case errors.Is(err, planner.ErrUnmappable):
			res.Unmappable++
		case !errors.Is(err, planner.ErrNoCapacity):
			return res, fmt.Errorf("request %s: %w", id, err)
		}
	}
	return res, nil
}

type pending struct {
	start int64
	id    string
}

// startHeap orders accepted bookings by start, for materialization.
type startHeap []pending

func (h startHeap) Len() int { return len(h) }
func (h startHeap) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(h[i].start, h[j].start), cmp.Compare(h[i].id, h[j].id)) < 0
}
func (h startHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *startHeap) Push(x any)   { *h = append(*h, x.(pending)) }
func (h *startHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// UnitsWorkload is one reservation stream of the experiment.
type UnitsWorkload struct {
	Trace       string
	Capacity    int64
	StartFactor float64
	Slack       float64
	// ArrivalScale divides arrival times (and so the start delays built
	// on them): 2 doubles the offered load.
	ArrivalScale float64
	Tally        workload.Tally
	Reservations []workload.Reservation
}

// BuildUnitsWorkload turns a trace into reservations (Heine et al.'s start
// factor plus a booking window of Slack times the duration; the requested
// time as the duration when the trace has it, else the run time).
func BuildUnitsWorkload(t *workload.Trace, capacity int64, startFactor, slack, arrivalScale float64, seed uint64) (UnitsWorkload, error) {
	jobs := slices.Clone(t.Jobs)
	if arrivalScale > 0 && arrivalScale != 1 {
		for i := range jobs {
			jobs[i].Submit = int64(float64(jobs[i].Submit) / arrivalScale)
		}
	}
	rs, tally, err := workload.FromTally(jobs, workload.ReservationConfig{
		StartFactor: startFactor, Slack: slack, TimeScale: 1, UseRequested: true, MaxAmount: capacity, Seed: seed,
	})
	if err != nil {
		return UnitsWorkload{}, err
	}
	return UnitsWorkload{Trace: t.Name, Capacity: capacity, StartFactor: startFactor, Slack: slack, ArrivalScale: arrivalScale, Tally: tally, Reservations: rs}, nil
}

// UnitsRow is one point of the experiment.
type UnitsRow struct {
	Workload *UnitsWorkload
	Mode     UnitsMode
	Result   UnitsResult
}

// UnitsEnv describes the run for the report header.
type UnitsEnv struct {
	Command, Commit, Go, CPU string
	NumCPU                   int
	LoadStart, LoadEnd, Wall string
}

// UnitsMarkdown renders the acceptance table.
func UnitsMarkdown(rows []UnitsRow, env UnitsEnv) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Concrete units: acceptance and admission time\n\n")
	fmt.Fprintf(&b, "Command: `%s`  \nCommit: `%s`, %s, CPU %s × %d (shared), load average %s at start, %s at end, wall time %s.\n\n",
		env.Command, env.Commit, env.Go, env.CPU, env.NumCPU, env.LoadStart, env.LoadEnd, env.Wall)
	b.WriteString("Acceptance is deterministic; admission times are wall time on a shared machine (compare rows of one run, not runs).\n")
	b.WriteString("`unmappable` counts refusals of count-feasible requests; `remaps` the moves of existing bookings.\n")
	var last *UnitsWorkload
	for _, r := range rows {
		if r.Workload != last {
			last = r.Workload
			w := r.Workload
			fmt.Fprintf(&b, "\n## %s, %d units, start factor %g, slack %g, arrival scale %g\n\n%d reservations; %s\n\n",
				w.Trace, w.Capacity, w.StartFactor, w.Slack, w.ArrivalScale, len(w.Reservations), w.Tally)
			b.WriteString("| admission | accepted % | unit-seconds booked | unmappable | remaps | exhausted | mean µs | p50 µs | p99 µs |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		x := r.Result
		fmt.Fprintf(&b, "| %s | %.2f | %d | %d | %d | %d | %.1f | %.1f | %.1f |\n", r.Mode.Name, x.Acceptance(), x.Booked, x.Unmappable, x.Remaps, x.Exhausted, x.MeanUs(), float64(x.P50Ns)/1e3, float64(x.P99Ns)/1e3)
	}
	return b.String()
}

// UnitsCSV renders the rows as CSV.
func UnitsCSV(rows []UnitsRow) string {
	var b strings.Builder
	b.WriteString("trace,capacity,start_factor,slack,arrival_scale,mode,requests,accepted,acceptance_pct,booked_unit_s,unmappable,remaps,exhausted,mean_us,p50_ns,p99_ns\n")
	for _, r := range rows {
		w, x := r.Workload, r.Result
		fmt.Fprintf(&b, "%s,%d,%g,%g,%g,%q,%d,%d,%.3f,%d,%d,%d,%d,%.2f,%d,%d\n", w.Trace, w.Capacity, w.StartFactor, w.Slack, w.ArrivalScale, r.Mode.Name,
			x.Requests, x.Accepted, x.Acceptance(), x.Booked, x.Unmappable, x.Remaps, x.Exhausted, x.MeanUs(), x.P50Ns, x.P99Ns)
	}
	return b.String()
}
