package planner

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestPlannerComplete(t *testing.T) {
	setup := func(t *testing.T) *Planner {
		p := New(nil)
		if err := p.AddResource("cpu", 10); err != nil {
			t.Fatal(err)
		}
		if err := p.Book(Booking{ID: "a", Parts: []Part{{"cpu", 6}}, Start: 10, End: 30}); err != nil {
			t.Fatal(err)
		}
		p.Advance(15)
		return p
	}
	tests := []struct {
		name    string
		id      string
		at      int64
		wantErr error
		field   string
		want    Completion
		free    []Block // over [15, 40)
	}{
		{name: "empty id", id: "", at: 20, wantErr: ErrInvalid, field: "id"},
		{name: "unknown", id: "x", at: 20, wantErr: ErrUnknownBooking},
		{name: "before origin", id: "a", at: 12, wantErr: ErrInvalid, field: "at"},
		{name: "at end", id: "a", at: 30, wantErr: ErrInvalid, field: "at"},
		{name: "after end", id: "a", at: 31, wantErr: ErrInvalid, field: "at"},
		{name: "early", id: "a", at: 20, want: Completion{ID: "a", Start: 10, Requested: 20, Actual: 10},
			free: []Block{{15, 20, 4}, {20, 40, 10}}},
		{name: "at origin", id: "a", at: 15, want: Completion{ID: "a", Start: 10, Requested: 20, Actual: 5},
			free: []Block{{15, 40, 10}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := setup(t)
			before := stateOf(p)
			got, err := p.Complete(tc.id, tc.at)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				var fe *FieldError
				if tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
					t.Fatalf("err = %v, want field %q", err, tc.field)
				}
				if !reflect.DeepEqual(before, stateOf(p)) {
					t.Fatal("state changed on error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("completion = %+v, want %+v", got, tc.want)
			}
			free, _ := p.Availability("cpu", 15, 40)
			if !reflect.DeepEqual(free, tc.free) {
				t.Fatalf("free = %v, want %v", free, tc.free)
			}
			if err := checkConsistent(p); err != nil {
				t.Fatal(err)
			}
			p.Advance(25)
			if p.Len() != 0 {
				t.Fatalf("completed booking still live after its new end: %d", p.Len())
			}
		})
	}
}

func TestReleaseModel(t *testing.T) {
	m := NewReleaseModel()
	// Prior only: nothing ends before its requested end.
	if got := m.EndsBy("u", 0, 100, 0, 99); got != 0 {
		t.Fatalf("prior EndsBy = %v, want 0", got)
	}
	if got := m.EndsBy("u", 0, 100, 0, 100); got != 1 {
		t.Fatalf("EndsBy at end = %v, want 1", got)
	}
	for range 80 {
		m.Record("", 100, 50)
	}
	// 80 of 100 (80 + 20 prior) end by half time.
	if got := m.EndsBy("u", 0, 100, 0, 60); math.Abs(got-0.8) > 1e-12 {
		t.Fatalf("EndsBy(60%%) = %v, want 0.8", got)
	}
	if got := m.EndsBy("u", 0, 100, 0, 40); got != 0 {
		t.Fatalf("EndsBy(40%%) = %v, want 0", got)
	}
	// Having run past half time, it will run to the end.
	if got := m.EndsBy("u", 0, 100, 70, 90); got != 0 {
		t.Fatalf("conditional EndsBy = %v, want 0", got)
	}
	// An owner with its own history uses it.
	for range 30 {
		m.Record("fast", 100, 10)
	}
	if got := m.EndsBy("fast", 0, 100, 0, 20); math.Abs(got-30.0/50) > 1e-12 {
		t.Fatalf("owner EndsBy = %v, want 0.6", got)
	}
	if got := m.EndsBy("slow", 0, 100, 0, 20); math.Abs(got-30.0/130) > 1e-12 {
		t.Fatalf("global EndsBy = %v, want %v", got, 30.0/130)
	}
}

// newSched returns a scheduler over one resource "cpu" of capacity 10 with
// the given policy.
func newSched(t *testing.T, pol ResourcePolicy) *Scheduler {
	t.Helper()
	p := New(nil)
	if err := p.AddResource("cpu", 10); err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(p)
	if err := s.SetPolicy("cpu", pol); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchedulerMoveVariable(t *testing.T) {
	tests := []struct {
		name     string
		pol      ResourcePolicy
		run      bool // start the variable job before the reservation arrives
		pushes   int  // earlier reservations that pushed the job
		accepted bool
		moved    []Move
	}{
		{name: "reject", pol: ResourcePolicy{Policy: PolicyReject}},
		{name: "move", pol: ResourcePolicy{Policy: PolicyMoveVariable}, accepted: true,
			moved: []Move{{ID: "v", From: 0, To: 18}}},
		{name: "running jobs do not move", pol: ResourcePolicy{Policy: PolicyMoveVariable}, run: true},
		{name: "starvation guard", pol: ResourcePolicy{Policy: PolicyMoveVariable, MaxPushes: 1}, pushes: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSched(t, tc.pol)
			if _, err := s.Submit("v", "u", Part{"cpu", 10}, 10, 0); err != nil {
				t.Fatal(err)
			}
			if tc.run {
				if rep := s.Advance(0); !reflect.DeepEqual(rep.Started, []string{"v"}) {
					t.Fatalf("started %v", rep.Started)
				}
			}
			s.items["v"].Pushes = tc.pushes
			a, err := s.Reserve("r", "u", Part{"cpu", 5}, 5, 13)
			if !tc.accepted {
				if !errors.Is(err, ErrNoCapacity) {
					t.Fatalf("err = %v, want ErrNoCapacity", err)
				}
				if v, _ := s.Get("v"); v.Start != 0 {
					t.Fatalf("refused reservation moved the job to %d", v.Start)
				}
				if err := checkConsistent(s.p); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.Moved, tc.moved) || !reflect.DeepEqual(s.Moves(), tc.moved) {
				t.Fatalf("moved = %v (Moves %v), want %v", a.Moved, s.Moves(), tc.moved)
			}
			if v, _ := s.Get("v"); v.Pushes != 1 {
				t.Fatalf("pushes = %d", v.Pushes)
			}
			// The reservation ends early at 8: the job moves back to 8.
			s.Advance(5)
			if _, err := s.Complete("r", 8); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.Get("v"); v.Start != 8 {
				t.Fatalf("job not re-planned earlier: start %d", v.Start)
			}
			if err := checkConsistent(s.p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSchedulerRelaxed(t *testing.T) {
	history := func(s *Scheduler) {
		for range 100 {
			s.Releases.Record("", 100, 50)
		}
	}
	t.Run("start overlap", func(t *testing.T) {
		for _, tc := range []struct {
			vstar  float64
			accept bool
		}{{0.8, true}, {0.9, false}} {
			s := newSched(t, ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: tc.vstar})
			history(s)
			if _, err := s.Reserve("a", "u", Part{"cpu", 10}, 0, 100); err != nil {
				t.Fatal(err)
			}
			a, err := s.Reserve("b", "u", Part{"cpu", 10}, 80, 40)
			if !tc.accept {
				if !errors.Is(err, ErrNoCapacity) {
					t.Fatalf("v*=%v: err = %v", tc.vstar, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("v*=%v: %v", tc.vstar, err)
			}
			if !a.Relaxed || math.Abs(a.Probability-100.0/120) > 1e-12 {
				t.Fatalf("admission = %+v, want relaxed with p=%v", a, 100.0/120)
			}
			if b, _ := s.Get("b"); b.Overbooked != 10 {
				t.Fatalf("overbooked = %d", b.Overbooked)
			}
			// a runs to its end: b is in violation when due.
			s.Advance(0)
			rep := s.Advance(80)
			want := []Violation{{ID: "b", Resource: "cpu", At: 80, Short: 10, Kind: KindReservation}}
			if !reflect.DeepEqual(rep.Violations, want) {
				t.Fatalf("violations = %+v, want %+v", rep.Violations, want)
			}
			if _, ok := s.Get("b"); ok {
				t.Fatal("violated reservation still planned")
			}
		}
	})
	t.Run("early release avoids the violation", func(t *testing.T) {
		s := newSched(t, ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.8})
		history(s)
		mustReserve(t, s, "a", 10, 0, 100)
		mustReserve(t, s, "b", 10, 80, 40)
		s.Advance(0)
		s.Advance(50)
		if _, err := s.Complete("a", 50); err != nil {
			t.Fatal(err)
		}
		rep := s.Advance(80)
		if len(rep.Violations) != 0 || !reflect.DeepEqual(rep.Started, []string{"b"}) {
			t.Fatalf("report = %+v", rep)
		}
	})
	t.Run("end overlap", func(t *testing.T) {
		s := newSched(t, ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.8})
		history(s)
		mustReserve(t, s, "later", 10, 50, 50)
		got := s.Probability("u", "cpu", 10, 0, 60)
		// Ends by 50 of 60 requested: ratio 833 permille > 500.
		if math.Abs(got-100.0/120) > 1e-12 {
			t.Fatalf("p = %v", got)
		}
		if p := s.Probability("u", "cpu", 10, 0, 110); p != 0 {
			t.Fatalf("must end by 50 of 110 (ratio 454): p = %v, want 0", p)
		}
	})
	t.Run("prior admits nothing overlapping", func(t *testing.T) {
		s := newSched(t, ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.1})
		mustReserve(t, s, "a", 10, 0, 100)
		if _, err := s.Reserve("b", "u", Part{"cpu", 1}, 50, 10); !errors.Is(err, ErrNoCapacity) {
			t.Fatalf("err = %v", err)
		}
	})
}

func mustReserve(t *testing.T, s *Scheduler, id string, amount, start, dur int64) Admission {
	t.Helper()
	a, err := s.Reserve(id, "u", Part{"cpu", amount}, start, dur)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSchedulerValidation(t *testing.T) {
	s := newSched(t, ResourcePolicy{})
	s.Advance(10)
	tests := []struct {
		name  string
		do    func() error
		field string
		want  error
	}{
		{"policy", func() error { return s.SetPolicy("cpu", ResourcePolicy{Policy: 9}) }, "policy", ErrInvalid},
		{"min success", func() error { return s.SetPolicy("cpu", ResourcePolicy{Policy: PolicyRelaxed}) }, "min_success", ErrInvalid},
		{"max pushes", func() error { return s.SetPolicy("cpu", ResourcePolicy{MaxPushes: -1}) }, "max_pushes", ErrInvalid},
		{"resource", func() error { return s.SetPolicy("gpu", ResourcePolicy{}) }, "", ErrUnknownResource},
		{"submit amount", func() error { _, err := s.Submit("v", "", Part{"cpu", 11}, 5, 10); return err }, "parts[0].amount", ErrInvalid},
		{"submit duration", func() error { _, err := s.Submit("v", "", Part{"cpu", 1}, 0, 10); return err }, "duration", ErrInvalid},
		{"submit not before", func() error { _, err := s.Submit("v", "", Part{"cpu", 1}, 5, 9); return err }, "not_before", ErrInvalid},
		{"reserve start", func() error { _, err := s.Reserve("r", "", Part{"cpu", 1}, 9, 5); return err }, "start", ErrInvalid},
		{"reserve overflow", func() error { _, err := s.Reserve("r", "", Part{"cpu", 1}, 20, MaxTime); return err }, "duration", ErrInvalid},
		{"complete unknown", func() error { _, err := s.Complete("zz", 20); return err }, "", ErrUnknownBooking},
		{"co min joint", func() error {
			_, err := s.CoReserve("c", "", []SubRequest{{1, 20, 5}}, []string{"cpu"}, 2)
			return err
		}, "min_joint", ErrInvalid},
		{"co sub amount", func() error {
			_, err := s.CoReserve("c", "", []SubRequest{{0, 20, 5}}, []string{"cpu"}, 0)
			return err
		}, "subs[0].amount", ErrInvalid},
		{"co sub start", func() error {
			_, err := s.CoReserve("c", "", []SubRequest{{1, 2, 5}}, []string{"cpu"}, 0)
			return err
		}, "subs[0].start", ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var fe *FieldError
			if tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
				t.Fatalf("err = %v, want field %q", err, tc.field)
			}
		})
	}
	if _, err := s.Submit("v", "", Part{"cpu", 1}, 5, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete("v", 12); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("complete before start: %v", err)
	}
}

func TestCoReserve(t *testing.T) {
	p := New(nil)
	for _, n := range []string{"a", "b", "c"} {
		if err := p.AddResource(n, 10); err != nil {
			t.Fatal(err)
		}
	}
	s := NewScheduler(p)
	for _, n := range []string{"b", "c"} {
		if err := s.SetPolicy(n, ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		s.Releases.Record("", 100, 50)
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Reserve("full-"+n, "", Part{n, 10}, 0, 100); err != nil {
			t.Fatal(err)
		}
	}
	// c is busier after 100 than b: the relaxed sub-request prefers b.
	if _, err := s.Reserve("c-later", "", Part{"c", 10}, 100, 100); err != nil {
		t.Fatal(err)
	}
	got, err := s.CoReserve("job", "", []SubRequest{{5, 100, 10}, {10, 80, 30}}, []string{"a", "b", "c"}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	want := CoAdmission{Mapping: []string{"a", "b"}, Probability: []float64{1, 100.0 / 120}, Joint: 100.0 / 120}
	if !reflect.DeepEqual(got.Mapping, want.Mapping) || got.Probability[0] != 1 ||
		math.Abs(got.Probability[1]-want.Probability[1]) > 1e-12 || math.Abs(got.Joint-want.Joint) > 1e-12 {
		t.Fatalf("co-reservation = %+v, want %+v", got, want)
	}
	// A joint probability below the bound books nothing.
	before := stateOf(p)
	if _, err := s.CoReserve("job2", "", []SubRequest{{5, 100, 10}, {10, 80, 30}}, []string{"a", "b"}, 0.9); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("err = %v", err)
	}
	if !reflect.DeepEqual(before, stateOf(p)) {
		t.Fatal("refused co-reservation changed the plan")
	}
	if _, ok := s.Get("job2/0"); ok {
		t.Fatal("refused co-reservation left an item")
	}
}
