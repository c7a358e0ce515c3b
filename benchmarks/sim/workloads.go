package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

// maxSeconds is the largest submit, run or requested time (in seconds)
// the workloads take from a trace: about 35,000 years, far beyond any
// real log, and small enough that the products and sums of times the
// simulator forms stay within int64. A job with a larger one (a corrupt
// line) counts as OutOfRange.
const maxSeconds = 1 << 40

// maxFactor bounds the factors a workload multiplies times with (Heine's
// StartFactor, Xiao's k_over): with times of at most maxSeconds their
// products stay far within int64. The papers use 0.5 to 5.
const maxFactor = 1000

// HeineConfig builds the workload of Heine et al. §4.1 from a trace: every
// log job is a variable job, and Share of them (0..1, chosen at random)
// are copied into reservations whose requested start is the submit time
// plus rand[0,1] * estimated run time * StartFactor.
type HeineConfig struct {
	Share       float64
	StartFactor float64
	Seed        uint64
	// MaxJobs keeps only the first MaxJobs usable log jobs (0 = all).
	MaxJobs int
	// Capacity is the machine's size: larger jobs are dropped and counted
	// (0 = no limit).
	Capacity int64
}

// Heine returns the jobs of the Heine et al. experiment and what it did to
// the log's jobs. The estimate is the requested time (SWF field 9) when the
// log has it, else the run time (counted as RunAsEstimate); a job that ran
// longer than its request is cut at it (CutAtRequest). Jobs without a size,
// a positive run time or a submit time, and jobs larger than Capacity, are
// dropped and counted.
func Heine(log []workload.Job, c HeineConfig) ([]Job, workload.Tally, error) {
	tally := workload.Tally{Capacity: c.Capacity}
	if !(c.Share >= 0 && c.Share <= 1) {
		return nil, tally, fmt.Errorf("sim: Share = %g: must be in [0, 1]", c.Share)
	}
	if !(c.StartFactor >= 0 && c.StartFactor <= maxFactor) {
		return nil, tally, fmt.Errorf("sim: StartFactor = %g: must be in [0, %d]", c.StartFactor, maxFactor)
	}
	if c.Capacity < 0 {
		return nil, tally, fmt.Errorf("sim: Capacity = %d: must be >= 0", c.Capacity)
	}
	var base []Job
	for _, j := range log {
		if c.MaxJobs > 0 && tally.Kept >= c.MaxJobs {
			break
		}
		tally.Read++
		tooLarge := c.Capacity > 0 && j.Procs() > c.Capacity
		tally.Observe(j, tooLarge)
		switch {
		case j.Procs() <= 0:
			tally.NoSize++
			continue
		case tooLarge:
			tally.TooLarge++
			continue
		case j.Run <= 0:
			tally.NoTime++
			continue
		case j.Submit < 0:
			tally.NoSubmit++
			continue
		case j.Submit > maxSeconds || j.Run > maxSeconds || j.ReqTime > maxSeconds:
			tally.OutOfRange++
			continue
		}
		req := j.ReqTime
		if req <= 0 {
			req = j.Run
			tally.RunAsEstimate++
		}
		if j.Run > req {
			tally.CutAtRequest++
		}
		tally.Kept++
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
	return out, tally, nil
}

// XiaoConfig builds the workload of Xiao & Hu §V.A: a Lublin–Feitelson
// stream (or the jobs of a trace), a share ReservationRate of requests
// turned into reservations starting U[100,1000] time units after arrival
// with Enlarge times the nodes (split over clusters of ClusterSize nodes),
// and every requested time the run time times k_over ~ U[KLo, KHi].
type XiaoConfig struct {
	Jobs            int // generated jobs; with Trace, the first Jobs usable trace jobs (0: all)
	ReservationRate float64
	KLo, KHi        float64
	ClusterSize     int64
	Enlarge         int64
	// ArrivalScale further divides arrival times (not run times), raising
	// the load: the stream is generated for one cluster and spread over
	// several. 0 means 1.
	ArrivalScale float64
	// Minutes reproduces the paper's scaling literally: run and arrival
	// times divided by 60 and rounded to whole units (a run of at least
	// one). Every job shorter than 90 s then runs one unit, and its request
	// ceil(1 x k_over) is 2 units whatever k_over > 1 is: twice its run, an
	// artefact of the rounding that over-states the over-estimation. When
	// false, times stay in seconds and the start offset is U[100,1000]
	// minutes (x 60 s), the same workload without the rounding.
	Minutes bool
	// Trace, when non-nil, replaces the generated stream: its jobs'
	// submit and run times (field 9 is not used: requests follow the
	// k_over model). Jobs larger than ClusterSize, without a size, a
	// positive run time or a submit time are dropped and counted.
	Trace []workload.Job
	Seed  uint64
}

// Xiao returns the jobs of the Xiao & Hu experiment and what the
// conversion did to the source jobs.
func Xiao(c XiaoConfig) ([]Job, workload.Tally, error) {
	tally := workload.Tally{Capacity: c.ClusterSize}
	switch {
	case c.Jobs <= 0 && c.Trace == nil:
		return nil, tally, fmt.Errorf("sim: Jobs = %d: must be > 0", c.Jobs)
	case c.Jobs < 0:
		return nil, tally, fmt.Errorf("sim: Jobs = %d: must be >= 0", c.Jobs)
	case !(c.ReservationRate >= 0 && c.ReservationRate <= 1):
		return nil, tally, fmt.Errorf("sim: ReservationRate = %g: must be in [0, 1]", c.ReservationRate)
	case !(c.KLo >= 1 && c.KHi >= c.KLo && c.KHi <= maxFactor):
		return nil, tally, fmt.Errorf("sim: k_over interval [%g, %g]: need 1 <= KLo <= KHi <= %d", c.KLo, c.KHi, maxFactor)
	case c.ClusterSize <= 0:
		return nil, tally, fmt.Errorf("sim: ClusterSize = %d: must be > 0", c.ClusterSize)
	case c.Enlarge <= 0:
		return nil, tally, fmt.Errorf("sim: Enlarge = %d: must be > 0", c.Enlarge)
	}
	// src holds the source jobs in seconds.
	type srcJob struct {
		submit, run float64
		procs       int64
	}
	var src []srcJob
	if c.Trace != nil {
		// Times count from the first job with a usable submit time (a
		// corrupt first line must not shift every other job).
		var t0 int64
		for _, j := range c.Trace {
			if j.Submit >= 0 && j.Submit <= maxSeconds {
				t0 = j.Submit
				break
			}
		}
		for _, j := range c.Trace {
			if c.Jobs > 0 && len(src) >= c.Jobs {
				break
			}
			tally.Read++
			tooLarge := j.Procs() > c.ClusterSize
			tally.Observe(j, tooLarge)
			switch {
			case j.Procs() <= 0:
				tally.NoSize++
				continue
			case tooLarge:
				tally.TooLarge++
				continue
			case j.Run <= 0:
				tally.NoTime++
				continue
			case j.Submit < 0:
				tally.NoSubmit++
				continue
			case j.Submit > maxSeconds || j.Run > maxSeconds:
				tally.OutOfRange++
				continue
			}
			src = append(src, srcJob{submit: float64(j.Submit - t0), run: float64(j.Run), procs: j.Procs()})
		}
	} else {
		g, err := workload.NewLublin(workload.LublinConfig{MaxNodes: c.ClusterSize, Seed: c.Seed})
		if err != nil {
			return nil, tally, fmt.Errorf("sim: %w", err)
		}
		for _, sj := range g.Generate(c.Jobs) {
			tally.Read++
			tally.Observe(workload.Job{AllocProcs: sj.Nodes, Run: int64(math.Round(sj.Runtime))}, false)
			src = append(src, srcJob{submit: sj.Submit, run: sj.Runtime, procs: sj.Nodes})
		}
	}
	unit, offset := 1.0, int64(60) // seconds; the start offset in minutes
	if c.Minutes {
		unit, offset = 60, 1
	}
	arrival := unit
	if c.ArrivalScale > 0 {
		arrival *= c.ArrivalScale
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7869616f))
	out := make([]Job, 0, len(src))
	for i, sj := range src {
		run := max(int64(math.Round(sj.run/unit)), 1)
		if run == 1 && c.Minutes {
			tally.OneUnit++
		}
		k := c.KLo + rng.Float64()*(c.KHi-c.KLo)
		j := Job{ID: int64(i + 1), Submit: int64(math.Round(sj.submit / arrival)), Procs: sj.procs, Actual: run,
			Requested: max(int64(math.Ceil(float64(run)*k)), run)}
		if rng.Float64() < c.ReservationRate {
			j.Reservation = true
			j.Start = j.Submit + (100+rng.Int64N(901))*offset
			j.Procs *= c.Enlarge
			j.Split = c.ClusterSize
		}
		tally.Kept++
		out = append(out, j)
	}
	return out, tally, nil
}
