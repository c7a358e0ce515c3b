package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

// HeineConfig builds the workload of Heine et al. §4.1 from a trace: every
// log job is a variable job, and Share of them (0..1, chosen at random)
// are copied into reservations whose requested start is the submit time
// plus rand[0,1] * estimated run time * StartFactor.
type HeineConfig struct {
	Share       float64
	StartFactor float64
	Seed        uint64
	// MaxJobs keeps only the first MaxJobs log jobs (0 = all).
	MaxJobs int
}

// Heine returns the jobs of the Heine et al. experiment. The estimate is
// the requested time (SWF field 9) when the log has it, else the run time.
func Heine(log []workload.Job, c HeineConfig) ([]Job, error) {
	if !(c.Share >= 0 && c.Share <= 1) {
		return nil, fmt.Errorf("sim: Share = %g: must be in [0, 1]", c.Share)
	}
	if !(c.StartFactor >= 0) {
		return nil, fmt.Errorf("sim: StartFactor = %g: must be >= 0", c.StartFactor)
	}
	var base []Job
	for _, j := range log {
		if c.MaxJobs > 0 && len(base) >= c.MaxJobs {
			break
		}
		req := j.ReqTime
		if req <= 0 {
			req = j.Run
		}
		if j.Procs() <= 0 || j.Run <= 0 || req <= 0 || j.Submit < 0 {
			continue
		}
		base = append(base, Job{ID: j.Number, Owner: fmt.Sprint("u", j.User), Submit: j.Submit, Procs: j.Procs(), Requested: req, Actual: min(j.Run, req)})
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x6865696e))
	idx := rng.Perm(len(base))
	n := int(math.Round(c.Share * float64(len(base))))
	out := append([]Job(nil), base...)
	var maxID int64
	for _, j := range base {
		maxID = max(maxID, j.ID)
	}
	for k, i := range idx[:n] {
		r := base[i]
		r.ID = maxID + 1 + int64(k)
		r.Reservation = true
		r.Start = r.Submit + int64(rng.Float64()*float64(r.Requested)*c.StartFactor)
		out = append(out, r)
	}
	return out, nil
}

// XiaoConfig builds the workload of Xiao & Hu §V.A: a Lublin–Feitelson
// stream with times divided by 60, a share ReservationRate of requests
// turned into reservations starting U[100,1000] s after arrival with
// Enlarge times the nodes (split over clusters of Split nodes), and every
// requested time the run time times k_over ~ U[KLo, KHi].
type XiaoConfig struct {
	Jobs            int
	ReservationRate float64
	KLo, KHi        float64
	ClusterSize     int64
	Enlarge         int64
	// ArrivalScale further divides arrival times (not run times), raising
	// the load: the stream is generated for one cluster and spread over
	// several. 0 means 1.
	ArrivalScale float64
	Seed         uint64
}

// Xiao returns the jobs of the Xiao & Hu experiment.
func Xiao(c XiaoConfig) ([]Job, error) {
	switch {
	case c.Jobs <= 0:
		return nil, fmt.Errorf("sim: Jobs = %d: must be > 0", c.Jobs)
	case !(c.ReservationRate >= 0 && c.ReservationRate <= 1):
		return nil, fmt.Errorf("sim: ReservationRate = %g: must be in [0, 1]", c.ReservationRate)
	case !(c.KLo >= 1 && c.KHi >= c.KLo):
		return nil, fmt.Errorf("sim: k_over interval [%g, %g]: need 1 <= KLo <= KHi", c.KLo, c.KHi)
	case c.ClusterSize <= 0:
		return nil, fmt.Errorf("sim: ClusterSize = %d: must be > 0", c.ClusterSize)
	case c.Enlarge <= 0:
		return nil, fmt.Errorf("sim: Enlarge = %d: must be > 0", c.Enlarge)
	}
	g, err := workload.NewLublin(workload.LublinConfig{MaxNodes: c.ClusterSize, Seed: c.Seed})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	scale := 60.0
	if c.ArrivalScale > 0 {
		scale *= c.ArrivalScale
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7869616f))
	var out []Job
	for i, sj := range g.Generate(c.Jobs) {
		run := max(int64(math.Round(sj.Runtime/60)), 1)
		k := c.KLo + rng.Float64()*(c.KHi-c.KLo)
		j := Job{ID: int64(i + 1), Submit: int64(math.Round(sj.Submit / scale)), Procs: sj.Nodes, Actual: run,
			Requested: max(int64(math.Ceil(float64(run)*k)), run)}
		if rng.Float64() < c.ReservationRate {
			j.Reservation = true
			j.Start = j.Submit + 100 + rng.Int64N(901)
			j.Procs *= c.Enlarge
			j.Split = c.ClusterSize
		}
		out = append(out, j)
	}
	return out, nil
}
