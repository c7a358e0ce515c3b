package planner

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestChunkDir checks the chunk directory against the binary search it
// replaces, through fills, churn that splits and merges chunks, and
// Advance dropping chunks at the front: headOf must return what
// lastAtMost returns for every instant tried, and, since a wrongly kept
// directory still answers right through its fallback, the fallbacks and
// rebuilds must stay rare.
func TestChunkDir(t *testing.T) {
	const capacity = 64
	tl := NewIndexed(capacity, 0).(*IndexedTimeline)
	rng := rand.New(rand.NewPCG(11, 17))
	type win struct{ s, e, a int64 }
	var held []win
	horizon := int64(400_000)
	lookups := 0
	check := func(when string) {
		t.Helper()
		if tl.rev != nil {
			return
		}
		if err := tl.checkInvariants(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		f := tl.firsts
		xs := []int64{tl.origin, f[len(f)-1], MaxTime, math.MaxInt64}
		for _, h := range f[1:] {
			xs = append(xs, h, h-1)
		}
		for range 200 {
			xs = append(xs, tl.origin+rng.Int64N(horizon))
		}
		for _, x := range xs {
			if x < tl.origin {
				continue
			}
			lookups++
			if got, want := tl.headOf(x), lastAtMost(f, x); got != want {
				t.Fatalf("%s: headOf(%d) = %d, binary search %d (%d chunks)", when, x, got, want, len(f))
			}
		}
	}
	book := func() {
		a, dur := 1+rng.Int64N(16), 1+rng.Int64N(200)
		nb := tl.Origin() + rng.Int64N(horizon)
		s, ok := tl.Earliest(a, dur, nb, MaxTime-dur)
		if !ok {
			t.Fatalf("no fit for %d x %d from %d", a, dur, nb)
		}
		if err := tl.Book(s, s+dur, a); err != nil {
			t.Fatal(err)
		}
		held = append(held, win{s, s + dur, a})
	}
	release := func() {
		k := rng.IntN(len(held))
		w := held[k]
		held[k] = held[len(held)-1]
		held = held[:len(held)-1]
		if w.e <= tl.Origin() {
			return // ended: Advance dropped it
		}
		if err := tl.Release(max(w.s, tl.Origin()), w.e, w.a); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30_000 {
		book()
		if i%1_000 == 999 {
			check("fill")
		}
	}
	if n := len(tl.chunks); n < 40 {
		t.Fatalf("only %d chunks after the fill", n)
	}
	for i := range 60_000 {
		if rng.IntN(2) == 0 {
			book()
		} else {
			release()
		}
		if i%5_000 == 4_999 {
			// Time passes: the front chunks end and are dropped, and
			// later bookings reach further.
			tl.Advance(tl.Origin() + horizon/40)
			horizon += horizon / 40
		}
		if i%1_000 == 999 {
			check("churn")
		}
	}
	d := tl.dir
	t.Logf("%d chunks; %d lookups, %d fallbacks, %d rebuilds", len(tl.chunks), lookups, d.fallbacks, d.rebuilds)
	if d.fallbacks*20 > lookups {
		t.Errorf("%d of %d lookups fell back to the binary search: the directory is not kept", d.fallbacks, lookups)
	}
	if d.rebuilds > 20 {
		t.Errorf("%d rebuilds in %d lookups", d.rebuilds, lookups)
	}
}

// TestChunkDirBuild checks the bucket layout on hand-made heads.
func TestChunkDirBuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		heads []int64
	}{
		{"one", []int64{5}},
		{"two close", []int64{0, 1}},
		{"even", []int64{0, 100, 200, 300, 400}},
		{"skewed", []int64{0, 1, 2, 3, 1 << 40}},
		{"negative", []int64{-1 << 50, -7, 0, 1 << 50}},
		{"wide", []int64{math.MinInt64 + 1, 0, math.MaxInt64 - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d chunkDir
			d.build(tc.heads)
			n := len(tc.heads)
			if got := len(d.idx) - 1; got > dirPerChunk*n+1 {
				t.Errorf("%d buckets for %d heads", got, n)
			}
			if last := d.idx[len(d.idx)-1]; int(last) != n-1 {
				t.Errorf("sentinel %d, want %d", last, n-1)
			}
			for b := range len(d.idx) - 1 {
				at := int64(uint64(d.base) + uint64(b)<<d.shift)
				if got, want := int(d.idx[b]), lastAtMost(tc.heads, at); got != want {
					t.Errorf("bucket %d (from %d): chunk %d, want %d", b, at, got, want)
				}
			}
		})
	}
}
