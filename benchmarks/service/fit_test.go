package service

import (
	"math/rand/v2"
	"testing"
)

// bruteFit is the reference: try every millisecond start in the window.
func bruteFit(bs []Interval, capacity, amount, dur, nb, dl int64) (int64, bool) {
	for s := nb; s+dur <= dl; s++ {
		ok := true
		for t := s; t < s+dur && ok; t++ {
			var use int64
			for _, b := range bs {
				if b.Start <= t && t < b.End {
					use += b.Amount
				}
			}
			ok = use+amount <= capacity
		}
		if ok {
			return s, true
		}
	}
	return 0, false
}

func TestEarliestFitTable(t *testing.T) {
	bs := []Interval{{0, 10, 6}, {5, 20, 4}, {20, 30, 10}}
	tests := []struct {
		name                string
		amount, dur, nb, dl int64
		want                int64
		ok                  bool
	}{
		{"fits at not_before", 4, 5, 0, 100, 0, true},
		{"waits for first end", 5, 5, 0, 100, 10, true},
		{"full resource blocks the middle", 1, 5, 18, 100, 30, true},
		{"window too short", 7, 5, 0, 14, 0, false},
		{"bigger than capacity", 11, 1, 0, 100, 0, false},
		{"window smaller than duration", 1, 10, 40, 45, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := EarliestFit(bs, 10, tt.amount, tt.dur, tt.nb, tt.dl)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Fatalf("EarliestFit = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// Property: EarliestFit agrees with the brute-force reference, and adding
// what it admits never overbooks.
func TestEarliestFitMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		var bs []Interval
		const capacity = 8
		for range rng.IntN(8) {
			s := rng.Int64N(60)
			bs = append(bs, Interval{s, s + 1 + rng.Int64N(20), 1 + rng.Int64N(4)})
		}
		amount, dur := 1+rng.Int64N(8), 1+rng.Int64N(15)
		nb := rng.Int64N(50)
		dl := nb + dur + rng.Int64N(40)
		want, wok := bruteFit(bs, capacity, amount, dur, nb, dl)
		got, ok := EarliestFit(bs, capacity, amount, dur, nb, dl)
		if ok != wok || got != want {
			t.Fatalf("case %d: EarliestFit(%v, amount %d, dur %d, [%d,%d]) = %d,%v; reference %d,%v", i, bs, amount, dur, nb, dl, got, ok, want, wok)
		}
		if ok && Overbooked(bs, capacity) == nil {
			if err := Overbooked(append(bs, Interval{got, got + dur, amount}), capacity); err != nil {
				t.Fatalf("case %d: admitted start %d overbooks: %v", i, got, err)
			}
		}
	}
}

func TestOverbooked(t *testing.T) {
	if err := Overbooked([]Interval{{0, 10, 5}, {10, 20, 5}}, 5); err != nil {
		t.Fatalf("touching intervals: %v", err)
	}
	if err := Overbooked([]Interval{{0, 10, 5}, {9, 20, 1}}, 5); err == nil {
		t.Fatal("overlap over capacity not reported")
	}
}

func TestShapeValidate(t *testing.T) {
	tests := []struct {
		s  Shape
		ok bool
	}{
		{Shape{"r", 1, 10, 0, 10}, true},
		{Shape{"", 1, 10, 0, 10}, false},
		{Shape{"r", 0, 10, 0, 10}, false},
		{Shape{"r", 1, 0, 0, 10}, false},
		{Shape{"r", 1, 10, 5, 10}, false},
	}
	for _, tt := range tests {
		if err := tt.s.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tt.s, err, tt.ok)
		}
	}
}

func TestShaperShapesAreValid(t *testing.T) {
	sh, err := NewShaper(ShaperConfig{Resources: ResourceNames(3), Capacity: 64, Base: 1000, Horizon: 3_600_000, Slack: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		s := sh.Next()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if s.Amount > 64 || s.NotBefore < 1000 || s.NotBefore >= 1000+3_600_000 {
			t.Fatalf("shape out of bounds: %+v", s)
		}
		if r := sh.Resize(s); r.Validate() != nil || r.Amount > 64 {
			t.Fatalf("resize out of bounds: %+v", r)
		}
	}
	if _, err := NewShaper(ShaperConfig{Capacity: 64, Horizon: 1}); err == nil {
		t.Fatal("no resources accepted")
	}
}

func TestParseMix(t *testing.T) {
	if m, err := ParseMix("reserve"); err != nil || m != ReserveOnlyMix {
		t.Fatalf("reserve: %v %v", m, err)
	}
	if _, err := ParseMix("bogus"); err == nil {
		t.Fatal("bogus mix accepted")
	}
}
