package planner

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// refSched is a brute-force reference of the Scheduler for the REJECT and
// MOVE_VARIABLE policies on one resource: a list of items, loads computed
// by summing, earliest starts by trying every candidate instant.
type refSched struct {
	capacity int64
	origin   int64
	move     bool
	limit    int
	items    []*Item // submission order
	// ghosts are completed items still occupying [Start, at) of their
	// window (the Planner keeps that part booked until the origin passes).
	ghosts []*Item
}

// all returns the items and the ghosts.
func (m *refSched) all() []*Item { return append(slices.Clone(m.items), m.ghosts...) }

func (m *refSched) load(t int64, skip map[string]bool) int64 {
	n := int64(0)
	for _, it := range m.all() {
		if !skip[it.ID] && it.Start <= t && t < it.End {
			n += it.Amount
		}
	}
	return n
}

func (m *refSched) fits(amount, s, e int64, skip map[string]bool) bool {
	pts := []int64{max(s, m.origin)}
	for _, it := range m.all() {
		if it.Start > s && it.Start < e {
			pts = append(pts, it.Start)
		}
	}
	for _, t := range pts {
		if m.load(t, skip)+amount > m.capacity {
			return false
		}
	}
	return true
}

func (m *refSched) earliest(amount, dur, from int64, skip map[string]bool) int64 {
	from = max(from, m.origin)
	cands := []int64{from}
	for _, it := range m.all() {
		if it.End > from {
			cands = append(cands, it.End)
		}
	}
	slices.Sort(cands)
	for _, c := range cands {
		if m.fits(amount, c, c+dur, skip) {
			return c
		}
	}
	panic("no start")
}

func (m *refSched) get(id string) *Item {
	for _, it := range m.items {
		if it.ID == id {
			return it
		}
	}
	return nil
}

func (m *refSched) drop(id string) {
	m.items = slices.DeleteFunc(m.items, func(it *Item) bool { return it.ID == id })
}

func (m *refSched) submit(id string, amount, dur, nb int64) int64 {
	s := m.earliest(amount, dur, nb, nil)
	m.items = append(m.items, &Item{ID: id, Kind: KindVariable, Resource: "cpu", Amount: amount, Start: s, End: s + dur, NotBefore: nb})
	return s
}

func (m *refSched) reserve(id string, amount, start, dur int64) ([]Move, bool) {
	it := &Item{ID: id, Kind: KindReservation, Resource: "cpu", Amount: amount, Start: start, End: start + dur, NotBefore: start}
	if m.fits(amount, start, start+dur, nil) {
		m.items = append(m.items, it)
		return nil, true
	}
	if !m.move {
		return nil, false
	}
	skip := map[string]bool{}
	var movable []*Item
	for _, o := range m.items {
		if o.Kind == KindVariable && !o.Running && o.Pushes < m.limit && o.Start < it.End && it.Start < o.End {
			skip[o.ID] = true
			movable = append(movable, o)
		}
	}
	if len(movable) == 0 || !m.fits(amount, start, start+dur, skip) {
		return nil, false
	}
	m.items = append(m.items, it)
	var moves []Move
	for _, o := range movable {
		delete(skip, o.ID)
		// o itself is still in the list: skip it while searching.
		self := map[string]bool{o.ID: true}
		for k := range skip {
			self[k] = true
		}
		d := o.End - o.Start
		s := m.earliest(o.Amount, d, o.Start, self)
		if s != o.Start {
			moves = append(moves, Move{ID: o.ID, From: o.Start, To: s})
			o.Pushes++
		}
		o.Start, o.End = s, s+d
	}
	return moves, true
}

func (m *refSched) compress() {
	for _, o := range slices.Clone(m.items) {
		if o.Kind != KindVariable || o.Running || o.Start <= max(o.NotBefore, m.origin) {
			continue
		}
		d := o.End - o.Start
		s := m.earliest(o.Amount, d, o.NotBefore, map[string]bool{o.ID: true})
		o.Start, o.End = s, s+d
	}
}

func (m *refSched) complete(id string, at int64) bool {
	it := m.get(id)
	if it == nil || !it.Running || at < m.origin || at < it.Start || at >= it.End {
		return false
	}
	m.drop(id)
	if at > it.Start {
		g := *it
		g.End = at
		m.ghosts = append(m.ghosts, &g)
	}
	m.compress()
	return true
}

func (m *refSched) advance(now int64) AdvanceReport {
	var rep AdvanceReport
	if now < m.origin {
		return rep
	}
	for {
		type ev struct {
			t      int64
			finish bool
			seq    int
		}
		var best *ev
		var bi *Item
		for i, it := range m.items {
			e := ev{t: it.Start, seq: i}
			if it.Running {
				e = ev{t: it.End, finish: true, seq: i}
			}
			if e.t > now {
				continue
			}
			if best == nil || e.t < best.t || (e.t == best.t && e.finish && !best.finish) {
				best, bi = &e, it
			}
		}
		if best == nil {
			break
		}
		if best.finish {
			rep.Finished = append(rep.Finished, bi.ID)
			m.drop(bi.ID)
			continue
		}
		bi.Running = true
		rep.Started = append(rep.Started, bi.ID)
	}
	m.origin = now
	m.ghosts = slices.DeleteFunc(m.ghosts, func(g *Item) bool { return g.End <= now })
	return rep
}

// TestSchedulerReference drives the Scheduler and the reference with the
// same random operations and compares every answer and the item lists, on
// both exact timelines; the Planner's own consistency is checked too.
func TestSchedulerReference(t *testing.T) {
	factories := map[string]TimelineFactory{"list": NewList, "indexed": NewIndexed}
	for _, fname := range []string{"list", "indexed"} {
		for _, move := range []bool{false, true} {
			for seed := range uint64(10) {
				name := fmt.Sprintf("%s/move=%v/seed=%d", fname, move, seed)
				if err := runPolicyRef(factories[fname], move, seed, 200); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
}

func runPolicyRef(f TimelineFactory, move bool, seed uint64, steps int) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := New(f)
	if err := p.AddResource("cpu", 10); err != nil {
		return err
	}
	s := NewScheduler(p)
	pol := ResourcePolicy{Policy: PolicyReject}
	if move {
		pol = ResourcePolicy{Policy: PolicyMoveVariable, MaxPushes: 1 + int(seed%3)}
	}
	if err := s.SetPolicy("cpu", pol); err != nil {
		return err
	}
	ref := &refSched{capacity: 10, move: move, limit: pol.MaxPushes}
	if ref.limit == 0 {
		ref.limit = DefaultMaxPushes
	}
	now := int64(0)
	for step := range steps {
		id := fmt.Sprintf("i%d", step)
		switch op := rng.IntN(10); {
		case op < 3:
			amount, dur, nb := 1+rng.Int64N(10), 1+rng.Int64N(20), now+rng.Int64N(10)
			got, err := s.Submit(id, "", Part{"cpu", amount}, dur, nb)
			if err != nil {
				return fmt.Errorf("step %d submit: %w", step, err)
			}
			if want := ref.submit(id, amount, dur, nb); got != want {
				return fmt.Errorf("step %d submit start %d, want %d", step, got, want)
			}
		case op < 6:
			amount, dur, start := 1+rng.Int64N(10), 1+rng.Int64N(20), now+rng.Int64N(30)
			a, err := s.Reserve(id, "", Part{"cpu", amount}, start, dur)
			moves, ok := ref.reserve(id, amount, start, dur)
			if ok != (err == nil) {
				return fmt.Errorf("step %d reserve [%d,+%d)x%d: err %v, reference ok=%v", step, start, dur, amount, err, ok)
			}
			if err != nil && !errors.Is(err, ErrNoCapacity) {
				return fmt.Errorf("step %d reserve: %w", step, err)
			}
			if ok && !reflect.DeepEqual(a.Moved, moves) {
				return fmt.Errorf("step %d moves %v, want %v", step, a.Moved, moves)
			}
		case op < 8:
			var running []*Item
			for _, it := range ref.items {
				if it.Running && it.End-1 > now {
					running = append(running, it)
				}
			}
			if len(running) == 0 {
				continue
			}
			it := running[rng.IntN(len(running))]
			at := now + rng.Int64N(it.End-now)
			_, err := s.Complete(it.ID, at)
			if ok := ref.complete(it.ID, at); ok != (err == nil) {
				return fmt.Errorf("step %d complete %s at %d: err %v, reference ok=%v", step, it.ID, at, err, ok)
			}
		default:
			now += rng.Int64N(8)
			rep := s.Advance(now)
			want := ref.advance(now)
			if len(rep.Violations) != 0 {
				return fmt.Errorf("step %d: violations without overbooking: %v", step, rep.Violations)
			}
			if !slices.Equal(rep.Started, want.Started) || !slices.Equal(rep.Finished, want.Finished) {
				return fmt.Errorf("step %d advance %d: %+v, want %+v", step, now, rep, want)
			}
		}
		got := s.Items("cpu")
		want := make([]Item, 0, len(ref.items))
		for _, it := range ref.items {
			want = append(want, *it)
		}
		slices.SortFunc(got, func(a, b Item) int { return cmp.Compare(a.ID, b.ID) })
		slices.SortFunc(want, func(a, b Item) int { return cmp.Compare(a.ID, b.ID) })
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("step %d items:\n got %+v\nwant %+v", step, got, want)
		}
		if err := checkConsistent(p); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
	}
	return nil
}

// FuzzSchedulerReference runs the differential test from fuzzed seeds.
func FuzzSchedulerReference(f *testing.F) {
	f.Add(uint64(1), true)
	f.Add(uint64(2), false)
	f.Fuzz(func(t *testing.T, seed uint64, move bool) {
		if err := runPolicyRef(NewList, move, seed, 120); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSchedulerRelaxedDeterministic replays one random relaxed workload on
// both exact timelines twice and requires identical admissions, reports
// and item lists, and no capacity ever used beyond the capacity by running
// items.
func TestSchedulerRelaxedDeterministic(t *testing.T) {
	run := func(f TimelineFactory, seed uint64) ([]string, error) {
		rng := rand.New(rand.NewPCG(seed, 9))
		p := New(f)
		_ = p.AddResource("a", 16)
		_ = p.AddResource("b", 16)
		s := NewScheduler(p)
		_ = s.SetPolicy("a", ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.6})
		_ = s.SetPolicy("b", ResourcePolicy{Policy: PolicyRelaxed, MinSuccess: 0.6})
		var log []string
		now := int64(0)
		actual := map[string]int64{}
		for step := range 400 {
			id := fmt.Sprintf("i%d", step)
			switch op := rng.IntN(10); {
			case op < 2:
				res := []string{"a", "b"}[rng.IntN(2)]
				st, err := s.Submit(id, "", Part{res, 1 + rng.Int64N(16)}, 1+rng.Int64N(30), now)
				log = append(log, fmt.Sprint("submit", st, err))
			case op < 5:
				sr := SubRequest{1 + rng.Int64N(16), now + rng.Int64N(40), 1 + rng.Int64N(30)}
				a, err := s.CoReserve(id, fmt.Sprint("o", rng.IntN(3)), []SubRequest{sr}, []string{"a", "b"}, 0)
				log = append(log, fmt.Sprint("co", a, err))
				if err == nil && a.Joint < 1 {
					log = append(log, "relaxed")
				}
			default:
				next, ok := s.NextStart()
				if !ok || next > now+5 {
					next = now + 5
				}
				now = max(now, next)
				rep := s.Advance(now)
				log = append(log, fmt.Sprint("adv", now, rep))
				for _, id := range rep.Started {
					it, _ := s.Get(id)
					actual[id] = it.Start + max(1, (it.End-it.Start)*int64(20+rng.IntN(41))/100)
				}
				for _, res := range []string{"a", "b"} {
					busy := int64(0)
					for _, it := range s.Items(res) {
						if it.Running {
							busy += it.Amount
						}
					}
					if busy > 16 {
						return nil, fmt.Errorf("step %d: %d units running on %s", step, busy, res)
					}
					for _, it := range s.Items(res) {
						if it.Running && actual[it.ID] <= now && actual[it.ID] < it.End {
							c, err := s.Complete(it.ID, max(actual[it.ID], now))
							log = append(log, fmt.Sprint("complete", c, err))
						}
					}
				}
			}
		}
		return log, nil
	}
	for seed := range uint64(5) {
		a, err := run(NewList, seed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := run(NewIndexed, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("seed %d: list and indexed timelines disagree", seed)
		}
		if !slices.Contains(a, "relaxed") {
			t.Fatalf("seed %d: no relaxed admission happened", seed)
		}
	}
}
