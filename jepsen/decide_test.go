package jepsen

import (
	"math/rand/v2"
	"testing"
)

// TestDecidersAgree is a property test: the planner-backed decider and the
// brute-force reference reach the same decision on random booked states and
// random (co-allocation) requests. A model built on a wrong planner would
// silently accept wrong histories; this catches disagreement first.
func TestDecidersAgree(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	caps := map[string]int64{"a": 4, "b": 2, "c": 1}
	names := []string{"a", "b", "c"}
	randParts := func() []Part {
		perm := rng.Perm(3)[:1+rng.IntN(3)]
		var ps []Part
		for _, i := range perm {
			ps = append(ps, Part{Resource: names[i], Amount: 1 + rng.Int64N(caps[names[i]])})
		}
		return ps
	}
	for iter := range 500 {
		var booked []shape
		for range rng.IntN(12) {
			req := Input{Parts: randParts(), Duration: 1 + rng.Int64N(15)}
			req.NotBefore = rng.Int64N(40)
			req.Deadline = req.NotBefore + req.Duration + rng.Int64N(30)
			s, ok, err := ReferenceDecide(caps, booked, req)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				booked = append(booked, shape{Parts: req.Parts, Start: s, End: s + req.Duration})
			}
		}
		req := Input{Parts: randParts(), Duration: 1 + rng.Int64N(15)}
		req.NotBefore = rng.Int64N(40)
		req.Deadline = req.NotBefore + req.Duration + rng.Int64N(30)
		s1, ok1, err1 := ReferenceDecide(caps, booked, req)
		s2, ok2, err2 := PlannerDecide(caps, booked, req)
		if (err1 == nil) != (err2 == nil) || ok1 != ok2 || (ok1 && s1 != s2) {
			t.Fatalf("iter %d: reference (%d,%v,%v) != planner (%d,%v,%v) for %+v over %+v", iter, s1, ok1, err1, s2, ok2, err2, req, booked)
		}
	}
}

// TestDecideInvalid checks that malformed requests are refused with the
// field named, by both deciders.
func TestDecideInvalid(t *testing.T) {
	caps := map[string]int64{"a": 1}
	tests := []struct {
		name string
		req  Input
	}{
		{"no parts", Input{Duration: 1, Deadline: 5}},
		{"unknown resource", Input{Parts: []Part{{Resource: "z", Amount: 1}}, Duration: 1, Deadline: 5}},
		{"zero amount", Input{Parts: []Part{{Resource: "a"}}, Duration: 1, Deadline: 5}},
		{"zero duration", Input{Parts: []Part{{Resource: "a", Amount: 1}}, Deadline: 5}},
		{"short window", Input{Parts: []Part{{Resource: "a", Amount: 1}}, Duration: 6, Deadline: 5}},
		{"same resource twice", Input{Parts: []Part{{Resource: "a", Amount: 1}, {Resource: "a", Amount: 1}}, Duration: 1, Deadline: 5}},
	}
	for _, tt := range tests {
		for name, d := range map[string]Decider{"reference": ReferenceDecide, "planner": PlannerDecide} {
			if _, _, err := d(caps, nil, tt.req); err == nil {
				t.Errorf("%s/%s: no error", tt.name, name)
			}
		}
	}
}
