package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

func mustSlotted(t testing.TB, capacity, origin, slotLen, slots int64) *SlottedTimeline {
	t.Helper()
	s, err := NewSlottedTimeline(capacity, origin, slotLen, slots)
	if err != nil {
		t.Fatalf("NewSlottedTimeline: %v", err)
	}
	return s
}

func TestSlottedConstructorErrors(t *testing.T) {
	tests := []struct {
		name                           string
		capacity, origin, slotLen, num int64
		field                          string
	}{
		{"negative capacity", -1, 0, 1, 10, "capacity"},
		{"zero slot length", 5, 0, 0, 10, "slotLen"},
		{"negative slot length", 5, 0, -3, 10, "slotLen"},
		{"zero slots", 5, 0, 1, 0, "slots"},
		{"huge ring", 5, 0, 1, maxSlottedSlots + 1, "slots"},
		{"length overflow", 5, 0, MaxTime / 2, 4, "slotLen"},
		{"origin overflow", 5, MaxTime - 10, 1, 20, "origin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSlottedTimeline(tc.capacity, tc.origin, tc.slotLen, tc.num)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want FieldError on %q", err, tc.field)
			}
		})
	}
	// Valid configuration works through the factory.
	tl := SlottedFactory(10, 9)(4, 100)
	if got := tl.Origin(); got != 100 {
		t.Fatalf("Origin = %d, want 100", got)
	}
	if got := tl.(*SlottedTimeline).Horizon(); got != 190 {
		t.Fatalf("Horizon = %d, want 190", got)
	}
}

func TestSlottedEarliest(t *testing.T) {
	// capacity 4, slots of 10 starting at 0, horizon 100.
	// Booked: 3 units over [12,18) -> slot [10,20) has 1 free.
	//         4 units over [40,41) -> slot [40,50) has 0 free.
	setup := func(t *testing.T) *SlottedTimeline {
		s := mustSlotted(t, 4, 0, 10, 10)
		if err := s.Book(12, 18, 3); err != nil {
			t.Fatal(err)
		}
		if err := s.Book(40, 41, 4); err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name                           string
		amount, dur, notBefore, latest int64
		want                           int64
		ok                             bool
	}{
		{"fits at notBefore", 1, 5, 0, 100, 0, true},
		{"notBefore inside a slot is kept", 2, 3, 3, 100, 3, true},
		{"notBefore crossing into busy slot skips to boundary", 2, 10, 3, 100, 20, true},
		{"next boundary after busy slot", 2, 5, 11, 100, 20, true},
		{"whole slot over-reserved though [18,20) is free", 2, 2, 18, 19, 0, false},
		{"needs slots 20..40 only", 4, 20, 15, 100, 20, true},
		{"blocked by full slot", 4, 30, 15, 100, 50, true},
		{"latestStart cuts search", 4, 30, 15, 45, 0, false},
		{"beyond horizon", 1, 11, 90, 95, 0, false},
		{"ends exactly at horizon", 1, 10, 90, 95, 90, true},
		{"notBefore past horizon", 1, 1, 100, 200, 0, false},
		{"latest start equals boundary", 4, 5, 45, 50, 50, true},
		{"amount above capacity", 5, 1, 0, 100, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			got, ok := s.Earliest(tc.amount, tc.dur, tc.notBefore, tc.latest)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("Earliest(%d,%d,%d,%d) = %d,%v want %d,%v", tc.amount, tc.dur, tc.notBefore, tc.latest, got, ok, tc.want, tc.ok)
			}
			if ok {
				if err := s.Book(got, got+tc.dur, tc.amount); err != nil {
					t.Fatalf("Book at the start Earliest found: %v", err)
				}
			}
		})
	}
}

func TestSlottedBookReleaseBlocks(t *testing.T) {
	s := mustSlotted(t, 4, 0, 10, 10)
	if err := s.Book(15, 25, 1); err != nil {
		t.Fatal(err)
	}
	// The booking touches slots [10,20) and [20,30) and occupies both in
	// full; the last slot and the tail are equal, so they merge.
	want := []Block{{0, 10, 4}, {10, 30, 3}, {30, MaxTime, 4}}
	if got := s.Blocks(0, MaxTime); !reflect.DeepEqual(got, want) {
		t.Fatalf("Blocks = %v, want %v", got, want)
	}
	if got := s.Blocks(12, 35); !reflect.DeepEqual(got, []Block{{12, 30, 3}, {30, 35, 4}}) {
		t.Fatalf("clipped Blocks = %v", got)
	}
	if got := s.MinFree(29, 31); got != 3 {
		t.Fatalf("MinFree = %d, want 3", got)
	}
	// Not enough in slot [20,30): nothing changes.
	before := s.Blocks(0, MaxTime)
	if err := s.Book(0, 21, 4); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("Book over a busy slot: err = %v, want ErrNoCapacity", err)
	}
	if got := s.Blocks(0, MaxTime); !reflect.DeepEqual(got, before) {
		t.Fatalf("failed Book changed state: %v -> %v", before, got)
	}
	// Past the horizon.
	if err := s.Book(95, 101, 1); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("Book past horizon: err = %v, want ErrNoCapacity", err)
	}
	var fe *FieldError
	if err := s.Release(95, 101, 1); !errors.As(err, &fe) || fe.Field != "end" {
		t.Fatalf("Release past horizon: err = %v, want FieldError on end", err)
	}
	if err := s.Book(5, 5, 1); !errors.As(err, &fe) || fe.Field != "end" {
		t.Fatalf("empty Book: err = %v", err)
	}
	if err := s.Book(5, 6, 0); !errors.As(err, &fe) || fe.Field != "amount" {
		t.Fatalf("zero amount: err = %v", err)
	}
	if err := s.Release(5, 6, MaxTime); !errors.As(err, &fe) || fe.Field != "amount" {
		t.Fatalf("overflowing release: err = %v", err)
	}
	// Open-ended capacity change touches the tail too.
	if err := s.Book(50, MaxTime, 2); err != nil {
		t.Fatal(err)
	}
	want = []Block{{0, 10, 4}, {10, 30, 3}, {30, 50, 4}, {50, MaxTime, 2}}
	if got := s.Blocks(0, MaxTime); !reflect.DeepEqual(got, want) {
		t.Fatalf("after open-ended Book: %v, want %v", got, want)
	}
	// Release is the inverse of Book.
	if err := s.Release(50, MaxTime, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(15, 25, 1); err != nil {
		t.Fatal(err)
	}
	if got := s.Blocks(0, MaxTime); !reflect.DeepEqual(got, []Block{{0, MaxTime, 4}}) {
		t.Fatalf("after releases: %v", got)
	}
}

func TestSlottedAdvanceRotates(t *testing.T) {
	s := mustSlotted(t, 4, 0, 10, 5) // horizon 50
	if err := s.Book(0, 50, 1); err != nil {
		t.Fatal(err)
	}
	s.Advance(27) // drops slots [0,10) and [10,20); new slots [50,70) come from the tail.
	if s.Origin() != 27 || s.Horizon() != 70 {
		t.Fatalf("origin %d horizon %d, want 27 70", s.Origin(), s.Horizon())
	}
	want := []Block{{27, 50, 3}, {50, MaxTime, 4}}
	if got := s.Blocks(0, MaxTime); !reflect.DeepEqual(got, want) {
		t.Fatalf("Blocks = %v, want %v", got, want)
	}
	if _, ok := s.Earliest(4, 5, 27, 100); !ok {
		t.Fatal("new slots must be usable")
	}
	var fe *FieldError
	if err := s.Book(10, 30, 1); !errors.As(err, &fe) || fe.Field != "start" {
		t.Fatalf("Book before origin: %v", err)
	}
	s.Advance(10) // going back is a no-op
	if s.Origin() != 27 {
		t.Fatalf("origin moved back to %d", s.Origin())
	}
	s.Advance(1000) // further than the ring: everything from the tail
	if s.Origin() != 1000 || s.Horizon() != 1050 {
		t.Fatalf("origin %d horizon %d", s.Origin(), s.Horizon())
	}
	if got := s.Blocks(0, MaxTime); !reflect.DeepEqual(got, []Block{{1000, MaxTime, 4}}) {
		t.Fatalf("Blocks after long advance = %v", got)
	}
	if s.Len() != 5 {
		t.Fatalf("Len = %d", s.Len())
	}
}

// slottedUnitModel is the obviously-correct per-time-unit model: one counter
// per instant over [origin, horizon) plus a tail, scanned exhaustively. With
// a finite horizon it is what a slotted timeline with slotLen 1 must match;
// with an unreachable horizon it is the exact profile.
type slottedUnitModel struct {
	origin  int64
	free    map[int64]int64 // instants with a value different from capacity
	cap     int64
	horizon int64
	tail    int64
}

func (m *slottedUnitModel) at(t int64) int64 {
	if t >= m.horizon {
		return m.tail
	}
	if v, ok := m.free[t]; ok {
		return v
	}
	return m.cap
}

func (m *slottedUnitModel) minFree(start, end int64) int64 {
	v := m.at(start)
	for t := start + 1; t < end && t < m.horizon; t++ {
		v = min(v, m.at(t))
	}
	if end > m.horizon {
		v = min(v, m.tail)
	}
	return v
}

func (m *slottedUnitModel) earliest(amount, dur, nb, latest int64) (int64, bool) {
	nb = max(nb, m.origin)
	for s := nb; s <= latest && s+dur <= m.horizon; s++ {
		if m.minFree(s, s+dur) >= amount {
			return s, true
		}
	}
	return 0, false
}

func (m *slottedUnitModel) add(start, end, delta int64) {
	for t := start; t < end && t < m.horizon; t++ {
		m.free[t] = m.at(t) + delta
	}
}

func TestSlottedUnitSlotsMatchBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			const capacity, slots = 6, 60
			s := mustSlotted(t, capacity, 0, 1, slots)
			m := &slottedUnitModel{free: map[int64]int64{}, cap: capacity, horizon: slots, tail: capacity}
			type bk struct{ s, e, a int64 }
			var booked []bk
			for step := range 300 {
				o := m.origin
				switch op := rng.IntN(10); {
				case op < 5:
					amount := 1 + rng.Int64N(capacity+1)
					dur := 1 + rng.Int64N(15)
					nb := o + rng.Int64N(70)
					latest := nb + rng.Int64N(40)
					gs, gok := s.Earliest(amount, dur, nb, latest)
					ws, wok := m.earliest(amount, dur, nb, latest)
					if gs != ws || gok != wok {
						t.Fatalf("step %d: Earliest(%d,%d,%d,%d) = %d,%v want %d,%v", step, amount, dur, nb, latest, gs, gok, ws, wok)
					}
					if gok {
						if err := s.Book(gs, gs+dur, amount); err != nil {
							t.Fatalf("step %d: Book: %v", step, err)
						}
						m.add(gs, gs+dur, -amount)
						booked = append(booked, bk{gs, gs + dur, amount})
					}
				case op < 7:
					// Arbitrary Book: must agree with the model on success.
					st := o + rng.Int64N(65)
					en := st + 1 + rng.Int64N(10)
					amount := 1 + rng.Int64N(capacity)
					err := s.Book(st, en, amount)
					fits := en <= m.horizon && m.minFree(st, en) >= amount
					if (err == nil) != fits {
						t.Fatalf("step %d: Book(%d,%d,%d) err=%v, model fits=%v", step, st, en, amount, err, fits)
					}
					if err == nil {
						m.add(st, en, -amount)
						booked = append(booked, bk{st, en, amount})
					} else if !errors.Is(err, ErrNoCapacity) {
						t.Fatalf("step %d: unexpected error class %v", step, err)
					}
				case op < 9 && len(booked) > 0:
					i := rng.IntN(len(booked))
					b := booked[i]
					booked = append(booked[:i], booked[i+1:]...)
					if b.e <= o {
						continue // wholly forgotten
					}
					st := max(b.s, o)
					if err := s.Release(st, b.e, b.a); err != nil {
						t.Fatalf("step %d: Release: %v", step, err)
					}
					m.add(st, b.e, b.a)
				default:
					now := o + rng.Int64N(8)
					s.Advance(now)
					for t := m.origin; t < now; t++ {
						delete(m.free, t)
					}
					if now > m.origin {
						m.origin = now
						m.horizon = now + slots
					}
				}
				// Profiles agree everywhere the model describes.
				for tt := m.origin; tt < m.horizon+3; tt++ {
					if got, want := s.MinFree(tt, tt+1), m.at(tt); got != want {
						t.Fatalf("step %d: free at %d = %d, want %d", step, tt, got, want)
					}
				}
				checkSlottedCanonical(t, s)
			}
		})
	}
}

func checkSlottedCanonical(t *testing.T, s *SlottedTimeline) {
	t.Helper()
	bs := s.Blocks(s.Origin(), MaxTime)
	if len(bs) == 0 || bs[0].Start != s.Origin() || bs[len(bs)-1].End != MaxTime {
		t.Fatalf("Blocks do not cover [origin, MaxTime): %v", bs)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].Start != bs[i-1].End || bs[i].Free == bs[i-1].Free || bs[i].Start >= bs[i].End {
			t.Fatalf("Blocks not canonical at %d: %v", i, bs)
		}
	}
}

// TestSlottedIsConservative drives a slotted timeline with the starts it
// chooses itself and replays every admitted booking on an exact per-unit
// profile: the exact profile must never go negative, must have at least as
// much free as the slot it lies in, and must always find a start no later
// than the slotted one.
func TestSlottedIsConservative(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			slotLen := []int64{2, 3, 7, 10}[rng.IntN(4)]
			const capacity, slots = 8, 20
			s := mustSlotted(t, capacity, 0, slotLen, slots)
			exact := &slottedUnitModel{free: map[int64]int64{}, cap: capacity, horizon: 1 << 40, tail: capacity}
			for step := range 200 {
				o := s.Origin()
				amount := 1 + rng.Int64N(capacity)
				dur := 1 + rng.Int64N(3*slotLen)
				nb := o + rng.Int64N(slots*slotLen)
				latest := nb + rng.Int64N(slots*slotLen/2)
				if rng.IntN(12) == 0 {
					now := o + rng.Int64N(2*slotLen)
					s.Advance(now)
					exact.origin = s.Origin()
				}
				gs, gok := s.Earliest(amount, dur, nb, latest)
				if !gok {
					continue
				}
				es, eok := exact.earliest(amount, dur, nb, latest)
				if !eok || es > gs {
					t.Fatalf("step %d: slotted admits at %d but exact finds %d,%v", step, gs, es, eok)
				}
				if err := s.Book(gs, gs+dur, amount); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if exact.minFree(gs, gs+dur) < amount {
					t.Fatalf("step %d: slotted booking [%d,%d)x%d overbooks the exact profile", step, gs, gs+dur, amount)
				}
				exact.add(gs, gs+dur, -amount)
				for tt := s.Origin(); tt < s.Horizon(); tt++ {
					if sf, ef := s.MinFree(tt, tt+1), exact.at(tt); sf > ef || ef < 0 {
						t.Fatalf("step %d: at %d slotted free %d > exact free %d", step, tt, sf, ef)
					}
				}
			}
		})
	}
}

func BenchmarkSlottedEarliest(b *testing.B) {
	for _, slots := range []int64{90, 9000, 900000} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			const horizon = 9_000_000
			s := mustSlotted(b, 128, 0, horizon/slots, slots)
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				st := rng.Int64N(horizon - 100000)
				_ = s.Book(st, st+1+rng.Int64N(100000), 1+rng.Int64N(64))
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Earliest(64, 50000, 0, horizon/2)
			}
		})
	}
}

func TestSlottedNegativeOriginAndTimeLimit(t *testing.T) {
	s := mustSlotted(t, 3, -100, 10, 4) // slots [-100,-90) ... [-70,-60)
	if err := s.Book(-95, -85, 2); err != nil {
		t.Fatal(err)
	}
	want := []Block{{-100, -80, 1}, {-80, MaxTime, 3}}
	if got := s.Blocks(-1000, MaxTime); !reflect.DeepEqual(got, want) {
		t.Fatalf("Blocks = %v, want %v", got, want)
	}
	if got, ok := s.Earliest(2, 10, -100, 0); !ok || got != -80 {
		t.Fatalf("Earliest = %d,%v, want -80", got, ok)
	}
	s.Advance(-75)
	if s.Origin() != -75 || s.Horizon() != -40 {
		t.Fatalf("origin %d horizon %d", s.Origin(), s.Horizon())
	}
	// Advancing to the end of time stops the ring before int64 overflows.
	s.Advance(MaxTime - 5)
	if h := s.Horizon(); h < s.Origin() || h > MaxTime-1 {
		t.Fatalf("origin %d horizon %d after advancing to the end of time", s.Origin(), h)
	}
	if _, ok := s.Earliest(1, 1, s.Origin(), s.Origin()); ok && s.Origin()+1 > s.Horizon() {
		t.Fatal("admitted past the horizon")
	}
	checkSlottedCanonical(t, s)
}

// FuzzSlotted decodes bytes into a sequence of Earliest/Book/Release/Advance
// operations on a slotted timeline and checks it after every step: with
// slotLen 1 against the per-unit model (identical decisions and profile),
// with longer slots against the exact profile of the bookings it admitted
// (never overbooked, never more free than the exact profile).
func FuzzSlotted(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{3, 0, 5, 9, 2, 1, 0, 5, 9, 2, 1, 3, 7, 0, 0, 0, 2, 9, 9, 9, 9})
	f.Add([]byte{1, 0, 200, 3, 40, 4, 0, 3, 3, 3, 3, 2, 0, 0, 0, 0, 3, 17, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		const capacity, slots = 5, 24
		slotLen := int64(1 + data[0]%4)
		data = data[1:]
		s := mustSlotted(t, capacity, 0, slotLen, slots)
		horizon := func() int64 {
			if slotLen == 1 {
				return s.Horizon()
			}
			return 1 << 40
		}
		m := &slottedUnitModel{free: map[int64]int64{}, cap: capacity, horizon: horizon(), tail: capacity}
		type bk struct{ s, e, a int64 }
		var booked []bk
		for len(data) >= 5 {
			op, a, b, c, d := data[0]%4, int64(data[1]), int64(data[2]), int64(data[3]), int64(data[4])
			data = data[5:]
			o := s.Origin()
			switch op {
			case 0: // search and book what was found
				amount, dur := 1+a%capacity, 1+b%(3*slotLen)
				nb := o + c%(slots*slotLen+4)
				latest := nb + d%(slots*slotLen)
				gs, gok := s.Earliest(amount, dur, nb, latest)
				if slotLen == 1 {
					ws, wok := m.earliest(amount, dur, nb, latest)
					if gs != ws || gok != wok {
						t.Fatalf("Earliest(%d,%d,%d,%d) = %d,%v, model %d,%v", amount, dur, nb, latest, gs, gok, ws, wok)
					}
				} else if gok {
					if es, eok := m.earliest(amount, dur, nb, latest); !eok || es > gs {
						t.Fatalf("slotted start %d, exact %d,%v", gs, es, eok)
					}
				}
				if gok {
					if err := s.Book(gs, gs+dur, amount); err != nil {
						t.Fatalf("Book at found start: %v", err)
					}
					m.add(gs, gs+dur, -amount)
					booked = append(booked, bk{gs, gs + dur, amount})
				}
			case 1: // arbitrary book; only slotLen 1 has a model for the verdict
				st := o + a%(slots*slotLen+2)
				en := st + 1 + b%(2*slotLen)
				amount := 1 + c%capacity
				err := s.Book(st, en, amount)
				if slotLen == 1 {
					fits := en <= m.horizon && m.minFree(st, en) >= amount
					if (err == nil) != fits {
						t.Fatalf("Book(%d,%d,%d) err=%v, model fits=%v", st, en, amount, err, fits)
					}
				}
				if err == nil {
					m.add(st, en, -amount)
					booked = append(booked, bk{st, en, amount})
				}
			case 2: // release a booking (what is left of it after Advance)
				if len(booked) == 0 {
					continue
				}
				i := int(a) % len(booked)
				bb := booked[i]
				booked = append(booked[:i], booked[i+1:]...)
				if bb.e <= o {
					continue
				}
				// A slotted booking occupies whole slots; releasing the part
				// from the origin on is only its exact inverse when the
				// origin has not cut into its first slot.
				st := max(bb.s, o)
				if st != bb.s && slotLen > 1 {
					continue
				}
				if err := s.Release(st, bb.e, bb.a); err != nil {
					t.Fatalf("Release: %v", err)
				}
				m.add(st, bb.e, bb.a)
			case 3:
				now := o + a%(2*slotLen+1)
				s.Advance(now)
				for tt := m.origin; tt < s.Origin(); tt++ {
					delete(m.free, tt)
				}
				m.origin = s.Origin()
				m.horizon = horizon()
			}
			for tt := s.Origin(); tt < s.Horizon(); tt++ {
				sf, ef := s.MinFree(tt, tt+1), m.at(tt)
				if slotLen == 1 && sf != ef {
					t.Fatalf("free at %d: slotted %d, model %d", tt, sf, ef)
				}
				if sf > ef || ef < 0 || sf < 0 {
					t.Fatalf("free at %d: slotted %d, exact %d", tt, sf, ef)
				}
			}
			checkSlottedCanonical(t, s)
		}
	})
}
