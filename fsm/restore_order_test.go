package fsm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// timerCmp must order timers exactly as timerLess, the tree's order:
// the restore sorts with one and inserts with the other.
func TestTimerCmpAgreesWithTimerLess(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 23))
	pick := func() timer {
		return timer{at: r.Int64N(4) - 1, kind: timerKind(r.IntN(3)), id: fmt.Sprint("r", r.IntN(3))}
	}
	for range 5000 {
		a, b := pick(), pick()
		c := timerCmp(a, b)
		if (c < 0) != timerLess(a, b) || (c > 0) != timerLess(b, a) {
			t.Fatalf("timerCmp(%v, %v) = %d, timerLess says a<b %v, b<a %v", a, b, c, timerLess(a, b), timerLess(b, a))
		}
	}
}

// buildTimers merges the chunks' sorted timers: the list must hold each
// timer of every chunk once, whatever the chunks' lengths.
func TestBuildTimersMergesChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []timer
	j := &restoreJob{s: newState(Config{})}
	for c := range j.chunks {
		n := []int{0, 5, 1000, 77}[c]
		for i := range n {
			tm := timer{at: r.Int64N(500), kind: timerKind(r.IntN(3)), id: fmt.Sprintf("c%d-%d", c, i)}
			j.chunks[c].timers = append(j.chunks[c].timers, tm)
			want = append(want, tm)
		}
		slices.SortFunc(j.chunks[c].timers, timerCmp)
	}
	slices.SortFunc(want, timerCmp)
	j.buildTimers()
	var got []timer
	j.s.timers.Ascend(func(tm timer) bool { got = append(got, tm); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("the list holds %d timers, want %d in order", len(got), len(want))
	}
}

// A scan chunk books each row once, and twice when it has a pending
// modification: with enough of those a chunk outgrows its region of the
// shared booking list and buildPlanner must copy instead of moving the
// regions together. Either way the restored planner must hold every
// booking: the snapshot writes back byte for byte and the free profile is
// the original's, under every stage runner.
func TestRestoreBookingsOutgrowRegion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rows     int
		modified func(i int) bool
	}{
		{"none modified", 9, func(int) bool { return false }},
		{"one modified", 9, func(i int) bool { return i == 4 }},
		{"all modified", 9, func(int) bool { return true }},
		{"one row modified", 1, func(int) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{DefaultHoldTTL: 100})
			h.must(0, OK, createRes("cpu", 1000))
			for i := range tc.rows {
				id := fmt.Sprintf("r%02d", i)
				h.must(0, OK, reserve(id, "cpu", 4, 100, withStart(1000+int64(i)*10)))
				if tc.modified(i) {
					h.must(0, OK, modify(id, []*fsmv1.Part{part("cpu", 6)}, proto.Int64(5000+int64(i)*10), nil))
				}
			}
			snap := snapshotBytes(t, h.f)
			for name, run := range stageRunners {
				r := restoredWith(t, Config{DefaultHoldTTL: 100}, snap, run)
				if again := snapshotBytes(t, r); !bytes.Equal(snap, again) {
					t.Fatalf("%s: snapshot→restore→snapshot changed the bytes", name)
				}
				sameProfiles(t, name, h.f, r)
				checkInvariants(t, r)
			}
		})
	}
}

// sortTimers must give the order of a comparison sort by timerCmp, on
// instants spread over the whole int64 range, crowded into a few, and
// tied (then kind and ID decide), below and above its bucketing size.
func TestSortTimersMatchesComparisonSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	spreads := map[string]func() int64{
		"full range": func() int64 { return int64(r.Uint64()) },
		"crowded":    func() int64 { return 1_800_000_000_000 + r.Int64N(5) },
		"one day":    func() int64 { return 1_800_000_000_000 + r.Int64N(86_400_000) },
		"skewed": func() int64 {
			if r.IntN(100) == 0 {
				return math.MaxInt64 - r.Int64N(10)
			}
			return r.Int64N(1_000_000)
		},
	}
	for name, at := range spreads {
		for _, n := range []int{0, 1, 100, 5_000, 60_000} {
			ts := make([]timer, n)
			for i := range ts {
				ts[i] = timer{at: at(), kind: timerKind(r.IntN(3)), id: fmt.Sprint("r", r.IntN(n+1))}
			}
			want := slices.Clone(ts)
			slices.SortFunc(want, timerCmp)
			sortTimers(ts)
			if !slices.Equal(ts, want) {
				t.Fatalf("%s, %d timers: sortTimers differs from the comparison sort", name, n)
			}
		}
	}
}

// BenchmarkSortTimers sorts a restore scan chunk's worth of timers (a
// quarter of a million, instants spread over 30 days) by comparisons
// alone and by sortTimers.
func BenchmarkSortTimers(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	src := make([]timer, 250_000)
	for i := range src {
		src[i] = timer{at: 1_800_000_000_000 + r.Int64N(30*86_400_000), kind: timerKind(r.IntN(3)), id: fmt.Sprintf("r-%08d", i)}
	}
	for _, tc := range []struct {
		name string
		sort func([]timer)
	}{
		{"comparisons", func(ts []timer) { slices.SortFunc(ts, timerCmp) }},
		{"ranges", sortTimers},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ts := make([]timer, len(src))
			for b.Loop() {
				copy(ts, src)
				tc.sort(ts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(src)), "ns/timer")
		})
	}
}
