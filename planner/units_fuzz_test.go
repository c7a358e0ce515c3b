package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// runUnitOps decodes data into a sequence of operations on a small unit
// schedule (1-4 units, times below ~40) and checks every step against the
// reference: the same start or the same refusal, a mapping with no unit
// held twice, pinned bookings never moved, every move reported, and a
// snapshot that restores to the same state.
func runUnitOps(t *testing.T, data []byte) {
	if len(data) < 2 {
		return
	}
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	n := 1 + next()%4
	fit := FitRule(next() % 2)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	u, err := NewUnitSchedule(names, 0, UnitConfig{Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var downIDs []string
	seq := 0
	for step := 0; len(data) > 0 && step < 40; step++ {
		op := next() % 8
		ref := loadRef(u)
		before := unitMap(u)
		var remaps []Remap
		var what string
		switch op {
		case 0, 1, 2: // reserve
			policy := UnitRefuse
			if op != 0 {
				policy = UnitRemap
			}
			amount := int64(1 + next()%n)
			dur := int64(1 + next()%6)
			nb := u.origin + int64(next()%8)
			deadline := MaxTime
			if w := next() % 8; w < 7 {
				deadline = nb + dur + int64(w)
			}
			movable := next()%4 != 0
			seq++
			id := fmt.Sprintf("b%02d", seq)
			req := UnitRequest{Amount: amount, Duration: dur, NotBefore: nb, Deadline: deadline, Movable: movable}
			what = fmt.Sprintf("reserve %s %+v %v", id, req, policy)
			d, err := u.Reserve(id, req, policy)
			latest := deadline - dur
			ws, wok := ref.earliest(amount, dur, nb, latest, policy)
			cs, cok := ref.countEarliest(amount, dur, nb, latest)
			if d.Exhausted {
				t.Fatalf("%s: search budget exhausted on a small case", what)
			}
			if d.CountFits != cok || (cok && d.CountStart != cs) {
				t.Fatalf("%s: count %v@%d, reference %v@%d", what, d.CountFits, d.CountStart, cok, cs)
			}
			if d.Fits != wok || (wok && d.Start != ws) {
				t.Fatalf("%s: fits %v@%d, reference %v@%d", what, d.Fits, d.Start, wok, ws)
			}
			if !d.Fits {
				if err == nil || !errors.Is(err, ErrUnmappable) && !errors.Is(err, ErrNoCapacity) {
					t.Fatalf("%s: refusal error %v", what, err)
				}
				if errors.Is(err, ErrUnmappable) != cok {
					t.Fatalf("%s: error %v with count fits = %v", what, err, cok)
				}
				if latest < MaxTime-dur {
					ls, lok := ref.earliest(amount, dur, latest+1, MaxTime-dur, policy)
					if d.LaterOK != lok || (lok && d.LaterStart != ls) {
						t.Fatalf("%s: later %v@%d, reference %v@%d", what, d.LaterOK, d.LaterStart, lok, ls)
					}
				}
				if !reflect.DeepEqual(unitMap(u), before) {
					t.Fatalf("%s: a refusal changed the mapping", what)
				}
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if int64(len(d.Units)) != amount {
				t.Fatalf("%s: %d units for %d", what, len(d.Units), amount)
			}
			if policy == UnitRefuse && len(d.Remaps) > 0 {
				t.Fatalf("%s: moves under REFUSE", what)
			}
			if policy == UnitRefuse && fit == FitLowest {
				free := ref.freeMask(ref.recs, d.Start, d.Start+dur)
				var want []string
				for x := 0; x < n && int64(len(want)) < amount; x++ {
					if free&(1<<x) != 0 {
						want = append(want, names[x])
					}
				}
				if !slices.Equal(d.Units, want) {
					t.Fatalf("%s: lowest-index units %v, want %v", what, d.Units, want)
				}
			}
			remaps = d.Remaps
			ids = append(ids, id)
		case 3: // release
			if len(ids) == 0 {
				break
			}
			id := ids[next()%len(ids)]
			what = "release " + id
			_, err := u.Release(id)
			_, live := before[id]
			if (err == nil) != live {
				t.Fatalf("%s: %v (live %v)", what, err, live)
			}
		case 4: // materialize / withdraw
			if len(ids) == 0 {
				break
			}
			id := ids[next()%len(ids)]
			m := next()%2 == 0
			what = fmt.Sprintf("set movable %s %v", id, m)
			_ = u.SetMovable(id, m)
		case 5: // advance
			now := u.origin + int64(next()%4)
			what = fmt.Sprintf("advance %d", now)
			u.Advance(now)
			ref.advance(now)
			for id := range before {
				if _, ok := u.books[id]; ok == (slices.ContainsFunc(ref.recs, func(r refRec) bool { return r.id == id })) {
					continue
				}
				t.Fatalf("%s: %s kept %v by the schedule, the reference disagrees", what, id, u.books[id] != nil)
			}
		case 6: // down window
			policy := UnitRefuse
			if next()%2 == 1 {
				policy = UnitRemap
			}
			x := next() % n
			from := u.origin + int64(next()%8)
			to := from + 1 + int64(next()%5)
			seq++
			id := fmt.Sprintf("d%02d", seq)
			what = fmt.Sprintf("down %s %s [%d,%d) %v", id, names[x], from, to, policy)
			rs, err := u.AddDown(UnitDown{ID: id, Unit: names[x], From: from, To: to}, policy)
			down := refRec{id: id, start: from, end: to, mask: 1 << x, down: true}
			var want bool
			if conflicts := ref.freeMask(ref.recs, from, to)&(1<<x) == 0; !conflicts {
				want = true
			} else if policy == UnitRemap {
				want = true
				for _, r := range ref.recs {
					if r.mask&(1<<x) != 0 && r.start < to && from < r.end && ref.pinned(r) {
						want = false
					}
				}
				want = want && ref.remapFits(0, 0, 0, []refRec{down})
			}
			if (err == nil) != want {
				t.Fatalf("%s: err %v, reference accepts %v", what, err, want)
			}
			if err != nil && !errors.Is(err, ErrUnitConflict) {
				t.Fatalf("%s: error %v does not wrap ErrUnitConflict", what, err)
			}
			if err == nil {
				downIDs = append(downIDs, id)
			}
			remaps = rs
		case 7: // remove a down window
			if len(downIDs) == 0 {
				break
			}
			id := downIDs[next()%len(downIDs)]
			what = "remove down " + id
			err := u.RemoveDown(id)
			if _, live := u.downs[id]; live || (err != nil && !errors.Is(err, ErrUnknownBooking)) {
				t.Fatalf("%s: %v", what, err)
			}
		}
		if err := checkUnits(u); err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
		// Moves: exactly the reported ones, never of a pinned booking.
		after := unitMap(u)
		reported := map[string]Remap{}
		for _, r := range remaps {
			reported[r.ID] = r
		}
		for id, was := range before {
			now, ok := after[id]
			if !ok || slices.Equal(was, now) {
				if _, rep := reported[id]; rep {
					t.Fatalf("after %s: %s reported moved but did not", what, id)
				}
				continue
			}
			r, ok := reported[id]
			if !ok || !slices.Equal(r.From, was) || !slices.Equal(r.To, now) {
				t.Fatalf("after %s: %s moved %v -> %v, reported %+v", what, id, was, now, r)
			}
			for _, rr := range ref.recs {
				if rr.id == id && ref.pinned(rr) {
					t.Fatalf("after %s: pinned %s moved", what, id)
				}
			}
		}
		// Snapshot round trip.
		s := u.Snapshot()
		v, err := RestoreUnitSchedule(s, UnitConfig{Fit: fit})
		if err != nil {
			t.Fatalf("after %s: restore: %v", what, err)
		}
		if !reflect.DeepEqual(v.Snapshot(), s) {
			t.Fatalf("after %s: snapshot does not round-trip", what)
		}
		if err := checkUnits(v); err != nil {
			t.Fatalf("after %s: restored: %v", what, err)
		}
	}
}

// unitMap returns every live booking's units by ID.
func unitMap(u *UnitSchedule) map[string][]string {
	out := map[string][]string{}
	for id := range u.books {
		b, _ := u.Get(id)
		out[id] = b.Units
	}
	return out
}

func FuzzUnitsReference(f *testing.F) {
	f.Add([]byte{1, 0, 1, 0, 2, 0, 7, 1, 1, 1, 0, 1, 7, 1})
	f.Add([]byte{3, 1, 2, 1, 3, 2, 7, 1, 6, 1, 0, 2, 3, 1, 2, 2, 5, 2, 6, 1, 1, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) { runUnitOps(t, data) })
}

// TestUnitsReferenceRandom runs the differential check on seeded random
// inputs; a failure prints the seed and the input to replay.
func TestUnitsReferenceRandom(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 0x756e697473))
		data := make([]byte, 20+rng.IntN(100))
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d input %v", seed, data)
				}
			}()
			runUnitOps(t, data)
		})
		if t.Failed() {
			return
		}
	}
}
