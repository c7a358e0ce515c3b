package workload

import (
	"testing"
)

func TestFromSWFWindows(t *testing.T) {
	jobs := []Job{
		{Number: 1, Submit: 100, Run: 50, AllocProcs: 4, ReqTime: 200},
		{Number: 2, Submit: 200, Run: 80, AllocProcs: 2, ReqTime: Unknown},
		{Number: 3, Submit: 300, Run: 10, AllocProcs: Unknown, ReqProcs: Unknown, ReqTime: 20},
		{Number: 4, Submit: 400, Run: 10, AllocProcs: 500, ReqTime: 20},
		{Number: 5, Submit: 500, Run: Unknown, AllocProcs: 3, ReqTime: Unknown},
	}
	for _, sf := range []float64{0, 0.5, 1, 2} {
		for _, slack := range []float64{0, 1} {
			cfg := ReservationConfig{StartFactor: sf, Slack: slack, TimeScale: 1000, UseRequested: true, OverEstimate: 2, MaxAmount: 128, Seed: 9}
			rs, skipped, err := FromSWF(jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if skipped != 3 || len(rs) != 2 {
				t.Fatalf("kept %d, skipped %d; want 2 and 3", len(rs), skipped)
			}
			wantDur := []int64{200_000, 160_000} // requested time; run time * OverEstimate
			for i, r := range rs {
				if r.Duration != wantDur[i] || r.Arrival != jobs[i].Submit*1000 || r.Amount != jobs[i].AllocProcs {
					t.Fatalf("reservation %d = %+v", i, r)
				}
				if r.Start < r.Arrival || float64(r.Start-r.Arrival) > sf*float64(r.Duration) {
					t.Fatalf("start delay out of [0, %g*d]: %+v", sf, r)
				}
				if sl := r.Deadline - r.Start - r.Duration; sl < 0 || float64(sl) > slack*float64(r.Duration) {
					t.Fatalf("window slack out of [0, %g*d]: %+v", slack, r)
				}
			}
		}
	}
	// Deterministic for a seed.
	cfg := ReservationConfig{StartFactor: 1, Slack: 1, TimeScale: 1, Seed: 1}
	a, _, _ := FromSWF(jobs, cfg)
	b, _, _ := FromSWF(jobs, cfg)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different reservations")
		}
	}
}

func TestFromSynth(t *testing.T) {
	g, _ := NewLublin(LublinConfig{MaxNodes: 64, Seed: 2})
	jobs := g.Generate(500)
	rs, skipped, err := FromSynth(jobs, ReservationConfig{StartFactor: 1, Slack: 0.5, TimeScale: 1000, MaxAmount: 32})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs)+skipped != len(jobs) || skipped == 0 {
		t.Fatalf("kept %d skipped %d of %d", len(rs), skipped, len(jobs))
	}
	for _, r := range rs {
		if r.Amount > 32 || r.Duration < 1 || r.Deadline < r.Start+r.Duration || r.Start < r.Arrival {
			t.Fatalf("bad reservation %+v", r)
		}
	}
}

func TestReservationConfigErrors(t *testing.T) {
	for _, c := range []ReservationConfig{
		{StartFactor: -1, TimeScale: 1},
		{Slack: -1, TimeScale: 1},
		{TimeScale: 0},
		{TimeScale: 1, OverEstimate: -2},
	} {
		if _, _, err := FromSWF(nil, c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
		if _, _, err := FromSynth(nil, c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}
