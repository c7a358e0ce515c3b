package planner

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// indexedSeed replays one randomized run: go test -run TestIndexedDifferential -indexed.seed=N
var indexedSeed = flag.Uint64("indexed.seed", 0, "replay the indexed-timeline differential tests with this seed only")

// profileRef is the obviously-correct model: one free amount per time unit
// over [0, horizon) and a single tail value for [horizon, MaxTime).
type profileRef struct {
	origin int64
	cells  []int64
	tail   int64
}

func newProfileRef(capacity, horizon int64) *profileRef {
	r := &profileRef{cells: make([]int64, horizon), tail: capacity}
	for i := range r.cells {
		r.cells[i] = capacity
	}
	return r
}

func (r *profileRef) horizon() int64 { return int64(len(r.cells)) }

func (r *profileRef) at(x int64) int64 {
	if x < r.horizon() {
		return r.cells[x]
	}
	return r.tail
}

// minOver is the minimum over [s, e) with origin <= s < e.
func (r *profileRef) minOver(s, e int64) int64 {
	m := int64(math.MaxInt64)
	for x := s; x < e && x < r.horizon(); x++ {
		m = min(m, r.cells[x])
	}
	if e > r.horizon() {
		m = min(m, r.tail)
	}
	return m
}

// add applies delta over [s, e); e is <= horizon or MaxTime.
func (r *profileRef) add(s, e, delta int64) {
	for x := s; x < e && x < r.horizon(); x++ {
		r.cells[x] += delta
	}
	if e > r.horizon() {
		r.tail += delta
	}
}

func (r *profileRef) Earliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	notBefore = max(notBefore, r.origin)
	if amount <= 0 || duration <= 0 || notBefore > latestStart || latestStart > MaxTime-duration {
		return 0, false
	}
	for s := notBefore; s <= latestStart; s++ {
		if r.minOver(s, s+duration) >= amount {
			return s, true
		}
		if s >= r.horizon() {
			// The profile is constant from here on.
			return 0, false
		}
	}
	return 0, false
}

func (r *profileRef) Book(start, end, amount int64) error {
	start = max(start, r.origin)
	if end <= start || amount == 0 {
		return nil
	}
	if amount < 0 {
		return ErrInvalid
	}
	if r.minOver(start, end) < amount {
		return ErrNoCapacity
	}
	r.add(start, end, -amount)
	return nil
}

func (r *profileRef) Release(start, end, amount int64) error {
	start = max(start, r.origin)
	if end <= start || amount == 0 {
		return nil
	}
	if amount < 0 {
		return ErrInvalid
	}
	r.add(start, end, amount)
	return nil
}

func (r *profileRef) MinFree(start, end int64) int64 {
	start = max(start, r.origin)
	if end <= start {
		if start >= MaxTime {
			return math.MaxInt64
		}
		return r.at(start)
	}
	return r.minOver(start, end)
}

func (r *profileRef) Blocks(from, to int64) []Block {
	var all []Block
	for x := r.origin; x < r.horizon(); x++ {
		if n := len(all); n > 0 && all[n-1].Free == r.cells[x] {
			all[n-1].End = x + 1
			continue
		}
		all = append(all, Block{Start: x, End: x + 1, Free: r.cells[x]})
	}
	s := max(r.origin, r.horizon())
	if n := len(all); n > 0 && all[n-1].Free == r.tail {
		all[n-1].End = MaxTime
	} else {
		all = append(all, Block{Start: s, End: MaxTime, Free: r.tail})
	}
	from = max(from, r.origin)
	out := []Block{}
	if to <= from {
		return out
	}
	for _, b := range all {
		if b.End <= from || b.Start >= to {
			continue
		}
		out = append(out, Block{Start: max(b.Start, from), End: min(b.End, to), Free: b.Free})
	}
	return out
}

func (r *profileRef) Advance(now int64) {
	r.origin = max(r.origin, min(now, MaxTime-1))
}

// tlOp is one timeline operation; the meaning of a..d depends on kind.
type tlOp struct {
	kind       opKind
	a, b, c, d int64
}

type opKind uint8

const (
	opBook       opKind = iota // [a, b) amount c
	opRelease                  // [a, b) amount c
	opEarliest                 // amount a, duration b, notBefore c, latestStart d
	opMinFree                  // [a, b)
	opBlocks                   // [a, b)
	opAdvance                  // now a
	opNextChange               // after a
	numOpKinds
)

func (o tlOp) String() string {
	switch o.kind {
	case opBook:
		return fmt.Sprintf("Book(%d, %d, %d)", o.a, o.b, o.c)
	case opRelease:
		return fmt.Sprintf("Release(%d, %d, %d)", o.a, o.b, o.c)
	case opEarliest:
		return fmt.Sprintf("Earliest(%d, %d, %d, %d)", o.a, o.b, o.c, o.d)
	case opMinFree:
		return fmt.Sprintf("MinFree(%d, %d)", o.a, o.b)
	case opBlocks:
		return fmt.Sprintf("Blocks(%d, %d)", o.a, o.b)
	case opNextChange:
		return fmt.Sprintf("NextChange(%d)", o.a)
	default:
		return fmt.Sprintf("Advance(%d)", o.a)
	}
}

// diffRun drives the indexed timeline, the list timeline and the profile
// model with the same operations and compares every answer and the full
// block list after every step.
type diffRun struct {
	ref     *profileRef
	list    Timeline
	indexed *IndexedTimeline
	// fullCheckEvery: compare against the profile model every this many
	// steps (the model is O(horizon) per comparison); list and indexed are
	// compared after every step.
	fullCheckEvery int
	// stateEvery: compare the whole block lists and check the indexed
	// invariants every this many steps (0 or 1: after every step). The
	// answers of every operation are always compared.
	stateEvery int
	step       int
}

func newDiffRun(capacity, horizon int64) *diffRun {
	return &diffRun{
		ref:            newProfileRef(capacity, horizon),
		list:           NewList(capacity, 0),
		indexed:        NewIndexed(capacity, 0).(*IndexedTimeline),
		fullCheckEvery: 1,
	}
}

func sameErr(a, b error) bool {
	return errors.Is(a, ErrNoCapacity) == errors.Is(b, ErrNoCapacity) &&
		errors.Is(a, ErrInvalid) == errors.Is(b, ErrInvalid) &&
		(a == nil) == (b == nil)
}

// apply runs op everywhere and returns a description of the first
// disagreement, or nil.
func (d *diffRun) apply(op tlOp) error {
	d.step++
	withRef := d.ref != nil && d.fullCheckEvery > 0 && d.step%d.fullCheckEvery == 0
	switch op.kind {
	case opBook, opRelease:
		var el, ei, er error
		if op.kind == opBook {
			el, ei = d.list.Book(op.a, op.b, op.c), d.indexed.Book(op.a, op.b, op.c)
			if d.ref != nil {
				er = d.ref.Book(op.a, op.b, op.c)
			}
		} else {
			el, ei = d.list.Release(op.a, op.b, op.c), d.indexed.Release(op.a, op.b, op.c)
			if d.ref != nil {
				er = d.ref.Release(op.a, op.b, op.c)
			}
		}
		if !sameErr(el, ei) || (d.ref != nil && !sameErr(er, ei)) {
			return fmt.Errorf("%v: list error %v, indexed error %v, model error %v", op, el, ei, er)
		}
	case opEarliest:
		sl, okl := d.list.Earliest(op.a, op.b, op.c, op.d)
		si, oki := d.indexed.Earliest(op.a, op.b, op.c, op.d)
		if sl != si || okl != oki {
			return fmt.Errorf("%v: list (%d, %v), indexed (%d, %v)", op, sl, okl, si, oki)
		}
		if withRef {
			if sr, okr := d.ref.Earliest(op.a, op.b, op.c, op.d); sr != si || okr != oki {
				return fmt.Errorf("%v: model (%d, %v), indexed (%d, %v)", op, sr, okr, si, oki)
			}
		}
		if oki && d.step%2 == 0 && (d.ref == nil || si+op.b <= d.ref.horizon()) {
			// Book what was found, as an admission does: the indexed
			// timeline takes its remembered-fit path. (The model only
			// describes its horizon.)
			el, ei := d.list.Book(si, si+op.b, op.a), d.indexed.Book(si, si+op.b, op.a)
			var er error
			if d.ref != nil {
				er = d.ref.Book(si, si+op.b, op.a)
			}
			if !sameErr(el, ei) || (d.ref != nil && !sameErr(er, ei)) || ei != nil {
				return fmt.Errorf("%v then Book(%d, %d, %d): list error %v, indexed error %v, model error %v", op, si, si+op.b, op.a, el, ei, er)
			}
		}
	case opMinFree:
		ml, mi := d.list.MinFree(op.a, op.b), d.indexed.MinFree(op.a, op.b)
		mr := mi
		if d.ref != nil {
			mr = d.ref.MinFree(op.a, op.b)
		}
		if ml != mi || mr != mi {
			return fmt.Errorf("%v: list %d, indexed %d, model %d", op, ml, mi, mr)
		}
	case opBlocks:
		bl, bi := d.list.Blocks(op.a, op.b), d.indexed.Blocks(op.a, op.b)
		if !slices.Equal(bl, bi) {
			return fmt.Errorf("%v: list %v, indexed %v", op, bl, bi)
		}
		if withRef {
			if br := d.ref.Blocks(op.a, op.b); !slices.Equal(br, bi) {
				return fmt.Errorf("%v: model %v, indexed %v", op, br, bi)
			}
		}
	case opNextChange:
		type nextChanger interface{ NextChange(int64) (int64, bool) }
		cl, okl := d.list.(nextChanger).NextChange(op.a)
		ci, oki := d.indexed.NextChange(op.a)
		if cl != ci || okl != oki {
			return fmt.Errorf("%v: list (%d, %v), indexed (%d, %v)", op, cl, okl, ci, oki)
		}
	case opAdvance:
		d.list.Advance(op.a)
		d.indexed.Advance(op.a)
		if d.ref != nil {
			d.ref.Advance(op.a)
		}
	}
	if d.stateEvery > 1 && d.step%d.stateEvery != 0 {
		return nil
	}
	return d.compareState(withRef)
}

func (d *diffRun) compareState(withRef bool) error {
	if err := d.indexed.checkInvariants(); err != nil {
		return fmt.Errorf("indexed invariant: %w", err)
	}
	if d.list.Origin() != d.indexed.Origin() || d.list.Len() != d.indexed.Len() {
		return fmt.Errorf("origin/len: list %d/%d, indexed %d/%d",
			d.list.Origin(), d.list.Len(), d.indexed.Origin(), d.indexed.Len())
	}
	bi := d.indexed.Blocks(math.MinInt64, MaxTime)
	if bl := d.list.Blocks(math.MinInt64, MaxTime); !slices.Equal(bl, bi) {
		return fmt.Errorf("blocks: list %v, indexed %v", bl, bi)
	}
	if withRef {
		if d.ref.origin != d.indexed.Origin() {
			return fmt.Errorf("origin: model %d, indexed %d", d.ref.origin, d.indexed.Origin())
		}
		if br := d.ref.Blocks(math.MinInt64, MaxTime); !slices.Equal(br, bi) {
			return fmt.Errorf("blocks: model %v, indexed %v", br, bi)
		}
	}
	return nil
}

// opGen draws operations over a horizon, biased towards releasing what was
// booked so that the timeline both fragments and heals.
type opGen struct {
	rng      *rand.Rand
	horizon  int64
	capacity int64
	maxLen   int64
	// maxAmount bounds booked amounts (capacity/2 when zero).
	maxAmount int64
	// grow makes bookings four times as likely as releases of live ones.
	grow   bool
	live   []tlOp
	origin int64
}

func (g *opGen) window() (int64, int64) {
	s := g.origin - 2 + g.rng.Int64N(g.horizon-g.origin+3)
	if g.rng.IntN(20) == 0 {
		return s, MaxTime
	}
	e := s + 1 + g.rng.Int64N(g.maxLen)
	return s, min(e, g.horizon)
}

func (g *opGen) next() tlOp {
	k := g.rng.IntN(100)
	if g.grow && k >= 35 && k < 60 && g.rng.IntN(4) != 0 {
		k = 0
	}
	switch {
	case k < 35:
		s, e := g.window()
		maxAmount := g.maxAmount
		if maxAmount == 0 {
			maxAmount = g.capacity/2 + 1
		}
		op := tlOp{kind: opBook, a: s, b: e, c: 1 + g.rng.Int64N(maxAmount)}
		if g.rng.IntN(30) == 0 {
			op.c = g.rng.Int64N(3) - 1 // zero and negative amounts
		}
		g.live = append(g.live, op)
		return op
	case k < 60 && len(g.live) > 0:
		i := g.rng.IntN(len(g.live))
		op := g.live[i]
		g.live = slices.Delete(g.live, i, i+1)
		op.kind = opRelease
		return op
	case k < 62:
		s, e := g.window()
		return tlOp{kind: opRelease, a: s, b: e, c: 1 + g.rng.Int64N(3)}
	case k < 85:
		nb := g.origin - 2 + g.rng.Int64N(g.horizon-g.origin+4)
		ls := nb + g.rng.Int64N(g.horizon+2)
		dur := 1 + g.rng.Int64N(g.maxLen+2)
		if g.rng.IntN(15) == 0 {
			ls = MaxTime - dur
		}
		return tlOp{kind: opEarliest, a: 1 + g.rng.Int64N(g.capacity+1), b: dur, c: nb, d: ls}
	case k < 91:
		s, e := g.window()
		if g.rng.IntN(8) == 0 {
			e = s - g.rng.Int64N(2)
		}
		return tlOp{kind: opMinFree, a: s, b: e}
	case k < 95:
		s, e := g.window()
		return tlOp{kind: opBlocks, a: s, b: e}
	case k < 97:
		s, _ := g.window()
		return tlOp{kind: opNextChange, a: s}
	default:
		if g.origin < g.horizon-g.horizon/4 && g.rng.IntN(3) == 0 {
			g.origin += g.rng.Int64N(g.horizon/16 + 1)
		}
		return tlOp{kind: opAdvance, a: g.origin}
	}
}

func seeds(n int) []uint64 {
	if *indexedSeed != 0 {
		return []uint64{*indexedSeed}
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i+1)*0x9e3779b97f4a7c15 ^ 0x5eed
	}
	return out
}

// TestIndexedDifferentialSmall compares indexed, list and the per-unit
// profile on a short horizon with many seeds; every answer and the whole
// block list must agree after every step.
func TestIndexedDifferentialSmall(t *testing.T) {
	for _, seed := range seeds(200) {
		const capacity, horizon = 8, 40
		d := newDiffRun(capacity, horizon)
		g := &opGen{rng: rand.New(rand.NewPCG(seed, 1)), horizon: horizon, capacity: capacity, maxLen: 12}
		for range 400 {
			op := g.next()
			if err := d.apply(op); err != nil {
				t.Fatalf("seed %d step %d: %v (replay with -indexed.seed=%d)", seed, d.step, err, seed)
			}
		}
	}
}

// TestIndexedDifferentialLarge grows timelines to thousands of blocks so
// that chunks split, empty and merge and the segment tree is rebuilt many
// times; the model is checked every few steps.
func TestIndexedDifferentialLarge(t *testing.T) {
	n := 4
	if testing.Short() {
		n = 1
	}
	for _, seed := range seeds(n) {
		const capacity, horizon = 1000, 6000
		d := newDiffRun(capacity, horizon)
		d.fullCheckEvery = 97
		d.stateEvery = 7
		g := &opGen{rng: rand.New(rand.NewPCG(seed, 2)), horizon: horizon, capacity: capacity, maxLen: 40, maxAmount: 60, grow: true}
		maxLen := 0
		for i := range 5000 {
			if i == 3000 {
				// Drain: release everything so that chunks shrink
				// and merge.
				for _, op := range g.live {
					op.kind = opRelease
					if err := d.apply(op); err != nil {
						t.Fatalf("seed %d step %d: %v (replay with -indexed.seed=%d)", seed, d.step, err, seed)
					}
				}
				g.live = g.live[:0]
				g.grow = false
				if err := d.compareState(true); err != nil {
					t.Fatalf("seed %d after drain: %v", seed, err)
				}
			}
			op := g.next()
			if op.kind == opAdvance && i < 3000 {
				continue // keep the far past until the timeline is large
			}
			if err := d.apply(op); err != nil {
				t.Fatalf("seed %d step %d: %v (replay with -indexed.seed=%d)", seed, d.step, err, seed)
			}
			maxLen = max(maxLen, d.indexed.Len())
		}
		if err := d.compareState(true); err != nil {
			t.Fatalf("seed %d at the end: %v", seed, err)
		}
		if maxLen < 3*chunkCap {
			t.Fatalf("seed %d: timeline peaked at %d blocks, want >= %d to exercise chunk splits", seed, maxLen, 3*chunkCap)
		}
		t.Logf("seed %d: peak %d blocks, final %d blocks in %d chunks", seed, maxLen, d.indexed.Len(), len(d.indexed.chunks))
	}
}

// TestIndexedTable pins down individual behaviours with expected block lists.
func TestIndexedTable(t *testing.T) {
	type step struct {
		op      tlOp
		wantErr error
	}
	tests := []struct {
		name   string
		steps  []step
		blocks []Block
	}{
		{
			name:   "fresh",
			blocks: []Block{{0, MaxTime, 10}},
		},
		{
			name:   "book splits both ends",
			steps:  []step{{op: tlOp{kind: opBook, a: 5, b: 9, c: 3}}},
			blocks: []Block{{0, 5, 10}, {5, 9, 7}, {9, MaxTime, 10}},
		},
		{
			name: "release merges back to one block",
			steps: []step{
				{op: tlOp{kind: opBook, a: 5, b: 9, c: 3}},
				{op: tlOp{kind: opRelease, a: 5, b: 9, c: 3}},
			},
			blocks: []Block{{0, MaxTime, 10}},
		},
		{
			name: "adjacent equal bookings merge",
			steps: []step{
				{op: tlOp{kind: opBook, a: 5, b: 9, c: 3}},
				{op: tlOp{kind: opBook, a: 9, b: 12, c: 3}},
			},
			blocks: []Block{{0, 5, 10}, {5, 12, 7}, {12, MaxTime, 10}},
		},
		{
			name: "overbooking is refused and changes nothing",
			steps: []step{
				{op: tlOp{kind: opBook, a: 5, b: 9, c: 8}},
				{op: tlOp{kind: opBook, a: 0, b: 6, c: 3}, wantErr: ErrNoCapacity},
			},
			blocks: []Block{{0, 5, 10}, {5, 9, 2}, {9, MaxTime, 10}},
		},
		{
			name:   "negative amount is invalid",
			steps:  []step{{op: tlOp{kind: opBook, a: 1, b: 2, c: -1}, wantErr: ErrInvalid}},
			blocks: []Block{{0, MaxTime, 10}},
		},
		{
			name:   "release overflow is invalid",
			steps:  []step{{op: tlOp{kind: opRelease, a: 1, b: 2, c: math.MaxInt64}, wantErr: ErrInvalid}},
			blocks: []Block{{0, MaxTime, 10}},
		},
		{
			name: "open-ended booking",
			steps: []step{
				{op: tlOp{kind: opBook, a: 3, b: MaxTime, c: 10}},
			},
			blocks: []Block{{0, 3, 10}, {3, MaxTime, 0}},
		},
		{
			name: "advance clips the past and later bookings ignore it",
			steps: []step{
				{op: tlOp{kind: opBook, a: 2, b: 6, c: 4}},
				{op: tlOp{kind: opAdvance, a: 4}},
				{op: tlOp{kind: opRelease, a: 2, b: 6, c: 4}},
			},
			blocks: []Block{{4, MaxTime, 10}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewIndexed(10, 0).(*IndexedTimeline)
			for i, s := range tc.steps {
				var err error
				switch s.op.kind {
				case opBook:
					err = tl.Book(s.op.a, s.op.b, s.op.c)
				case opRelease:
					err = tl.Release(s.op.a, s.op.b, s.op.c)
				case opAdvance:
					tl.Advance(s.op.a)
				}
				if (s.wantErr == nil) != (err == nil) || (s.wantErr != nil && !errors.Is(err, s.wantErr)) {
					t.Fatalf("step %d %v: error %v, want %v", i, s.op, err, s.wantErr)
				}
				if err := tl.checkInvariants(); err != nil {
					t.Fatalf("step %d %v: %v", i, s.op, err)
				}
			}
			if got := tl.Blocks(math.MinInt64, MaxTime); !slices.Equal(got, tc.blocks) {
				t.Fatalf("blocks %v, want %v", got, tc.blocks)
			}
		})
	}
}

// TestIndexedEarliestTable checks Earliest on a fixed profile:
// [0,5):10 [5,9):2 [9,12):6 [12,MaxTime):10.
func TestIndexedEarliestTable(t *testing.T) {
	tl := NewIndexed(10, 0)
	for _, b := range [][3]int64{{5, 9, 8}, {9, 12, 4}} {
		if err := tl.Book(b[0], b[1], b[2]); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		amount, duration, notBefore, latestStart int64
		want                                     int64
		ok                                       bool
	}{
		{1, 100, 0, 0, 0, true},
		{3, 5, 0, MaxTime - 5, 0, true},
		{3, 6, 0, MaxTime - 6, 9, true},
		{7, 6, 0, MaxTime - 6, 12, true},
		{7, 6, 0, 11, 0, false},
		{6, 3, 7, 20, 9, true},
		{6, 4, 7, 20, 9, true},
		{2, 1, 6, 6, 6, true},
		{11, 1, 0, MaxTime - 1, 0, false},
		{0, 1, 0, 10, 0, false},
		{1, 0, 0, 10, 0, false},
		{1, 1, 5, 4, 0, false},
		{1, 2, 0, MaxTime - 1, 0, false},
	}
	for _, tc := range tests {
		got, ok := tl.Earliest(tc.amount, tc.duration, tc.notBefore, tc.latestStart)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Earliest(%d, %d, %d, %d) = (%d, %v), want (%d, %v)",
				tc.amount, tc.duration, tc.notBefore, tc.latestStart, got, ok, tc.want, tc.ok)
		}
	}
}

// decodeOps turns fuzz bytes into operations over a 32-unit horizon, five
// bytes per operation.
func decodeOps(data []byte) []tlOp {
	const horizon = 32
	var ops []tlOp
	origin := int64(0)
	for len(data) >= 5 {
		k := opKind(data[0] % uint8(numOpKinds))
		x, y, z, w := int64(data[1]), int64(data[2]), int64(data[3]), int64(data[4])
		data = data[5:]
		s := x % (horizon + 2)
		e := s + 1 + y%12
		if y >= 250 {
			e = MaxTime
		}
		switch k {
		case opBook, opRelease:
			ops = append(ops, tlOp{kind: k, a: s, b: e, c: z%7 - 1})
		case opEarliest:
			ls := s + w%(horizon+4)
			if w >= 250 {
				ls = MaxTime - (1 + y%12)
			}
			ops = append(ops, tlOp{kind: k, a: z%12 - 1, b: 1 + y%12, c: s, d: ls})
		case opNextChange:
			ops = append(ops, tlOp{kind: k, a: s})
		case opMinFree, opBlocks:
			ops = append(ops, tlOp{kind: k, a: s, b: s + int64(int8(y))%8})
		case opAdvance:
			origin = max(origin, x%horizon)
			ops = append(ops, tlOp{kind: k, a: origin})
		}
	}
	return ops
}

// FuzzIndexedVsList decodes bytes into an operation sequence and runs it on
// the indexed timeline, the list timeline and the profile model, comparing
// every answer and the block list after every step.
func FuzzIndexedVsList(f *testing.F) {
	f.Add([]byte{0, 5, 4, 4, 0, 2, 0, 11, 4, 40, 1, 5, 4, 4, 0})
	f.Add([]byte{0, 1, 255, 9, 0, 5, 3, 0, 0, 0, 2, 0, 6, 3, 255, 4, 0, 200, 0, 0})
	seed := make([]byte, 0, 200)
	for i := range 40 {
		seed = binary.LittleEndian.AppendUint32(seed, uint32(i)*2654435761)
		seed = append(seed, byte(i))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newDiffRun(6, 64)
		for _, op := range decodeOps(data) {
			if err := d.apply(op); err != nil {
				t.Fatalf("step %d: %v", d.step, err)
			}
		}
	})
}

// TestIndexedExtremes compares the list and indexed timelines at the edges
// of time, where clamping rules decide the outcome.
func TestIndexedExtremes(t *testing.T) {
	// Negative origins are left out: the list computes End-start, which
	// overflows for an open-ended block and a negative start; see
	// TestIndexedNegativeTime for the indexed answers there.
	for _, origin := range []int64{0, 1, MaxTime - 2, MaxTime} {
		d := &diffRun{
			list:    NewList(5, origin),
			indexed: NewIndexed(5, origin).(*IndexedTimeline),
		}
		o := d.list.Origin()
		ops := []tlOp{
			{kind: opMinFree, a: MaxTime, b: MaxTime},
			{kind: opMinFree, a: o, b: o},
			{kind: opBook, a: o, b: MaxTime, c: 2},
			{kind: opEarliest, a: 3, b: 1, c: o, d: MaxTime - 1},
			{kind: opEarliest, a: 4, b: 1, c: o, d: MaxTime - 1},
			{kind: opRelease, a: o, b: MaxTime, c: math.MaxInt64},
			{kind: opBlocks, a: math.MinInt64, b: MaxTime},
			{kind: opNextChange, a: math.MinInt64},
			{kind: opNextChange, a: MaxTime},
			{kind: opAdvance, a: MaxTime},
			{kind: opBook, a: math.MinInt64, b: MaxTime, c: 3},
			{kind: opBlocks, a: math.MinInt64, b: MaxTime},
		}
		for _, op := range ops {
			if err := d.apply(op); err != nil {
				t.Fatalf("origin %d: %v", origin, err)
			}
		}
	}
}

// TestIndexedNegativeTime checks that negative instants work (no End-start
// overflow against the open-ended last block).
func TestIndexedNegativeTime(t *testing.T) {
	tl := NewIndexed(5, math.MinInt64)
	if err := tl.Book(-10, -4, 4); err != nil {
		t.Fatal(err)
	}
	if s, ok := tl.Earliest(2, 1, math.MinInt64, MaxTime-1); !ok || s != math.MinInt64 {
		t.Fatalf("Earliest(2, 1, min, ..) = (%d, %v), want (%d, true)", s, ok, int64(math.MinInt64))
	}
	if s, ok := tl.Earliest(3, 7, -12, MaxTime-7); !ok || s != -4 {
		t.Fatalf("Earliest(3, 7, -12, ..) = (%d, %v), want (-4, true)", s, ok)
	}
	want := []Block{{math.MinInt64, -10, 5}, {-10, -4, 1}, {-4, MaxTime, 5}}
	if got := tl.Blocks(math.MinInt64, MaxTime); !slices.Equal(got, want) {
		t.Fatalf("blocks %v, want %v", got, want)
	}
}

// TestIndexedChunkEdges drives the structural paths a random workload rarely
// reaches: the last chunk shrinking next to a full neighbour (refilled from
// the left), chunks shrinking from the front, and Advance dropping whole
// chunks, comparing with the list and the model throughout.
func TestIndexedChunkEdges(t *testing.T) {
	const capacity, horizon = 100, 4200
	d := newDiffRun(capacity, horizon)
	d.fullCheckEvery = 101
	d.stateEvery = 50
	// 4000 unit blocks alternating between 99 and 98 free.
	for x := range int64(4000) {
		if err := d.apply(tlOp{kind: opBook, a: x, b: x + 1, c: x%2 + 1}); err != nil {
			t.Fatalf("fill %d: %v", x, err)
		}
	}
	if n := len(d.indexed.chunks); n < 8 {
		t.Fatalf("only %d chunks after the fill", n)
	}
	// Heal the tail from the end backwards: the last chunk shrinks.
	for x := int64(3999); x >= 3000; x-- {
		if err := d.apply(tlOp{kind: opRelease, a: x, b: x + 1, c: x%2 + 1}); err != nil {
			t.Fatalf("release %d: %v", x, err)
		}
	}
	// Heal a stretch in the middle from its front: chunks shrink from the
	// left and refill from their right neighbours.
	for x := int64(1000); x < 1600; x++ {
		if err := d.apply(tlOp{kind: opRelease, a: x, b: x + 1, c: x%2 + 1}); err != nil {
			t.Fatalf("release %d: %v", x, err)
		}
	}
	for _, now := range []int64{3, 700, 1299, 1700, 2500, 2999, 3500} {
		if err := d.apply(tlOp{kind: opAdvance, a: now}); err != nil {
			t.Fatalf("advance %d: %v", now, err)
		}
		if err := d.apply(tlOp{kind: opEarliest, a: 2, b: 5, c: now, d: MaxTime - 5}); err != nil {
			t.Fatalf("after advance %d: %v", now, err)
		}
	}
	if err := d.compareState(true); err != nil {
		t.Fatal(err)
	}
}

// TestIndexedRefillFromLeft shrinks the last chunk while its left neighbour
// is well filled, so that the last chunk is refilled with blocks moved over
// from the left rather than merged.
func TestIndexedRefillFromLeft(t *testing.T) {
	const capacity, horizon = 100, 4100
	d := newDiffRun(capacity, horizon)
	d.fullCheckEvery = 37
	d.stateEvery = 10
	apply := func(op tlOp) {
		t.Helper()
		if err := d.apply(op); err != nil {
			t.Fatal(err)
		}
	}
	// 2000 blocks of width 2, alternating 99 and 98 free.
	for x := range int64(2000) {
		apply(tlOp{kind: opBook, a: 2 * x, b: 2*x + 2, c: x%2 + 1})
	}
	// Grow the second-to-last chunk by cutting 80 of its blocks in two.
	k := len(d.indexed.chunks) - 2
	from := d.indexed.firsts[k]
	for i := range int64(80) {
		s := from + 2*i + 1
		if s%2 == 1 {
			apply(tlOp{kind: opBook, a: s, b: s + 1, c: 3})
		}
	}
	left := len(d.indexed.chunks[k].start)
	// Shrink the last chunk from its end.
	x := int64(1999)
	for prev := len(d.indexed.chunks[k+1].start); ; x-- {
		apply(tlOp{kind: opRelease, a: 2 * x, b: 2*x + 2, c: x%2 + 1})
		if len(d.indexed.chunks) != k+2 || len(d.indexed.chunks[k+1].start) > prev {
			break // the last chunk was merged or refilled
		}
		prev = len(d.indexed.chunks[k+1].start)
	}
	if len(d.indexed.chunks) != k+2 {
		t.Fatalf("chunks merged (%d left of %d blocks); want a refill", len(d.indexed.chunks), left)
	}
	if got := len(d.indexed.chunks[k].start); got >= left {
		t.Fatalf("left neighbour still holds %d blocks (had %d); want blocks moved right", got, left)
	}
	if err := d.compareState(true); err != nil {
		t.Fatal(err)
	}
	t.Logf("chunk sizes after the refill: %v", chunkSizes(d.indexed))
}

// chunkSizes lists the number of blocks in every chunk.
func chunkSizes(t *IndexedTimeline) []int {
	out := make([]int, len(t.chunks))
	for i, c := range t.chunks {
		out[i] = len(c.start)
	}
	return out
}

// TestShortFind checks shortFind and lastAtMost against a linear reference
// on every length around shortScan and every query between and beside the
// block starts.
func TestShortFind(t *testing.T) {
	for n := 1; n <= 3*shortScan+2; n++ {
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(3 * i) // gaps so that queries fall between elements
		}
		ix := NewIndexed(1, 0).(*IndexedTimeline)
		blocks := make([]Block, n)
		for i := range s {
			blocks[i] = Block{Start: s[i], End: s[i] + 3, Free: int64(i % 2)}
		}
		ix.loadBlocks(blocks)
		for x := int64(0); x <= s[n-1]+4; x++ {
			want := 0
			for i, v := range s {
				if v <= x {
					want = i
				}
			}
			if got := n - 1 - ix.shortFind(x); got != want {
				t.Fatalf("shortFind(len %d, %d) = block %d, want %d", n, x, got, want)
			}
			if got := lastAtMost(s, x); got != want {
				t.Fatalf("lastAtMost(len %d, %d) = %d, want %d", n, x, got, want)
			}
		}
	}
}

// TestShiftBlocks checks shiftBlocks, by loop and by copy, against moving
// a copy of the slice, for every range and distance that fits in a slice of
// twelve blocks.
func TestShiftBlocks(t *testing.T) {
	const n = 12
	for from := range n {
		for to := from; to <= n; to++ {
			for d := -from; to+d <= n; d++ {
				b := make([]sblock, n)
				for i := range b {
					b[i] = sblock{start: int64(i), free: -int64(i)}
				}
				want := slices.Clone(b)
				src := slices.Clone(b[from:to])
				copy(want[from+d:], src)
				shiftBlocks(b, from, to, d)
				if !slices.Equal(b, want) {
					t.Fatalf("shiftBlocks(%d, %d, %d) = %v, want %v", from, to, d, b, want)
				}
			}
		}
	}
}

// TestIndexedLoneChunkRoundTrip grows a timeline in the short layout past
// shortMax blocks, into chunks, and shrinks it back, checking
// the invariants and the list's state after every step.
func TestIndexedLoneChunkRoundTrip(t *testing.T) {
	const capacity = 10
	ix := NewIndexed(capacity, 0).(*IndexedTimeline)
	l := newList(capacity, 0)
	step := func(what string, f func(Timeline) error) {
		t.Helper()
		ei, el := f(ix), f(l)
		if (ei == nil) != (el == nil) {
			t.Fatalf("%s: indexed error %v, list error %v", what, ei, el)
		}
		if err := ix.checkInvariants(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, want := ix.Blocks(0, MaxTime), l.Blocks(0, MaxTime); !slices.Equal(got, want) {
			t.Fatalf("%s: blocks differ:\nindexed %v\nlist    %v", what, got, want)
		}
	}
	n := shortMax // each booking adds two blocks: ends with about 2*shortMax
	for i := range n {
		s := int64(4 * i)
		step(fmt.Sprintf("book %d", i), func(tl Timeline) error { return tl.Book(s, s+2, int64(1+i%3)) })
	}
	if len(ix.chunks) < 2 {
		t.Fatalf("after %d bookings: %d chunks, want a split", n, len(ix.chunks))
	}
	for i := range n {
		s := int64(4 * i)
		step(fmt.Sprintf("release %d", i), func(tl Timeline) error { return tl.Release(s, s+2, int64(1+i%3)) })
	}
	if ix.Len() != 1 || ix.rev == nil {
		t.Fatalf("after releasing everything: %d blocks in %d chunks, want 1 in the short layout", ix.Len(), len(ix.chunks))
	}
	step("over-book", func(tl Timeline) error { return tl.Book(5, 9, capacity+1) })
	step("overflow", func(tl Timeline) error { return tl.Release(5, 9, math.MaxInt64) })
	step("advance", func(tl Timeline) error { tl.Advance(7); return nil })
	step("book to the end", func(tl Timeline) error { return tl.Book(8, MaxTime, 3) })
}

// TestIndexedFindEveryBlock looks up, in every chunk, the start of every
// block, the instant just before the next block and MaxTime, after
// bookings that moved the chunks' windows in both directions (an
// insertion moves the shorter side of its chunk), and compares with a
// plain search of the chunk's blocks.
func TestIndexedFindEveryBlock(t *testing.T) {
	tl := NewIndexed(100, 0).(*IndexedTimeline)
	// Unit blocks alternating between 99 and 98 free, booked from both
	// ends towards the middle so that both sides of windows move.
	for i := range int64(1500) {
		for _, x := range []int64{i, 2999 - i} {
			if err := tl.Book(x, x+1, x%2+1); err != nil {
				t.Fatalf("book %d: %v", x, err)
			}
		}
	}
	if err := tl.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	if len(tl.chunks) < 4 {
		t.Fatalf("only %d chunks", len(tl.chunks))
	}
	for ci, c := range tl.chunks {
		last := ci+1 == len(tl.chunks)
		for bi, s := range c.start {
			xs := []int64{s}
			if bi+1 < len(c.start) {
				xs = append(xs, c.start[bi+1]-1)
			} else if last {
				xs = append(xs, MaxTime, math.MaxInt64)
			}
			for _, x := range xs {
				gbi, gf := tl.find(ci, x)
				if gbi != bi || gf != c.free[bi] {
					t.Fatalf("chunk %d: find(%d) = (%d, %d), want (%d, %d)", ci, x, gbi, gf, bi, c.free[bi])
				}
			}
		}
	}
}

// TestNearestCopy checks nearestCopy against the rule it implements,
// written as two plain scans (the whole reach to the right, then to the
// left while nearer): on random slot arrays with runs of copies, every k
// must get the same copy.
func TestNearestCopy(t *testing.T) {
	reference := func(st []int64, k int) (left, right int) {
		n := len(st)
		right, left = -1, -1
		for p := k + 1; p+1 < n && p <= k+copyReach; p++ {
			if st[p] == st[p+1] {
				right = p
				break
			}
		}
		for p := k - 1; p >= 0 && p >= k-copyReach && (right < 0 || k-p < right-k); p-- {
			if st[p] == st[p+1] {
				left = p
				break
			}
		}
		if left >= 0 {
			right = -1
		}
		return left, right
	}
	rng := rand.New(rand.NewPCG(7, 11))
	found := [3]int{} // none, left, right
	for trial := range 2000 {
		n := 1 + rng.IntN(3*copyReach)
		st := make([]int64, n)
		var at int64
		for i := range st {
			// Mostly distinct starts, with copies at a rate that varies
			// by trial: from none in reach to several.
			if i == 0 || rng.IntN(64) >= trial%64 {
				at += 1 + rng.Int64N(5)
			}
			st[i] = at
		}
		for k := range n {
			l, r := nearestCopy(st, k)
			wl, wr := reference(st, k)
			if l != wl || r != wr {
				t.Fatalf("trial %d, starts %v, k=%d: nearestCopy = (%d, %d), want (%d, %d)", trial, st, k, l, r, wl, wr)
			}
			switch {
			case l >= 0:
				found[1]++
			case r >= 0:
				found[2]++
			default:
				found[0]++
			}
		}
	}
	if found[0] == 0 || found[1] == 0 || found[2] == 0 {
		t.Fatalf("cases covered (none, left, right) = %v: the generator misses one", found)
	}
}
