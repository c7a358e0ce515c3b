package sim

import (
	"errors"
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
	rows, err := Run001(readKTH(t), e)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(e.Shares) * len(e.StartFactors) * 2; len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
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
	rows, err := Run002(Default002(true))
	if err != nil {
		t.Fatal(err)
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
	jobs, err := Xiao(XiaoConfig{Jobs: 400, ReservationRate: 0.3, KLo: 1.2, KHi: 1.5, ClusterSize: 32, Enlarge: 2, ArrivalScale: 4, Seed: 3})
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
	jobs, err := Heine(log, HeineConfig{Share: 2.0 / 3, StartFactor: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
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
	for _, c := range []HeineConfig{{Share: -0.1}, {Share: 1.1}, {Share: 0.5, StartFactor: -1}} {
		if _, err := Heine(log, c); err == nil {
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
		if _, err := Xiao(c); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
	jobs, err := Xiao(good)
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
