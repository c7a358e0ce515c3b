package sim

import (
	"errors"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	"github.com/ledgerd/ledgerd/planner"
)

const kthPath = "../../../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz"

func readKTH(t *testing.T) []workload.Job {
	t.Helper()
	log, _, err := workload.ReadFile(kthPath)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("trace not available: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return log
}

func TestQuick001(t *testing.T) {
	e := Default001(true)
	e.Capacity = 100
	calls := 0
	rows, tally, err := Run001(readKTH(t), e, func(done, total int, what string) {
		calls++
		if done != calls || total != 2*len(e.Shares)*len(e.StartFactors) || what == "" {
			t.Errorf("progress(%d, %d, %q) at call %d", done, total, what, calls)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(e.Shares) * len(e.StartFactors) * 2; len(rows) != want || calls != want {
		t.Fatalf("%d rows, %d progress calls, want %d", len(rows), calls, want)
	}
	if tally.Kept != e.MaxJobs || tally.Kept+tally.Dropped() != tally.Read || tally.TooLarge != 0 {
		t.Fatalf("tally %+v: want %d jobs kept, none too large for 100 nodes", tally, e.MaxJobs)
	}
	for i := 0; i < len(rows); i += 2 {
		rej, mv := rows[i], rows[i+1]
		if rej.Policy != planner.PolicyReject || mv.Policy != planner.PolicyMoveVariable {
			t.Fatalf("row order: %v %v", rej.Policy, mv.Policy)
		}
		if rej.Result.Reservations != mv.Result.Reservations {
			t.Fatalf("share %g: different submissions %d vs %d", rej.Share, rej.Result.Reservations, mv.Result.Reservations)
		}
		if rej.Result.Moves != 0 || rej.Result.Violations != 0 || mv.Result.Violations != 0 {
			t.Fatalf("share %g: moves/violations where none may happen: %+v %+v", rej.Share, rej.Result, mv.Result)
		}
		for _, r := range []Result{rej.Result, mv.Result} {
			if r.Utilization <= 0 || r.Utilization > 100 || r.SLDwA < 1 {
				t.Fatalf("share %g: implausible metrics %+v", rej.Share, r)
			}
		}
		if rej.Share == 0 {
			if !reflect.DeepEqual(rej.Result, mv.Result) {
				t.Fatalf("no reservations, yet the policies differ: %+v vs %+v", rej.Result, mv.Result)
			}
			continue
		}
		if mv.Result.Rejected > rej.Result.Rejected {
			t.Fatalf("share %g: MOVE_VARIABLE rejected more (%d) than REJECT (%d)", rej.Share, mv.Result.Rejected, rej.Result.Rejected)
		}
		if mv.Result.Moves == 0 || mv.Result.SLDwA < rej.Result.SLDwA {
			t.Fatalf("share %g: expected moves and a higher SLDwA: %+v vs %+v", rej.Share, mv.Result, rej.Result)
		}
	}
}

func TestQuick002(t *testing.T) {
	rows, tally, err := Run002(Default002(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tally.Kept != Default002(true).Jobs || tally.OneUnit != 0 {
		t.Fatalf("tally %+v: want every generated job kept, none rounded (seconds)", tally)
	}
	if len(rows) != 2 || rows[0].Policy != planner.PolicyReject || rows[1].Policy != planner.PolicyRelaxed {
		t.Fatalf("rows = %+v", rows)
	}
	rej, rel := rows[0].Result, rows[1].Result
	if rej.Reservations == 0 || rej.Reservations != rel.Reservations {
		t.Fatalf("submissions %d vs %d", rej.Reservations, rel.Reservations)
	}
	if rej.Relaxed != 0 || rej.Violations != 0 {
		t.Fatalf("REJECT admitted relaxed or violated: %+v", rej)
	}
	if rel.Rejected > rej.Rejected || rel.Relaxed == 0 {
		t.Fatalf("RELAXED should admit overlapping requests and reject no more: %+v vs %+v", rel, rej)
	}
	if rel.Violations > rel.Relaxed+rel.Reservations-rel.Rejected {
		t.Fatalf("more violations than admissions: %+v", rel)
	}
}

func TestRunDeterministic(t *testing.T) {
	jobs, _, err := Xiao(XiaoConfig{Jobs: 400, ReservationRate: 0.3, KLo: 1.2, KHi: 1.5, ClusterSize: 32, Enlarge: 2, ArrivalScale: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Clusters: []int64{32, 32, 32}, Policy: planner.PolicyRelaxed, VStar: 0.7}
	a, err := Run(jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("two runs differ: %+v vs %+v", a, b)
	}
}

func TestHeineWorkload(t *testing.T) {
	log := []workload.Job{
		{Number: 1, Submit: 0, Run: 10, ReqTime: 20, AllocProcs: 4},
		{Number: 2, Submit: 5, Run: 30, ReqTime: -1, AllocProcs: 2},
		{Number: 3, Submit: 9, Run: -1, ReqTime: 20, AllocProcs: 2}, // no run time: dropped
		{Number: 4, Submit: 9, Run: 5, ReqTime: 10, AllocProcs: 1},
	}
	jobs, tally, err := Heine(log, HeineConfig{Share: 2.0 / 3, StartFactor: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tally.Read != 4 || tally.Kept != 3 || tally.NoTime != 1 || tally.RunAsEstimate != 1 || tally.CutAtRequest != 0 {
		t.Fatalf("tally %+v", tally)
	}
	var vars, res int
	for _, j := range jobs {
		if !j.Reservation {
			vars++
			continue
		}
		res++
		if j.Start < j.Submit || j.Start > j.Submit+2*j.Requested {
			t.Fatalf("start %d outside [submit, submit+2*estimate] for %+v", j.Start, j)
		}
		if j.ID <= 4 {
			t.Fatalf("reservation id %d collides with a job", j.ID)
		}
	}
	if vars != 3 || res != 2 {
		t.Fatalf("%d variable jobs and %d reservations, want 3 and 2", vars, res)
	}
	for _, c := range []HeineConfig{{Share: -0.1}, {Share: 1.1}, {Share: 0.5, StartFactor: -1}, {Share: 0.5, Capacity: -1}} {
		if _, _, err := Heine(log, c); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}

func TestXiaoValidation(t *testing.T) {
	good := XiaoConfig{Jobs: 10, ReservationRate: 0.1, KLo: 1, KHi: 1.2, ClusterSize: 32, Enlarge: 1}
	for _, mut := range []func(*XiaoConfig){
		func(c *XiaoConfig) { c.Jobs = 0 },
		func(c *XiaoConfig) { c.ReservationRate = 2 },
		func(c *XiaoConfig) { c.KLo = 0.9 },
		func(c *XiaoConfig) { c.KHi = 0.95 },
		func(c *XiaoConfig) { c.ClusterSize = 0 },
		func(c *XiaoConfig) { c.Enlarge = 0 },
	} {
		c := good
		mut(&c)
		if _, _, err := Xiao(c); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
	jobs, _, err := Xiao(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Requested < j.Actual || float64(j.Requested) > 1.2*float64(j.Actual)+1 {
			t.Fatalf("requested %d not in [actual, 1.2*actual] for %+v", j.Requested, j)
		}
	}
	if _, err := Run(nil, Config{}); err == nil {
		t.Fatal("empty cluster list accepted")
	}
}

// TestHeineTraceFixture converts the small fixture trace (one job per
// rule) on its header's 8 nodes: the two larger jobs are dropped and
// counted, never silently.
func TestHeineTraceFixture(t *testing.T) {
	tr, err := workload.LoadTrace("../workload/testdata/small.swf", 0)
	if err != nil {
		t.Fatal(err)
	}
	capacity, _, err := tr.Capacity(0)
	if err != nil {
		t.Fatal(err)
	}
	jobs, tally, err := Heine(tr.Jobs, HeineConfig{Share: 0, Seed: 1, Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	// Jobs 1, 3 and 7 stay: 2 and 8 exceed 8 nodes, 4 and 5 never ran,
	// 6 has no size; 3 has no request (run time stands in), 7 ran 500 s of
	// a 300 s request (cut at it).
	want := workload.Tally{Read: 8, Kept: 3, NoSize: 1, TooLarge: 2, NoTime: 2, RunAsEstimate: 1, CutAtRequest: 1, Capacity: 8}
	got := tally
	got.Oversized = 0
	if !reflect.DeepEqual(clearWork(got), clearWork(want)) {
		t.Fatalf("tally %+v\nwant  %+v", got, want)
	}
	if len(jobs) != 3 || jobs[2].Actual != 300 || jobs[1].Requested != 50 {
		t.Fatalf("jobs %+v", jobs)
	}
	r, err := Run(jobs, Config{Clusters: []int64{capacity}, Policy: planner.PolicyReject})
	if err != nil {
		t.Fatal(err)
	}
	if r.VarJobs != 3 || r.Skipped != 0 {
		t.Fatalf("result %+v: want all 3 jobs run, none skipped", r)
	}
}

// clearWork zeroes the unexported work sums so that tallies compare by
// their counts.
func clearWork(t workload.Tally) workload.Tally {
	return workload.Tally{Read: t.Read, Kept: t.Kept, NoSize: t.NoSize, TooLarge: t.TooLarge, NoTime: t.NoTime, NoSubmit: t.NoSubmit,
		OutOfRange: t.OutOfRange, Capacity: t.Capacity, RunAsEstimate: t.RunAsEstimate, ZeroRun: t.ZeroRun, CutAtRequest: t.CutAtRequest, OneUnit: t.OneUnit}
}

// TestXiaoMinutesArtefact shows the rounding artefact of the paper's ÷60
// scaling and that the default seconds mode avoids it: in minutes, every
// job shorter than 90 s runs one unit and requests two whatever k_over is.
func TestXiaoMinutesArtefact(t *testing.T) {
	base := XiaoConfig{Jobs: 2000, ReservationRate: 0.2, KLo: 1.0, KHi: 1.2, ClusterSize: 64, Enlarge: 4, ArrivalScale: 10, Seed: 1}
	minutes := base
	minutes.Minutes = true
	mj, mt, err := Xiao(minutes)
	if err != nil {
		t.Fatal(err)
	}
	sj, st, err := Xiao(base)
	if err != nil {
		t.Fatal(err)
	}
	if st.OneUnit != 0 || mt.OneUnit < len(mj)/5 {
		t.Fatalf("one-unit runs: seconds %d, minutes %d of %d", st.OneUnit, mt.OneUnit, len(mj))
	}
	doubled := func(jobs []Job) int {
		n := 0
		for _, j := range jobs {
			if j.Requested >= 2*j.Actual {
				n++
			}
		}
		return n
	}
	// k_over <= 1.2 can never double a request; only rounding can.
	if d := doubled(sj); d > len(sj)/100 {
		t.Errorf("seconds: %d of %d requests are >= 2x the run", d, len(sj))
	}
	if d := doubled(mj); d < mt.OneUnit/2 {
		t.Errorf("minutes: only %d of %d one-unit jobs request 2 units", d, mt.OneUnit)
	}
	// The same stream otherwise: sizes and reservation choices agree.
	for i := range sj {
		if sj[i].Procs != mj[i].Procs || sj[i].Reservation != mj[i].Reservation {
			t.Fatalf("job %d differs beyond its times: %+v vs %+v", i, sj[i], mj[i])
		}
	}
}

// TestXiaoTrace builds the Xiao & Hu workload from the fixture trace:
// its submit and run times in seconds, jobs larger than the cluster
// dropped and counted.
func TestXiaoTrace(t *testing.T) {
	tr, err := workload.LoadTrace("../workload/testdata/small.swf", 0)
	if err != nil {
		t.Fatal(err)
	}
	jobs, tally, err := Xiao(XiaoConfig{ReservationRate: 0, KLo: 1.2, KHi: 1.2, ClusterSize: 8, Enlarge: 1, Trace: tr.Jobs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tally.Read != 8 || tally.Kept != 3 || tally.TooLarge != 2 || tally.NoTime != 2 || tally.NoSize != 1 {
		t.Fatalf("tally %+v", tally)
	}
	// A job limit counts usable jobs: the first two are jobs 1 and 3.
	limited, lt, err := Xiao(XiaoConfig{Jobs: 2, ReservationRate: 0, KLo: 1.2, KHi: 1.2, ClusterSize: 8, Enlarge: 1, Trace: tr.Jobs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(limited) != 2 || lt.Kept != 2 || lt.Read != 3 || limited[1].Actual != 50 {
		t.Fatalf("limit 2: %d jobs, tally %+v", len(limited), lt)
	}
	wantRun := []int64{100, 50, 500}
	for i, j := range jobs {
		if j.Actual != wantRun[i] || j.Requested != int64(math.Ceil(1.2*float64(wantRun[i]))) {
			t.Errorf("job %d: actual %d requested %d, want %d and 1.2x", i, j.Actual, j.Requested, wantRun[i])
		}
	}
}

// TestTraceTimesOutOfRange checks that both workloads drop a trace job
// whose times exceed maxSeconds (a corrupt line) and count it,
// and refuse factors past maxFactor, so that no time they derive wraps
// around.
func TestTraceTimesOutOfRange(t *testing.T) {
	big := int64(maxSeconds + 1)
	trace := []workload.Job{
		{Number: 1, Submit: 0, Run: 10, AllocProcs: 2, ReqTime: 20},
		{Number: 2, Submit: big, Run: 10, AllocProcs: 2, ReqTime: 20},
		{Number: 3, Submit: 5, Run: big, AllocProcs: 2, ReqTime: 20},
		{Number: 4, Submit: 5, Run: 10, AllocProcs: 2, ReqTime: big},
		{Number: 5, Submit: 9, Run: 10, AllocProcs: 2, ReqTime: 20},
	}
	jobs, tally, err := Heine(trace, HeineConfig{Share: 1, StartFactor: 2, Seed: 1, Capacity: 8})
	if err != nil {
		t.Fatal(err)
	}
	if tally.OutOfRange != 3 || tally.Kept != 2 || tally.Kept+tally.Dropped() != tally.Read {
		t.Fatalf("Heine tally %+v: want 3 out of range, 2 kept", tally)
	}
	for _, j := range jobs {
		if j.Submit < 0 || j.Reservation && j.Start < j.Submit || j.Requested <= 0 {
			t.Fatalf("Heine job %+v has wrapped-around times", j)
		}
	}
	// Xiao reads no requested time (field 9): job 4 stays.
	xj, xt, err := Xiao(XiaoConfig{Trace: trace, ReservationRate: 1, KLo: 1, KHi: 2, ClusterSize: 8, Enlarge: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if xt.OutOfRange != 2 || xt.Kept != 3 || len(xj) != 3 {
		t.Fatalf("Xiao tally %+v, %d jobs: want 2 out of range, 3 kept", xt, len(xj))
	}
	// A corrupt first line does not shift the others: Xiao counts times
	// from the first usable submit time.
	shifted, _, err := Xiao(XiaoConfig{Trace: append([]workload.Job{{Number: 0, Submit: big, Run: 10, AllocProcs: 2}}, trace...),
		ReservationRate: 1, KLo: 1, KHi: 2, ClusterSize: 8, Enlarge: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range shifted {
		if j.Submit < 0 || j.Submit != xj[i].Submit {
			t.Fatalf("after a corrupt first line, job %d arrives at %d, %d without it", i, j.Submit, xj[i].Submit)
		}
	}
	if _, _, err := Heine(trace, HeineConfig{StartFactor: maxFactor + 1, Capacity: 8}); err == nil {
		t.Errorf("Heine accepted StartFactor %d", maxFactor+1)
	}
	if _, _, err := Xiao(XiaoConfig{Trace: trace, KLo: 1, KHi: math.Inf(1), ClusterSize: 8, Enlarge: 1}); err == nil {
		t.Errorf("Xiao accepted KHi = +Inf")
	}
}
