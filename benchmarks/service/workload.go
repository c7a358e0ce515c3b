package service

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

// Shaper draws request shapes: sizes and runtimes from the Lublin–Feitelson
// model, resources uniformly, starts folded into a fixed horizon after Base
// so that the booking density stays the same however long a run lasts. A
// Shaper is not safe for concurrent use; give each client its own.
type Shaper struct {
	gen       *workload.Lublin
	rng       *rand.Rand
	resources []string
	capacity  int64
	base      int64 // Unix ms of the horizon's start
	horizon   int64 // ms
	slack     float64
}

// ShaperConfig configures a Shaper.
type ShaperConfig struct {
	Resources []string
	Capacity  int64   // machine size of the model and capacity of each resource
	Base      int64   // Unix ms where the booking horizon starts
	Horizon   int64   // ms; starts are folded into [Base, Base+Horizon)
	Slack     float64 // window = duration * (1 + Slack)
	Seed      uint64
}

// NewShaper returns a seeded Shaper.
func NewShaper(c ShaperConfig) (*Shaper, error) {
	switch {
	case len(c.Resources) == 0:
		return nil, fmt.Errorf("shaper: resources: none given")
	case c.Capacity < 2:
		return nil, fmt.Errorf("shaper: capacity = %d: must be >= 2", c.Capacity)
	case c.Horizon <= 0:
		return nil, fmt.Errorf("shaper: horizon = %d: must be > 0", c.Horizon)
	case c.Slack < 0 || math.IsNaN(c.Slack):
		return nil, fmt.Errorf("shaper: slack = %g: must be >= 0", c.Slack)
	}
	g, err := workload.NewLublin(workload.LublinConfig{MaxNodes: c.Capacity, Seed: c.Seed})
	if err != nil {
		return nil, fmt.Errorf("shaper: %w", err)
	}
	return &Shaper{
		gen: g, rng: rand.New(rand.NewPCG(c.Seed, 0x7368617065)),
		resources: c.Resources, capacity: c.Capacity, base: c.Base, horizon: c.Horizon, slack: c.Slack,
	}, nil
}

// Next returns the next shape.
func (s *Shaper) Next() Shape {
	j := s.gen.Next()
	dur := max(int64(math.Round(j.Runtime*1000)), 1000)
	dur = min(dur, s.horizon/4)
	start := s.base + int64(j.Submit*1000)%s.horizon
	window := dur + int64(s.rng.Float64()*s.slack*float64(dur))
	return Shape{
		Resource:  s.resources[s.rng.IntN(len(s.resources))],
		Amount:    min(max(j.Nodes, 1), s.capacity),
		Duration:  dur,
		NotBefore: start,
		Deadline:  start + window,
	}
}

// Resize returns a modified version of sh on the same resource: the amount
// halved or doubled (within capacity) and the same window.
func (s *Shaper) Resize(sh Shape) Shape {
	if s.rng.IntN(2) == 0 || sh.Amount*2 > s.capacity {
		sh.Amount = max(sh.Amount/2, 1)
	} else {
		sh.Amount *= 2
	}
	return sh
}
