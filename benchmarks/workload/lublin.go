package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The Lublin–Feitelson model of rigid parallel jobs:
//
//	U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers:
//	modeling the characteristics of rigid jobs", J. Parallel and Distributed
//	Computing 63(11), 2003 (technical report version 2001; the model's
//	reference implementation is the "lublin99" generator of the Parallel
//	Workloads Archive).
//
// Every job draws three things:
//
//   - size: serial (one node) with probability SerialProb; otherwise
//     log2(size) is drawn from a two-stage uniform distribution — uniform on
//     [ULow, UMed] with probability UProb, uniform on [UMed, UHi] otherwise —
//     and, with probability Pow2Prob (of all jobs), rounded to an integer so
//     that the size is a power of two;
//   - runtime: ln(runtime in seconds) follows a hyper-Gamma distribution, a
//     mixture of Gamma(A1, B1) and Gamma(A2, B2) (shape, scale) whose weight
//     p = PA*size + PB (clipped to [0, 1]) on the first, short component falls
//     as jobs grow: big jobs run longer. Draws with ln(runtime) > 12 (about
//     45 hours) are redrawn, as in the reference generator;
//   - arrival: ln(gap in seconds) follows Gamma(AArr*ARAR, BArr) in "rush
//     hour" seconds (draws above 13 are redrawn), and a daily cycle stretches
//     the gap: the day has 48 half-hour buckets whose weights are the mass of
//     Gamma(ANum, BNum) over [i-0.5, i+0.5] for bucket number i = 11..58
//     (bucket i is the half hour starting at (i-1)/2 mod 24 o'clock),
//     normalised to mean 1; a bucket of weight w consumes w rush-hour
//     seconds per real second. Simulated time starts at midnight.
//
// With job classes (Typed), batch and interactive jobs arrive as two
// independent streams with their own parameters, merged by arrival time; the
// typeless ("whole sample") parameters describe all jobs with one stream.

// LublinParams are the parameters of one job class of the model. The values
// in DefaultLublinParams are the published fits as the authors' reference
// generator (lublin99 in the Parallel Workloads Archive) ships them for a
// 128-node machine — batch, interactive and typeless ("whole sample") sets —
// with only the size range shifted to the machine size.
type LublinParams struct {
	SerialProb float64 // probability of a one-node job
	Pow2Prob   float64 // probability of a power-of-two-sized parallel job
	ULow       float64 // log2 of the smallest parallel size (two-stage uniform low end)
	UMed       float64 // log2 where the two uniform stages meet
	UHi        float64 // log2 of the largest size (the machine size)
	UProb      float64 // weight of the lower stage [ULow, UMed]
	A1, B1     float64 // Gamma shape/scale of ln(runtime), short component
	A2, B2     float64 // Gamma shape/scale of ln(runtime), long component
	PA, PB     float64 // weight of the short component: p = PA*size + PB
	AArr, BArr float64 // Gamma shape/scale of ln(inter-arrival) at rush hour
	ARAR       float64 // arrive-rush-to-all ratio multiplying AArr
	ANum, BNum float64 // Gamma shape/scale of the daily arrival cycle (buckets)
}

// LublinClass selects a parameter set.
type LublinClass int

const (
	// Typeless is the "whole sample" fit: one stream for all jobs.
	Typeless LublinClass = iota
	// Batch is the fit for batch jobs.
	Batch
	// Interactive is the fit for interactive jobs.
	Interactive
)

// String names the class.
func (c LublinClass) String() string {
	switch c {
	case Typeless:
		return "typeless"
	case Batch:
		return "batch"
	case Interactive:
		return "interactive"
	}
	return fmt.Sprintf("LublinClass(%d)", int(c))
}

// DefaultLublinParams returns the published parameters of class c for a
// machine of maxNodes nodes (maxNodes >= 2). The published fits are for 128
// nodes (log2 = 7); for another size the size range [ULow..UHi] keeps its
// published distance to the top: UHi = log2(maxNodes) (batch and typeless),
// UMed = UHi - 2.5 (typeless) or UHi - 2 (batch), and for interactive jobs
// UHi = log2(maxNodes) - 1.5, UMed = UHi - 2.5, which is how the model's
// authors tell users to adapt it (UMed within [UHi-3.5, UHi-1.5]).
func DefaultLublinParams(c LublinClass, maxNodes int64) (LublinParams, error) {
	if maxNodes < 2 {
		return LublinParams{}, fmt.Errorf("lublin params: maxNodes = %d: must be >= 2", maxNodes)
	}
	hi := math.Log2(float64(maxNodes))
	switch c {
	case Typeless:
		return LublinParams{
			SerialProb: 0.244, Pow2Prob: 0.576,
			ULow: 0.8, UMed: hi - 2.5, UHi: hi, UProb: 0.86,
			A1: 4.2, B1: 0.94, A2: 312, B2: 0.03, PA: -0.0054, PB: 0.78,
			AArr: 10.2303, BArr: 0.4871, ARAR: 1.0225, ANum: 8.1737, BNum: 3.9631,
		}, nil
	case Batch:
		return LublinParams{
			SerialProb: 0.2927, Pow2Prob: 0.6686,
			ULow: 1.2, UMed: hi - 2, UHi: hi, UProb: 0.875,
			A1: 6.57, B1: 0.823, A2: 639.1, B2: 0.0156, PA: -0.003, PB: 0.6986,
			AArr: 6.0415, BArr: 0.8531, ARAR: 1.0519, ANum: 6.1271, BNum: 5.2740,
		}, nil
	case Interactive:
		return LublinParams{
			SerialProb: 0.1541, Pow2Prob: 0.625,
			ULow: 1, UMed: hi - 4, UHi: hi - 1.5, UProb: 0.705,
			A1: 3.8351, B1: 0.6605, A2: 7.073, B2: 0.6856, PA: -0.0118, PB: 0.9156,
			AArr: 6.5510, BArr: 0.6621, ARAR: 0.9797, ANum: 8.9186, BNum: 3.6680,
		}, nil
	}
	return LublinParams{}, fmt.Errorf("lublin params: unknown class %v", c)
}

// validate checks that p describes proper distributions.
func (p LublinParams) validate(maxNodes int64) error {
	bad := func(field, reason string) error {
		return fmt.Errorf("lublin params: %s %s", field, reason)
	}
	switch {
	case p.SerialProb < 0 || p.Pow2Prob < 0 || p.SerialProb+p.Pow2Prob > 1:
		return bad("SerialProb/Pow2Prob", "must be >= 0 with sum <= 1")
	case p.UProb < 0 || p.UProb > 1:
		return bad("UProb", "must be in [0,1]")
	case !(0 <= p.ULow && p.ULow <= p.UMed && p.UMed <= p.UHi):
		return bad("ULow/UMed/UHi", "must satisfy 0 <= ULow <= UMed <= UHi")
	case math.Exp2(p.UHi) > float64(maxNodes)+0.5:
		return bad("UHi", fmt.Sprintf("2^%g exceeds maxNodes %d", p.UHi, maxNodes))
	case p.A1 <= 0 || p.B1 <= 0 || p.A2 <= 0 || p.B2 <= 0:
		return bad("A1/B1/A2/B2", "must be > 0")
	case p.AArr <= 0 || p.BArr <= 0 || p.ARAR <= 0 || p.ANum <= 0 || p.BNum <= 0:
		return bad("AArr/BArr/ARAR/ANum/BNum", "must be > 0")
	}
	return nil
}

// Model limits of the reference generator: ln(runtime) and ln(gap) draws
// above these are redrawn.
const (
	maxLogRuntime = 12 // about 45 hours
	maxLogArrival = 13 // about 5 days
	dayBuckets    = 48
	bucketSeconds = 86400 / dayBuckets
	cycleFirst    = 11 // the fitted day starts with bucket number 11
)

// SynthJob is one generated job. Times are in (fractional) seconds since the
// start of the workload, which is a midnight.
type SynthJob struct {
	Submit  float64
	Runtime float64
	Nodes   int64
	Class   LublinClass
}

// SWF converts the job to an SWF record with the given job number, rounding
// times to whole seconds (runtime at least 1).
func (j SynthJob) SWF(number int64) Job {
	run := max(int64(math.Round(j.Runtime)), 1)
	queue := int64(Unknown)
	switch j.Class {
	case Batch:
		queue = 1
	case Interactive, Typeless:
		queue = 0
	}
	return Job{
		Number: number, Submit: int64(math.Round(j.Submit)), Wait: Unknown, Run: run,
		AllocProcs: j.Nodes, AvgCPU: Unknown, UsedMem: Unknown, ReqProcs: Unknown,
		ReqTime: Unknown, ReqMem: Unknown, Status: 1, User: Unknown, Group: Unknown,
		Executable: Unknown, Queue: queue, Partition: Unknown, PrecedingJob: Unknown,
		ThinkTime: Unknown,
	}
}

// LublinConfig configures a generator.
type LublinConfig struct {
	MaxNodes int64  // machine size; sizes never exceed it
	Typed    bool   // two streams (batch + interactive) instead of the typeless fit
	Seed     uint64 // seed of the PCG source; same seed, same jobs
}

// stream is one arrival process with its own parameters.
type stream struct {
	class   LublinClass
	p       LublinParams
	weights [dayBuckets]float64
	next    float64 // arrival time of the stream's next job
}

// Lublin generates jobs following the Lublin–Feitelson model.
type Lublin struct {
	cfg     LublinConfig
	rng     *rand.Rand
	streams []*stream
}

// NewLublin returns a generator with the published parameters for
// cfg.MaxNodes.
func NewLublin(cfg LublinConfig) (*Lublin, error) {
	if cfg.MaxNodes < 2 {
		return nil, fmt.Errorf("lublin: MaxNodes = %d: must be >= 2", cfg.MaxNodes)
	}
	classes := []LublinClass{Typeless}
	if cfg.Typed {
		classes = []LublinClass{Batch, Interactive}
	}
	var ps []LublinParams
	for _, c := range classes {
		p, err := DefaultLublinParams(c, cfg.MaxNodes)
		if err != nil {
			return nil, fmt.Errorf("lublin: %w", err)
		}
		ps = append(ps, p)
	}
	return NewLublinWithParams(cfg, classes, ps)
}

// NewLublinWithParams returns a generator with explicit parameters, one
// stream per class; classes and params must have the same length (1 or 2).
func NewLublinWithParams(cfg LublinConfig, classes []LublinClass, params []LublinParams) (*Lublin, error) {
	if cfg.MaxNodes < 2 {
		return nil, fmt.Errorf("lublin: MaxNodes = %d: must be >= 2", cfg.MaxNodes)
	}
	if len(classes) == 0 || len(classes) != len(params) {
		return nil, fmt.Errorf("lublin: %d classes for %d parameter sets", len(classes), len(params))
	}
	g := &Lublin{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6c75626c696e))}
	for i, p := range params {
		if err := p.validate(cfg.MaxNodes); err != nil {
			return nil, fmt.Errorf("lublin %v: %w", classes[i], err)
		}
		s := &stream{class: classes[i], p: p, weights: dailyWeights(p.ANum, p.BNum)}
		s.next = g.advance(s, 0)
		g.streams = append(g.streams, s)
	}
	return g, nil
}

// Next returns the next job in arrival order.
func (g *Lublin) Next() SynthJob {
	s := g.streams[0]
	for _, o := range g.streams[1:] {
		if o.next < s.next {
			s = o
		}
	}
	at := s.next
	s.next = g.advance(s, at)
	nodes := g.size(s.p)
	return SynthJob{Submit: at, Runtime: g.runtime(s.p, nodes), Nodes: nodes, Class: s.class}
}

// Generate returns the next n jobs.
func (g *Lublin) Generate(n int) []SynthJob {
	out := make([]SynthJob, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

// size draws a job size (nodes).
func (g *Lublin) size(p LublinParams) int64 {
	u := g.rng.Float64()
	if u < p.SerialProb {
		return 1
	}
	var e float64
	if g.rng.Float64() < p.UProb {
		e = p.ULow + (p.UMed-p.ULow)*g.rng.Float64()
	} else {
		e = p.UMed + (p.UHi-p.UMed)*g.rng.Float64()
	}
	if u < p.SerialProb+p.Pow2Prob {
		e = math.Round(e)
	}
	n := int64(math.Round(math.Exp2(e)))
	return min(max(n, 1), g.cfg.MaxNodes)
}

// runtime draws a runtime in seconds for a job of the given size.
func (g *Lublin) runtime(p LublinParams, nodes int64) float64 {
	w := min(max(p.PA*float64(nodes)+p.PB, 0), 1)
	for {
		var x float64
		if g.rng.Float64() < w {
			x = gammaRand(g.rng, p.A1, p.B1)
		} else {
			x = gammaRand(g.rng, p.A2, p.B2)
		}
		if x <= maxLogRuntime {
			return math.Exp(x)
		}
	}
}

// advance returns the arrival time after t for stream s: a rush-hour gap
// stretched by the daily cycle.
func (g *Lublin) advance(s *stream, t float64) float64 {
	var x float64
	for {
		x = gammaRand(g.rng, s.p.AArr*s.p.ARAR, s.p.BArr)
		if x <= maxLogArrival {
			break
		}
	}
	need := math.Exp(x) // rush-hour seconds to consume
	for {
		b := int(math.Mod(t, 86400) / bucketSeconds)
		if b >= dayBuckets { // float rounding at the end of a day
			b = dayBuckets - 1
		}
		end := (math.Floor(t/bucketSeconds) + 1) * bucketSeconds
		w := s.weights[b]
		avail := w * (end - t)
		if need <= avail {
			return t + need/w
		}
		need -= avail
		t = end
	}
}

// dailyWeights returns the 48 half-hour weights of the daily cycle,
// normalised to mean 1; index b is the half hour starting at b*30 minutes
// after midnight.
func dailyWeights(a, scale float64) [dayBuckets]float64 {
	var w [dayBuckets]float64
	sum := 0.0
	for i := cycleFirst; i < cycleFirst+dayBuckets; i++ {
		v := gammaMass(a, scale, float64(i)-0.5, float64(i)+0.5)
		w[(i-1)%dayBuckets] = v
		sum += v
	}
	for b := range w {
		w[b] = w[b] / (sum / dayBuckets)
		if w[b] < 1e-9 { // keep every half hour reachable
			w[b] = 1e-9
		}
	}
	return w
}

// gammaMass integrates the Gamma(a, scale) density over [lo, hi] with
// composite Simpson's rule; the density is smooth there (lo > 0).
func gammaMass(a, scale, lo, hi float64) float64 {
	lg, _ := math.Lgamma(a)
	pdf := func(x float64) float64 {
		if x <= 0 {
			return 0
		}
		return math.Exp((a-1)*math.Log(x) - x/scale - lg - a*math.Log(scale))
	}
	const n = 64 // even
	h := (hi - lo) / n
	s := pdf(lo) + pdf(hi)
	for k := 1; k < n; k++ {
		c := 2.0
		if k%2 == 1 {
			c = 4
		}
		s += c * pdf(lo+float64(k)*h)
	}
	return s * h / 3
}

// gammaRand draws from Gamma(shape, scale) with the squeeze method of
// Marsaglia and Tsang (2000); shapes below 1 use the boost
// Gamma(a) = Gamma(a+1) * U^(1/a).
func gammaRand(r *rand.Rand, shape, scale float64) float64 {
	if shape < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gammaRand(r, shape+1, scale) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v * scale
		}
		if u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * scale
		}
	}
}
