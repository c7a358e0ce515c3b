package seed

import (
	"runtime"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	"github.com/ledgerd/ledgerd/planner"
)

// The replay's floor: what Replay costs per request around the timeline's
// own work. A contender's cpu-ns/request is the floor plus its own work
// (Advance, Earliest and Book); the floor is not small at these sizes (the
// loop, two Len calls and three calls through the Timeline interface per
// request, and its own branch on the outcome), so ratios of the totals
// understate how far apart the contenders' own work is.
//
// The floor is measured by replaying a contender's recorded decisions:
// recordedTimeline answers each Earliest with the start the contender
// chose and does nothing else, so the loop takes the same branches, in
// the same order, as it does around the contender.

// decision is one request's outcome as a contender's Earliest gave it.
type decision struct {
	start int64
	ok    bool
}

// recorder wraps a timeline and records its Earliest answers, one per
// request (Replay advances once per request, before searching).
type recorder struct {
	planner.Timeline
	out []decision
}

func (r *recorder) Advance(now int64) {
	r.out = append(r.out, decision{})
	r.Timeline.Advance(now)
}

func (r *recorder) Earliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	s, ok := r.Timeline.Earliest(amount, duration, notBefore, latestStart)
	r.out[len(r.out)-1] = decision{s, ok}
	return s, ok
}

// recordedTimeline replays recorded decisions: the timeline of the floor.
// Only the methods Replay calls are implemented.
type recordedTimeline struct {
	planner.Timeline
	d []decision
	i int
}

// Len is a constant: Replay only sums it.
func (t *recordedTimeline) Len() int { return 1 }

// Advance moves to the next request's decision.
func (t *recordedTimeline) Advance(int64) { t.i++ }

// Earliest returns the recorded decision.
func (t *recordedTimeline) Earliest(_, _, _, _ int64) (int64, bool) {
	d := t.d[t.i-1]
	return d.start, d.ok
}

// Book accepts what Earliest returned.
func (t *recordedTimeline) Book(_, _, _ int64) error { return nil }

// record replays rs on a new timeline of c and returns its decisions and
// the replay's outcome.
func record(tb testing.TB, c Contender, capacity int64, rs []workload.Reservation, h int64) ([]decision, ReplayOutcome) {
	tb.Helper()
	rec := &recorder{Timeline: c.Factory(capacity, rs[0].Arrival)}
	out, err := Replay(rec, rs, h)
	if err != nil {
		tb.Fatal(err)
	}
	if len(rec.out) != len(rs) {
		tb.Fatalf("%s: recorded %d decisions for %d requests", c.Name, len(rec.out), len(rs))
	}
	return rec.out, out
}

// synthBenchStream is BenchmarkReplay's stream: 2,000 Lublin–Feitelson
// reservations at a mean interarrival time of 200 s (offered load about
// 3.4) on the default capacity.
func synthBenchStream(tb testing.TB) (Config, int64, []workload.Reservation) {
	tb.Helper()
	cfg := DefaultConfig()
	gen, err := workload.NewLublin(workload.LublinConfig{MaxNodes: cfg.Capacity, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	jobs := gen.Generate(2000)
	natural := jobs[len(jobs)-1].Submit / float64(len(jobs)-1)
	for i := range jobs {
		jobs[i].Submit *= 200 / natural
	}
	rs, _, err := workload.FromSynth(jobs, cfg.reservationConfig(false, cfg.Capacity))
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, cfg.Capacity, rs
}

// traceBenchStream is BenchmarkReplayTrace's stream: the default trace on
// the capacity its header declares, submit times unscaled. It skips tb when
// the trace is not beside the repository.
func traceBenchStream(tb testing.TB) (Config, int64, []workload.Reservation) {
	tb.Helper()
	cfg := DefaultConfig()
	path := kthTrace(tb)
	if path == "" {
		tb.Skip("KTH trace not available")
	}
	trace, err := workload.LoadTrace(path, 0)
	if err != nil {
		tb.Fatal(err)
	}
	capacity, _, err := trace.Capacity(0)
	if err != nil {
		tb.Fatal(err)
	}
	jobs := trace.Jobs
	t0 := jobs[0].Submit
	for i := range jobs {
		if jobs[i].Submit >= 0 {
			jobs[i].Submit -= t0
		}
	}
	rs, _, err := workload.FromTally(jobs, cfg.reservationConfig(true, capacity))
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, capacity, rs
}

// TestRecordedTimelineReplaysDecisions checks the floor's premise: the
// recorded timeline makes exactly the decisions of the contender it was
// recorded from, so Replay runs the same path around it.
func TestRecordedTimelineReplaysDecisions(t *testing.T) {
	cfg, capacity, rs := synthBenchStream(t)
	h := cfg.Horizon * cfg.TimeScale
	for _, c := range cfg.Contenders() {
		if c.Name != "indexed" && c.Name != "slotted-90" {
			continue
		}
		d, want := record(t, c, capacity, rs, h)
		got, err := Replay(&recordedTimeline{d: d}, rs, h)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got.Accepted != want.Accepted || got.Decisions != want.Decisions {
			t.Errorf("%s: recorded replay accepted %d (hash %x), the contender %d (hash %x)",
				c.Name, got.Accepted, got.Decisions, want.Accepted, want.Decisions)
		}
		if want.Accepted == 0 || want.Accepted == len(rs) {
			t.Errorf("%s: accepted %d of %d: the stream does not exercise both outcomes", c.Name, want.Accepted, len(rs))
		}
	}
}

// benchFloor runs Replay on each of the indexed timeline's and the 90-slot
// planner's recorded decisions.
func benchFloor(b *testing.B, cfg Config, capacity int64, rs []workload.Reservation) {
	h := cfg.Horizon * cfg.TimeScale
	for _, c := range cfg.Contenders() {
		if c.Name != "indexed" && c.Name != "slotted-90" {
			continue
		}
		d, _ := record(b, c, capacity, rs, h)
		b.Run(c.Name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu time.Duration
			for b.Loop() {
				out, err := Replay(&recordedTimeline{d: d}, rs, h)
				if err != nil {
					b.Fatal(err)
				}
				cpu += out.CPU
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(len(rs)), "cpu-ns/request")
		})
	}
}

// BenchmarkReplayFloor is the floor of BenchmarkReplay (see above): its
// stream replayed on the recorded decisions of the indexed timeline and of
// the 90-slot planner. A contender's own work per request is its
// BenchmarkReplay cpu-ns/request minus its floor.
func BenchmarkReplayFloor(b *testing.B) {
	cfg, capacity, rs := synthBenchStream(b)
	benchFloor(b, cfg, capacity, rs)
}

// BenchmarkReplayTraceFloor is the floor of BenchmarkReplayTrace.
func BenchmarkReplayTraceFloor(b *testing.B) {
	cfg, capacity, rs := traceBenchStream(b)
	benchFloor(b, cfg, capacity, rs)
}
