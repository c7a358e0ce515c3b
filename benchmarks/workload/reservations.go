package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Reservation is an advance-reservation request derived from a job: Amount
// units for Duration, starting no earlier than Start and ending no later
// than Deadline, submitted at Arrival. Times are in the units chosen by
// ReservationConfig.TimeScale.
type Reservation struct {
	Job      int64 // number of the source job
	Arrival  int64
	Start    int64 // book-start: earliest allowed start
	Deadline int64 // book-end: start+Duration must not exceed it
	Duration int64
	Amount   int64
}

// ReservationConfig turns jobs into reservations the way Heine et al.
// (ICCS 2005) do: the requested start is the submit time plus a start delay
// rand[0,1] * duration * StartFactor. To that we add a booking window: the
// deadline leaves start + duration * (1 + rand[0,1] * Slack), so a request
// may be moved by up to Slack times its duration (Slack = 0: fixed start).
type ReservationConfig struct {
	StartFactor float64 // Heine et al. use 0.5, 1 and 2
	Slack       float64 // window slack as a multiple of the duration, >= 0
	TimeScale   int64   // time units per second (1 = seconds, 1000 = ms)
	// UseRequested takes the requested time (SWF field 9) as the duration
	// when it is known; otherwise the run time is used.
	UseRequested bool
	// OverEstimate multiplies run times used as durations (for logs without
	// requested times); 0 means 1.
	OverEstimate float64
	MaxAmount    int64 // jobs larger than this are dropped; 0 = no limit
	Seed         uint64
}

func (c ReservationConfig) check() error {
	switch {
	case !(c.StartFactor >= 0 && c.StartFactor <= math.MaxFloat64):
		return fmt.Errorf("reservations: StartFactor = %g: must be a finite number >= 0", c.StartFactor)
	case !(c.Slack >= 0 && c.Slack <= math.MaxFloat64):
		return fmt.Errorf("reservations: Slack = %g: must be a finite number >= 0", c.Slack)
	case c.TimeScale <= 0:
		return fmt.Errorf("reservations: TimeScale = %d: must be > 0", c.TimeScale)
	case !(c.OverEstimate >= 0 && c.OverEstimate <= math.MaxFloat64):
		return fmt.Errorf("reservations: OverEstimate = %g: must be a finite number >= 0", c.OverEstimate)
	}
	return nil
}

// begin checks c and returns the seeded generator and the runtime
// multiplier (OverEstimate, 1 when unset) shared by FromSWF and FromSynth.
func (c ReservationConfig) begin() (*rand.Rand, float64, error) {
	if err := c.check(); err != nil {
		return nil, 0, err
	}
	over := c.OverEstimate
	if over == 0 {
		over = 1
	}
	return rand.New(rand.NewPCG(c.Seed, 0x72657376)), over, nil
}

// maxUnits bounds a request's times in time units: far below where int64
// arithmetic on them (the deadline, a planner's end) would overflow, and
// far above any real trace (2^62 ms is 146 million years).
const maxUnits = 1 << 62

// fits reports whether a request submitted at submit for dur seconds keeps
// every time build derives from it, up to its latest deadline (a start
// delay of dur * StartFactor, then dur and a slack of dur * Slack), within
// maxUnits; float64 arithmetic, so that the test itself cannot overflow.
func (c ReservationConfig) fits(submit, dur float64) bool {
	return float64(c.TimeScale)*(submit+dur*(1+c.StartFactor+c.Slack)) <= maxUnits
}

// build makes one reservation from times in seconds (c.fits holds).
func (c ReservationConfig) build(rng *rand.Rand, job int64, submit, dur float64, amount int64) Reservation {
	ts := float64(c.TimeScale)
	d := max(int64(math.Round(dur*ts)), 1)
	arr := int64(math.Round(submit * ts))
	start := arr + int64(rng.Float64()*float64(d)*c.StartFactor)
	slack := int64(rng.Float64() * float64(d) * c.Slack)
	return Reservation{Job: job, Arrival: arr, Start: start, Deadline: start + d + slack, Duration: d, Amount: amount}
}

// FromSWF converts log jobs into reservations, in log order. Jobs with an
// unknown size, no usable duration, or more than MaxAmount processors are
// skipped; the count of skipped jobs is returned. FromTally says why.
func FromSWF(jobs []Job, c ReservationConfig) ([]Reservation, int, error) {
	rs, t, err := FromTally(jobs, c)
	return rs, t.Dropped(), err
}

// FromTally is FromSWF that also counts every dropped or adjusted job by
// reason. The duration is the requested time (field 9) when UseRequested
// is set and the log has it, else the run time times OverEstimate (counted
// as RunAsEstimate when UseRequested is set). A job whose run time is 0 or
// unknown but whose requested time is used is kept and counted as ZeroRun.
func FromTally(jobs []Job, c ReservationConfig) ([]Reservation, Tally, error) {
	tally := Tally{Read: len(jobs), Capacity: c.MaxAmount}
	rng, over, err := c.begin()
	if err != nil {
		return nil, tally, err
	}
	out := make([]Reservation, 0, len(jobs))
	for _, j := range jobs {
		amount := j.Procs()
		tooLarge := c.MaxAmount > 0 && amount > c.MaxAmount
		tally.Observe(j, tooLarge)
		var dur float64
		requested := c.UseRequested && j.ReqTime > 0
		switch {
		case requested:
			dur = float64(j.ReqTime)
		case j.Run > 0:
			dur = float64(j.Run) * over
		}
		switch {
		case amount <= 0:
			tally.NoSize++
			continue
		case tooLarge:
			tally.TooLarge++
			continue
		case dur <= 0:
			tally.NoTime++
			continue
		case j.Submit < 0:
			tally.NoSubmit++
			continue
		case !c.fits(float64(j.Submit), dur):
			tally.OutOfRange++
			continue
		}
		if c.UseRequested && !requested {
			tally.RunAsEstimate++
		}
		if requested && j.Run <= 0 {
			tally.ZeroRun++
		}
		tally.Kept++
		out = append(out, c.build(rng, j.Number, float64(j.Submit), dur, amount))
	}
	return out, tally, nil
}

// FromSynth converts generated jobs into reservations, keeping sub-second
// precision when TimeScale > 1. Runtimes are multiplied by OverEstimate.
func FromSynth(jobs []SynthJob, c ReservationConfig) ([]Reservation, int, error) {
	rng, over, err := c.begin()
	if err != nil {
		return nil, 0, err
	}
	out := make([]Reservation, 0, len(jobs))
	skipped := 0
	for i, j := range jobs {
		if j.Nodes <= 0 || j.Runtime <= 0 || (c.MaxAmount > 0 && j.Nodes > c.MaxAmount) || !c.fits(j.Submit, j.Runtime*over) {
			skipped++
			continue
		}
		out = append(out, c.build(rng, int64(i+1), j.Submit, j.Runtime*over, j.Nodes))
	}
	return out, skipped, nil
}
