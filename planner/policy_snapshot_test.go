package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// policyDriver replays a random mixed workload (variable jobs, relaxed
// co-reservations, early completions) and logs every answer.
type policyDriver struct {
	src    *rand.PCG
	rng    *rand.Rand
	now    int64
	actual map[string]int64
	log    []string
}

func newPolicyDriver(seed uint64) *policyDriver {
	src := rand.NewPCG(seed, 11)
	return &policyDriver{src: src, rng: rand.New(src), actual: map[string]int64{}}
}

func (d *policyDriver) clone() *policyDriver {
	c := *d
	state, _ := d.src.MarshalBinary()
	c.src = &rand.PCG{}
	_ = c.src.UnmarshalBinary(state)
	c.rng = rand.New(c.src)
	c.actual = maps2(d.actual)
	c.log = nil
	return &c
}

func maps2(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (d *policyDriver) run(s *Scheduler, from, to int) {
	for step := from; step < to; step++ {
		id := fmt.Sprintf("i%d", step)
		switch op := d.rng.IntN(10); {
		case op < 3:
			res := []string{"a", "b"}[d.rng.IntN(2)]
			st, err := s.Submit(id, fmt.Sprint("o", d.rng.IntN(2)), Part{res, 1 + d.rng.Int64N(16)}, 1+d.rng.Int64N(30), d.now)
			d.log = append(d.log, fmt.Sprint("submit ", st, err))
		case op < 5:
			sr := SubRequest{1 + d.rng.Int64N(16), d.now + d.rng.Int64N(40), 1 + d.rng.Int64N(30)}
			a, err := s.CoReserve(id, fmt.Sprint("o", d.rng.IntN(2)), []SubRequest{sr}, []string{"a", "b"}, 0)
			d.log = append(d.log, fmt.Sprint("co ", a, err))
		default:
			next, ok := s.NextStart()
			if !ok || next > d.now+5 {
				next = d.now + 5
			}
			d.now = max(d.now, next)
			rep := s.Advance(d.now)
			d.log = append(d.log, fmt.Sprint("adv ", d.now, rep))
			for _, id := range rep.Started {
				it, _ := s.Get(id)
				d.actual[id] = it.Start + max(1, (it.End-it.Start)*int64(20+d.rng.IntN(81))/100)
			}
			for _, res := range []string{"a", "b"} {
				for _, it := range s.Items(res) {
					if it.Running && d.actual[it.ID] <= d.now && d.actual[it.ID] < it.End {
						c, err := s.Complete(it.ID, max(d.actual[it.ID], d.now))
						d.log = append(d.log, fmt.Sprint("complete ", c, err))
					}
				}
			}
		}
	}
}

func newPolicyScheduler(t *testing.T, f TimelineFactory) *Scheduler {
	t.Helper()
	p := New(f)
	s := NewScheduler(p)
	for _, n := range []string{"a", "b"} {
		if err := p.AddResource(n, 16); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetPolicy("a", ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.6}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPolicy("b", ResourcePolicy{Policy: PolicyMoveVariable, MaxPushes: 3}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSchedulerSnapshot exports a Scheduler (with its Planner's snapshot)
// half way through a workload, restores it, and requires the restored copy
// to answer the rest of the workload exactly like the original.
func TestSchedulerSnapshot(t *testing.T) {
	for seed := range uint64(4) {
		s := newPolicyScheduler(t, NewList)
		d := newPolicyDriver(seed)
		d.run(s, 0, 250)
		st := s.Export()
		p2, err := Restore(NewIndexed, s.Planner().Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		s2, err := RestoreScheduler(p2, st)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(s2.Export(), st) {
			t.Fatalf("seed %d: export of the restored scheduler differs", seed)
		}
		d2 := d.clone()
		d.log = nil
		d.run(s, 250, 500)
		d2.run(s2, 250, 500)
		if !slices.Equal(d.log, d2.log) {
			for i := range min(len(d.log), len(d2.log)) {
				if d.log[i] != d2.log[i] {
					t.Fatalf("seed %d: entry %d differs:\n%s\n%s", seed, i, d.log[i], d2.log[i])
				}
			}
			t.Fatalf("seed %d: logs differ in length %d vs %d", seed, len(d.log), len(d2.log))
		}
	}
}

func TestRestoreSchedulerRejects(t *testing.T) {
	s := newPolicyScheduler(t, NewList)
	if _, err := s.Submit("v", "", Part{"a", 4}, 10, 0); err != nil {
		t.Fatal(err)
	}
	good := s.Export()
	snap := s.Planner().Snapshot()
	tests := []struct {
		name string
		mut  func(*SchedulerState)
		want error
	}{
		{"unknown resource", func(st *SchedulerState) { st.Items[0].Resource = "zz" }, ErrUnknownResource},
		{"booking amount", func(st *SchedulerState) { st.Items[0].Amount = 5 }, ErrInvalid},
		{"overbooked", func(st *SchedulerState) { st.Items[0].Overbooked = 9 }, ErrInvalid},
		{"duplicate", func(st *SchedulerState) { st.Items = append(st.Items, st.Items[0]) }, ErrInvalid},
		{"bucket", func(st *SchedulerState) { st.Releases.Global = []RatioCount{{Permille: 1001, Count: 1}} }, ErrInvalid},
		{"policy", func(st *SchedulerState) {
			st.Policies[0].Policy.MinSuccess = 2
		}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := good
			st.Items = slices.Clone(good.Items)
			st.Policies = slices.Clone(good.Policies)
			tc.mut(&st)
			p, err := Restore(NewList, snap)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := RestoreScheduler(p, st); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzSchedulerInputs feeds arbitrary numbers to every Scheduler entry
// point: each call either succeeds or returns an error, never panics, and
// the Planner stays consistent.
func FuzzSchedulerInputs(f *testing.F) {
	f.Add(int64(4), int64(10), int64(0), int64(5), uint8(2), 0.7)
	f.Add(int64(-1), int64(0), int64(-5), int64(MaxTime), uint8(0), 2.0)
	f.Add(int64(16), int64(MaxTime), int64(MaxTime-1), int64(1), uint8(1), 0.0)
	f.Fuzz(func(t *testing.T, amount, dur, start, at int64, pol uint8, vstar float64) {
		s := newPolicyScheduler(t, NewList)
		_ = s.SetPolicy("b", ResourcePolicy{Policy: Policy(pol % 4), MinSuccess: vstar, MaxPushes: int(pol % 3)})
		for range 30 {
			s.Releases.Record("", 10, 6)
		}
		_, _ = s.Submit("v", "", Part{"a", amount}, dur, start)
		_, _ = s.Submit("w", "", Part{"b", 8}, 10, 0)
		_, _ = s.Reserve("r", "", Part{"b", amount}, start, dur)
		_, _ = s.Reserve("q", "", Part{"a", 16}, 0, 10)
		_ = s.Probability("", "a", amount, start, start+1)
		_, _ = s.CoReserve("c", "", []SubRequest{{amount, start, dur}, {1, at, 3}}, []string{"a", "b"}, vstar)
		s.Advance(min(max(at, 0), 100))
		for _, res := range []string{"a", "b"} {
			for _, it := range s.Items(res) {
				_, _ = s.Complete(it.ID, at)
				_ = s.Cancel(it.ID)
			}
		}
		s.Advance(max(at, 0))
		if err := checkConsistent(s.Planner()); err != nil {
			t.Fatal(err)
		}
	})
}
