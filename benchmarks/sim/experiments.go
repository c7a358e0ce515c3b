package sim

import (
	"fmt"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	"github.com/ledgerd/ledgerd/planner"
)

// Row001 is one point of the Heine et al. reproduction.
type Row001 struct {
	Policy      planner.Policy
	Share       float64 // reservations as a share of the variable jobs
	StartFactor float64
	Result      Result
}

// Exp001 configures the Heine et al. reproduction.
type Exp001 struct {
	Shares       []float64
	StartFactors []float64
	MaxJobs      int // first log jobs used (0 = all)
	Seed         uint64
	// Capacity is the nodes of the one cluster; jobs larger than it are
	// dropped and counted. The caller takes it from the trace's header
	// unless the user gives one.
	Capacity int64
}

// Default001 is the full sweep; quick shrinks it for tests. Capacity is
// left 0: it comes from the trace.
func Default001(quick bool) Exp001 {
	if quick {
		return Exp001{Shares: []float64{0, 0.5}, StartFactors: []float64{1}, MaxJobs: 600, Seed: 1}
	}
	return Exp001{Shares: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, StartFactors: []float64{0.5, 1, 2}, MaxJobs: 10000, Seed: 1}
}

// Progress is told after each simulated run how many of the total are
// done and which point finished; nil means no reporting.
type Progress func(done, total int, what string)

// Run001 runs the sweep over the log for REJECT and MOVE_VARIABLE. It also
// returns what the conversion did to the log's jobs (the same at every
// point).
func Run001(log []workload.Job, e Exp001, progress Progress) ([]Row001, workload.Tally, error) {
	var tally workload.Tally
	if e.Capacity <= 0 {
		return nil, tally, fmt.Errorf("sim: experiment 001: Capacity = %d: must be > 0", e.Capacity)
	}
	var rows []Row001
	total := 2 * len(e.StartFactors) * len(e.Shares)
	for _, sf := range e.StartFactors {
		for _, sh := range e.Shares {
			jobs, t, err := Heine(log, HeineConfig{Share: sh, StartFactor: sf, Seed: e.Seed, MaxJobs: e.MaxJobs, Capacity: e.Capacity})
			if err != nil {
				return nil, tally, err
			}
			tally = t
			for _, pol := range []planner.Policy{planner.PolicyReject, planner.PolicyMoveVariable} {
				r, err := Run(jobs, Config{Clusters: []int64{e.Capacity}, Policy: pol})
				if err != nil {
					return nil, tally, fmt.Errorf("share %g, start factor %g, %v: %w", sh, sf, pol, err)
				}
				rows = append(rows, Row001{Policy: pol, Share: sh, StartFactor: sf, Result: r})
				if progress != nil {
					progress(len(rows), total, fmt.Sprintf("start factor %g, share %g, %v", sf, sh, pol))
				}
			}
		}
	}
	return rows, tally, nil
}

// Row002 is one point of the Xiao & Hu reproduction. VStar is 0 for the
// conventional (REJECT) baseline.
type Row002 struct {
	Policy   planner.Policy
	Rate     float64
	KLo, KHi float64
	VStar    float64
	Result   Result
}

// Exp002 configures the Xiao & Hu reproduction.
type Exp002 struct {
	Rates        []float64
	KOver        [][2]float64
	VStars       []float64
	Jobs         int
	Clusters     int
	ClusterSize  int64
	Enlarge      int64
	ArrivalScale float64
	Seed         uint64
	// Minutes selects the paper's literal ÷60 scaling with rounding (see
	// XiaoConfig.Minutes); false keeps seconds.
	Minutes bool
	// Trace replaces the generated stream when non-nil (see
	// XiaoConfig.Trace); ClusterSize is then the trace's capacity.
	Trace []workload.Job
}

// Default002 is the full sweep; quick shrinks it for tests.
func Default002(quick bool) Exp002 {
	e := Exp002{
		Rates: []float64{0.10, 0.15, 0.20, 0.25}, KOver: [][2]float64{{1.0, 1.2}, {1.2, 1.5}, {1.5, 1.8}},
		VStars: []float64{0.6, 0.7, 0.8, 0.9, 0.95}, Jobs: 10000, Clusters: 12, ClusterSize: 64, Enlarge: 4,
		ArrivalScale: 10, Seed: 1,
	}
	if quick {
		e.Rates, e.KOver, e.VStars, e.Jobs = []float64{0.25}, [][2]float64{{1.2, 1.5}}, []float64{0.8}, 1500
	}
	return e
}

// Run002 runs the sweep: per rate and k_over interval, REJECT once and
// RELAXED for every v*. It also returns what the conversion did to the
// source jobs (the same at every point).
func Run002(e Exp002, progress Progress) ([]Row002, workload.Tally, error) {
	var tally workload.Tally
	clusters := make([]int64, e.Clusters)
	for i := range clusters {
		clusters[i] = e.ClusterSize
	}
	var rows []Row002
	total := len(e.KOver) * len(e.Rates) * (1 + len(e.VStars))
	for _, k := range e.KOver {
		for _, rate := range e.Rates {
			jobs, t, err := Xiao(XiaoConfig{Jobs: e.Jobs, ReservationRate: rate, KLo: k[0], KHi: k[1], ClusterSize: e.ClusterSize,
				Enlarge: e.Enlarge, ArrivalScale: e.ArrivalScale, Seed: e.Seed, Minutes: e.Minutes, Trace: e.Trace})
			if err != nil {
				return nil, tally, err
			}
			tally = t
			r, err := Run(jobs, Config{Clusters: clusters, Policy: planner.PolicyReject})
			if err != nil {
				return nil, tally, err
			}
			rows = append(rows, Row002{Policy: planner.PolicyReject, Rate: rate, KLo: k[0], KHi: k[1], Result: r})
			if progress != nil {
				progress(len(rows), total, fmt.Sprintf("k_over [%g,%g], rate %g, REJECT", k[0], k[1], rate))
			}
			for _, v := range e.VStars {
				r, err := Run(jobs, Config{Clusters: clusters, Policy: planner.PolicyRelaxed, VStar: v})
				if err != nil {
					return nil, tally, err
				}
				rows = append(rows, Row002{Policy: planner.PolicyRelaxed, Rate: rate, KLo: k[0], KHi: k[1], VStar: v, Result: r})
				if progress != nil {
					progress(len(rows), total, fmt.Sprintf("k_over [%g,%g], rate %g, RELAXED v*=%g", k[0], k[1], rate, v))
				}
			}
		}
	}
	return rows, tally, nil
}
