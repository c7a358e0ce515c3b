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
	Capacity     int64
}

// Default001 is the full sweep; quick shrinks it for tests.
func Default001(quick bool) Exp001 {
	if quick {
		return Exp001{Shares: []float64{0, 0.5}, StartFactors: []float64{1}, MaxJobs: 600, Seed: 1, Capacity: 100}
	}
	return Exp001{Shares: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, StartFactors: []float64{0.5, 1, 2}, MaxJobs: 10000, Seed: 1, Capacity: 100}
}

// Run001 runs the sweep over the log for REJECT and MOVE_VARIABLE.
func Run001(log []workload.Job, e Exp001) ([]Row001, error) {
	var rows []Row001
	for _, sf := range e.StartFactors {
		for _, sh := range e.Shares {
			jobs, err := Heine(log, HeineConfig{Share: sh, StartFactor: sf, Seed: e.Seed, MaxJobs: e.MaxJobs})
			if err != nil {
				return nil, err
			}
			for _, pol := range []planner.Policy{planner.PolicyReject, planner.PolicyMoveVariable} {
				r, err := Run(jobs, Config{Clusters: []int64{e.Capacity}, Policy: pol})
				if err != nil {
					return nil, fmt.Errorf("share %g, start factor %g, %v: %w", sh, sf, pol, err)
				}
				rows = append(rows, Row001{Policy: pol, Share: sh, StartFactor: sf, Result: r})
			}
		}
	}
	return rows, nil
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
// RELAXED for every v*.
func Run002(e Exp002) ([]Row002, error) {
	clusters := make([]int64, e.Clusters)
	for i := range clusters {
		clusters[i] = e.ClusterSize
	}
	var rows []Row002
	for _, k := range e.KOver {
		for _, rate := range e.Rates {
			jobs, err := Xiao(XiaoConfig{Jobs: e.Jobs, ReservationRate: rate, KLo: k[0], KHi: k[1], ClusterSize: e.ClusterSize,
				Enlarge: e.Enlarge, ArrivalScale: e.ArrivalScale, Seed: e.Seed})
			if err != nil {
				return nil, err
			}
			r, err := Run(jobs, Config{Clusters: clusters, Policy: planner.PolicyReject})
			if err != nil {
				return nil, err
			}
			rows = append(rows, Row002{Policy: planner.PolicyReject, Rate: rate, KLo: k[0], KHi: k[1], Result: r})
			for _, v := range e.VStars {
				r, err := Run(jobs, Config{Clusters: clusters, Policy: planner.PolicyRelaxed, VStar: v})
				if err != nil {
					return nil, err
				}
				rows = append(rows, Row002{Policy: planner.PolicyRelaxed, Rate: rate, KLo: k[0], KHi: k[1], VStar: v, Result: r})
			}
		}
	}
	return rows, nil
}
