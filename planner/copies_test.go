package planner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIndexedCopies drives the copies of the chunked layout (see copies in
// indexed.go) through every path against the list timeline and the
// profile model: admissions (Earliest, Book, Release of the same window)
// at random places leave copies where their windows merged back and take
// them again; chunks reach maxDup and are compacted; chunks holding
// copies are split, refilled, merged, trimmed by Advance and handed back
// to the short layout. The invariants (a copy equals the slot after it,
// the count of copies, chunkMin blocks besides the copies) are checked
// after every step.
func TestIndexedCopies(t *testing.T) {
	const capacity, horizon = 64, 12_000
	d := newDiffRun(capacity, horizon)
	d.fullCheckEvery = 97
	d.stateEvery = 3
	rng := rand.New(rand.NewPCG(7, 11))
	type win struct{ s, e, a int64 }
	var held []win
	apply := func(what string, op tlOp) {
		t.Helper()
		if err := d.apply(op); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// A fragmented timeline of several chunks, built without copies.
	for range 2500 {
		s := rng.Int64N(horizon - 40)
		w := win{s, s + 1 + rng.Int64N(30), 1 + rng.Int64N(8)}
		if d.indexed.MinFree(w.s, w.e) >= w.a {
			apply("fill", tlOp{kind: opBook, a: w.s, b: w.e, c: w.a})
			held = append(held, w)
		}
	}
	if len(d.indexed.chunks) < 4 {
		t.Fatalf("only %d chunks after the fill", len(d.indexed.chunks))
	}
	// Admissions: each leaves its window's edges as copies (or takes
	// copies left by earlier ones). Count what the chunks go through.
	sawCap, sawCopies := false, false
	see := func() {
		for _, c := range d.indexed.chunks {
			sawCopies = sawCopies || c.dup > 0
			sawCap = sawCap || c.dup >= maxDup-1
		}
	}
	for range 3000 {
		amount, dur := 1+rng.Int64N(16), 1+rng.Int64N(40)
		s, ok := d.indexed.Earliest(amount, dur, rng.Int64N(horizon-200), horizon-dur)
		apply("admission earliest", tlOp{kind: opEarliest, a: amount, b: dur, c: s, d: horizon - dur})
		if !ok {
			continue
		}
		if d.step%2 == 0 {
			// Booked by the step above (diffRun books what Earliest
			// found on every even step): release it.
			apply("admission release", tlOp{kind: opRelease, a: s, b: s + dur, c: amount})
		}
		see()
	}
	if !sawCopies {
		t.Fatalf("admissions left no copies")
	}
	// Heal everything in random order: merges into copies, compactions,
	// refills and merges of chunks with copies, down to the short layout.
	rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	for k, w := range held {
		apply("heal", tlOp{kind: opRelease, a: w.s, b: w.e, c: w.a})
		if k%500 == 0 {
			apply("advance", tlOp{kind: opAdvance, a: int64(k) * 2})
		}
		see()
	}
	if !sawCap {
		t.Fatalf("no chunk filled its copies")
	}
	if d.indexed.rev == nil {
		t.Fatalf("%d blocks in %d chunks after healing, want the short layout", d.indexed.n, len(d.indexed.chunks))
	}
	if err := d.compareState(true); err != nil {
		t.Fatal(err)
	}
}

// TestCompactKeep checks the index compact returns for every slot of a
// chunk with copies: the position of the block whose run of slots starts
// there (or the chunk's end).
func TestCompactKeep(t *testing.T) {
	st := []int64{1, 3, 3, 3, 5, 8, 8, 9}
	fr := []int64{4, 2, 2, 2, 7, 1, 1, 4}
	want := map[int]int{0: 0, 1: 1, 4: 2, 5: 3, 7: 4, 8: 5}
	for keep, w := range want {
		tl := &IndexedTimeline{}
		c := newChunk(st, fr, chunkCap)
		tl.chunks = []*chunk{c}
		tl.firsts = []int64{st[0]}
		tl.runs = make([]chunkRun, 1)
		tl.samp = append([]int64(nil), maxSamples[:]...)
		tl.summarize(0)
		if c.dup != 3 {
			t.Fatalf("countDup = %d, want 3", c.dup)
		}
		if got := tl.compact(0, keep); got != w {
			t.Errorf("compact(keep=%d) = %d, want %d", keep, got, w)
		}
		if want := []int64{1, 3, 5, 8, 9}; len(c.start) != len(want) || c.dup != 0 {
			t.Fatalf("after compact: starts %v, dup %d", c.start, c.dup)
		}
		for j, s := range []int64{1, 3, 5, 8, 9} {
			if c.start[j] != s || c.free[j] != []int64{4, 2, 7, 1, 4}[j] {
				t.Fatalf("after compact: starts %v frees %v", c.start, c.free)
			}
		}
		for g, v := range tl.samples(0) {
			if w := wantSample(c, g); v != w {
				t.Fatalf("after compact: sample %d is %d, want %d", g, v, w)
			}
		}
	}
}

// TestFirstEndSkipsCopies: when the first block of a chunked timeline
// absorbs the next one, the merged slot becomes a copy of slot 0, and the
// first block's end (the trim key of its resource) is that of the run,
// not the copy's zero length.
func TestFirstEndSkipsCopies(t *testing.T) {
	p := New(NewIndexed)
	if err := p.AddResource("cpu", 4); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 600; i++ {
		if err := p.Book(Booking{ID: fmt.Sprint("b", i), Parts: []Part{{"cpu", 1}}, Start: 2*i + 1, End: 2*i + 2}); err != nil {
			t.Fatal(err)
		}
	}
	tl := p.resources["cpu"].tl.(*IndexedTimeline)
	if tl.rev != nil {
		t.Fatal("the timeline is still in the short layout; the test needs chunks")
	}
	if err := p.Remove("b0"); err != nil { // [0,1), [1,2), [2,3) merge into [0,3)
		t.Fatal(err)
	}
	if got := tl.firstEnd(); got != 3 {
		t.Fatalf("firstEnd = %d, want 3 (the end of the merged first block)", got)
	}
}

// TestShortLayoutStaysWithinShortMax: the booking Earliest found in a
// short layout of 511 blocks splits a block at both ends; the 513 blocks
// go into chunks instead of overfilling the short layout.
func TestShortLayoutStaysWithinShortMax(t *testing.T) {
	tl := NewIndexed(4, 0).(*IndexedTimeline)
	for i := int64(0); i < (shortMax-1)/2; i++ { // 1 + 2·255 = 511 blocks
		if err := tl.Book(4*i+1, 4*i+2, 1); err != nil {
			t.Fatal(err)
		}
	}
	if tl.rev == nil || len(tl.rev) != shortMax-1 {
		t.Fatalf("setup: short layout %v with %d blocks, want %d", tl.rev != nil, len(tl.rev), shortMax-1)
	}
	// A window inside the free block [2, 5): new boundaries at 3 and 4.
	s, ok := tl.Earliest(4, 1, 3, 3)
	if !ok || s != 3 {
		t.Fatalf("Earliest = %d, %v; want 3", s, ok)
	}
	if err := tl.Book(3, 4, 4); err != nil {
		t.Fatal(err)
	}
	if err := tl.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestAdvanceLeavesNoLoneChunk: an Advance whose rebalance merges the
// last two chunks moves the blocks into the short layout, as every other
// operation does, instead of leaving one chunk in the chunked layout.
func TestAdvanceLeavesNoLoneChunk(t *testing.T) {
	merged := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 3))
		tl := NewIndexed(8, 0).(*IndexedTimeline)
		for i := int64(0); i < 700; i++ {
			_ = tl.Book(3*i+1+rng.Int64N(2), 3*i+3, 1+rng.Int64N(3))
		}
		for now := int64(0); now < 2200; now += 1 + rng.Int64N(40) {
			chunked := tl.rev == nil && len(tl.chunks) == 2
			tl.Advance(now)
			if err := tl.checkInvariants(); err != nil {
				t.Fatalf("seed %d, Advance(%d): %v", seed, now, err)
			}
			if chunked && tl.rev != nil {
				merged++
			}
		}
	}
	if merged == 0 {
		t.Fatal("no Advance moved two chunks into the short layout: the test covers nothing")
	}
}

// TestIndexedChurn books fresh requests into a timeline of many chunks
// and releases each booking many steps later, as a ledger does whose
// bookings end long after they were made (BenchmarkAdmissionChurn at a
// smaller size): copies pile up to the limit, and chunks fill and are
// compacted or split under Books whose window starts or ends on a
// boundary already (split2 inserts the other edge alone, and must find
// start again after an end that moved it). Every answer and, every few
// steps, the whole block list are compared with the list timeline, and
// the invariants are checked.
func TestIndexedChurn(t *testing.T) {
	const capacity, horizon, live, lag = 128, 160_000, 8_000, 512
	steps := 12_000
	if raceEnabled {
		steps = 4_000 // the race detector makes every step ten times dearer
	}
	d := newDiffRun(capacity, horizon)
	d.ref = nil // the profile model is O(horizon) per check
	d.stateEvery = 101
	rng := rand.New(rand.NewPCG(3, 5))
	type win struct{ s, e, a int64 }
	var held []win
	admit := func(what string) {
		t.Helper()
		a, dur := 1+rng.Int64N(32), 1+rng.Int64N(120)
		if d.step%2 == 0 {
			d.step++ // apply counts the step, then books on even ones
		}
		s, ok := d.indexed.Earliest(a, dur, rng.Int64N(horizon-200), MaxTime-dur)
		if err := d.apply(tlOp{kind: opEarliest, a: a, b: dur, c: s, d: MaxTime - dur}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !ok {
			t.Fatalf("%s: no fit for %d x %d", what, a, dur)
		}
		held = append(held, win{s, s + dur, a})
	}
	for range live {
		admit("fill")
	}
	if len(d.indexed.chunks) < 20 {
		t.Fatalf("only %d chunks after the fill", len(d.indexed.chunks))
	}
	full := 0
	for i := range steps {
		admit("churn")
		if len(held) > live+lag {
			// Release a booking made long ago, from anywhere in the
			// timeline.
			k := rng.IntN(len(held) - lag)
			w := held[k]
			held[k] = held[len(held)-lag-1]
			held = append(held[:len(held)-lag-1], held[len(held)-lag:]...)
			if err := d.apply(tlOp{kind: opRelease, a: w.s, b: w.e, c: w.a}); err != nil {
				t.Fatalf("churn %d release: %v", i, err)
			}
		}
		for _, c := range d.indexed.chunks {
			if len(c.start) >= chunkCap-1 && c.dup > 0 {
				full++
				break
			}
		}
	}
	if err := d.compareState(false); err != nil {
		t.Fatalf("after the churn: %v", err)
	}
	if full == 0 {
		t.Fatalf("no chunk with copies came near its capacity: the churn does not reach compaction")
	}
	t.Logf("%d blocks in %d chunks; a chunk with copies near capacity after %d of the steps", d.indexed.Len(), len(d.indexed.chunks), full)
}

// TestBookOneEdgeCompacts books windows that begin on a boundary and end
// inside a block of a chunk that is full and holds its copies far from
// the change, so that inserting the window's end compacts the chunk and
// moves every slot, start's too; split2 must then find start where it
// went. Every step is compared with the list timeline, and the
// invariants are checked.
func TestBookOneEdgeCompacts(t *testing.T) {
	const capacity, horizon = 8, 40_000
	d := newDiffRun(capacity, horizon)
	d.ref = nil
	apply := func(what string, op tlOp) {
		t.Helper()
		if err := d.apply(op); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Bookings of one unit on [10i, 10i+5): blocks alternate between
	// capacity-1 and capacity, two per booking, over several chunks.
	const n = 1200
	for i := range int64(n) {
		apply("fill", tlOp{kind: opBook, a: 10 * i, b: 10*i + 5, c: 1})
	}
	tl := d.indexed
	if len(tl.chunks) < 3 {
		t.Fatalf("%d chunks, want at least 3", len(tl.chunks))
	}
	c := tl.chunks[1]
	first := c.start[0]
	// Copies at the head of chunk 1: releasing a booking merges its two
	// edges into copies of their predecessors.
	released := 0
	for i := (first+9)/10 + 3; released < 10; i++ {
		apply("release", tlOp{kind: opRelease, a: 10 * i, b: 10*i + 5, c: 1})
		released++
	}
	if c.dup == 0 || tl.chunks[1] != c {
		t.Fatalf("no copies in chunk 1 (dup %d)", c.dup)
	}
	// Fill the chunk from its tail, far from those copies: one unit on
	// [10i+7, 10i+8) and two on [10i+8, 10i+9) in the gap after booking
	// i add three blocks, and leave [10i+5, 10i+7) whole.
	last := c.start[len(c.start)-1]
	i := last/10 - 1
	for len(c.start) < chunkCap-1 && i > (first+9)/10+3+int64(released)+copyReach/2 {
		for k, a := range []int64{1, 2} {
			if len(c.start) < chunkCap-1 {
				apply("grow", tlOp{kind: opBook, a: 10*i + 7 + int64(k), b: 10*i + 8 + int64(k), c: a})
			}
		}
		i--
		if tl.chunks[1] != c {
			t.Fatalf("chunk 1 was replaced while growing")
		}
	}
	if len(c.start) < chunkCap-1 {
		t.Fatalf("chunk 1 holds %d slots, want %d", len(c.start), chunkCap-1)
	}
	// One-edge Books near the chunk's end: two units on [10j+5, 10j+6)
	// begin where booking j ends (with one unit the blocks would merge)
	// and end inside the gap's first block. The first fills the chunk;
	// the next compacts it, and start's old slot then lies past the
	// compacted chunk's end (a first version of split2 indexed it).
	compacted := false
	for j := last/10 - 2; j > last/10-40 && !compacted; j-- {
		dup := c.dup
		apply("one edge", tlOp{kind: opBook, a: 10*j + 5, b: 10*j + 6, c: 2})
		compacted = dup > 0 && c.dup == 0
	}
	if !compacted {
		t.Fatalf("no Book compacted chunk 1 (%d slots, %d copies)", len(c.start), c.dup)
	}
	if err := d.compareState(false); err != nil {
		t.Fatal(err)
	}
}
