package workload

import (
	"math"
	"strings"
	"testing"
)

// The fixtures in testdata/ are tiny SWF files written for these tests;
// small.swf has one job per conversion rule:
//
//	1 fits                    5 run 0, no requested time: dropped
//	2 16 procs > 8: dropped   6 no size: dropped
//	3 field 9 = -1            7 ran 500 s of a 300 s request
//	4 run 0, requested 120    8 12 procs > 8: dropped

func TestLoadTraceCapacity(t *testing.T) {
	tests := []struct {
		path     string
		override int64
		want     int64
		source   string
		err      string
	}{
		{path: "testdata/small.swf", want: 8, source: "header MaxNodes"},
		{path: "testdata/small-gz.swf.gz", want: 8, source: "header MaxNodes"},
		{path: "testdata/small.swf", override: 128, want: 128, source: "-capacity"},
		{path: "testdata/procs.swf", want: 64, source: "header MaxProcs"},
		{path: "testdata/noheader.swf", err: "-capacity"},
		{path: "testdata/noheader.swf", override: 4, want: 4, source: "-capacity"},
	}
	for _, tc := range tests {
		tr, err := LoadTrace(tc.path, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got, source, err := tr.Capacity(tc.override)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tr.Name) {
				t.Errorf("%s: err = %v, want one naming the trace and %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || source != tc.source {
			t.Errorf("%s override %d: capacity %d from %q (%v), want %d from %q", tc.path, tc.override, got, source, err, tc.want, tc.source)
		}
	}
}

func TestTraceName(t *testing.T) {
	for path, want := range map[string]string{
		"testdata/small.swf":                  "small",
		"../x/KTH-SP2-1996-2.1-cln.swf.gz":    "KTH-SP2-1996-2.1-cln",
		"lublin_256.swf.gz":                   "lublin_256",
		"/data/trace.txt":                     "trace.txt",
		"/data/only.gz":                       "only",
		"/data/my.trace.v2.swf":               "my.trace.v2",
		"relative/dir/plain-name-without-ext": "plain-name-without-ext",
	} {
		if got := TraceName(path); got != want {
			t.Errorf("TraceName(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestLoadTraceLimitAndErrors(t *testing.T) {
	tr, err := LoadTrace("testdata/small.swf", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 3 || tr.Read != 8 || tr.Name != "small" {
		t.Fatalf("jobs %d, read %d, name %q; want 3, 8, small", len(tr.Jobs), tr.Read, tr.Name)
	}
	if _, err := LoadTrace("testdata/does-not-exist.swf", 0); err == nil {
		t.Fatal("missing file: no error")
	}
}

// TestFromTallyCountsEveryJob checks each rule of the fixture and that
// every job read is either kept or dropped for exactly one reason.
func TestFromTallyCountsEveryJob(t *testing.T) {
	tr, err := LoadTrace("testdata/small.swf", 0)
	if err != nil {
		t.Fatal(err)
	}
	rs, tally, err := FromTally(tr.Jobs, ReservationConfig{StartFactor: 1, TimeScale: 1, UseRequested: true, MaxAmount: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := Tally{Read: 8, Kept: 4, NoSize: 1, TooLarge: 2, NoTime: 1, RunAsEstimate: 1, ZeroRun: 1, Capacity: 8}
	got := tally
	got.work, got.tooLargeWork, got.Oversized = 0, 0, 0
	if got != want {
		t.Fatalf("tally %+v\nwant  %+v", got, want)
	}
	if got.Kept+got.Dropped() != got.Read {
		t.Fatalf("kept %d + dropped %d != read %d", got.Kept, got.Dropped(), got.Read)
	}
	// Work = procs x run: 400 + 4800 + 100 + 4000 + 240 = 9540, of which
	// jobs 2 and 8 (too large) hold 5040.
	if d := tally.Oversized - 5040.0/9540; d > 1e-12 || d < -1e-12 {
		t.Errorf("oversized share %g, want %g", tally.Oversized, 5040.0/9540)
	}
	var ids []int64
	durs := map[int64]int64{}
	for _, r := range rs {
		ids = append(ids, r.Job)
		durs[r.Job] = r.Duration
	}
	if len(ids) != 4 || ids[0] != 1 || ids[1] != 3 || ids[2] != 4 || ids[3] != 7 {
		t.Fatalf("kept jobs %v, want [1 3 4 7]", ids)
	}
	// Job 3 has no requested time: its run time (50) stands in; job 4 ran
	// 0 s but is reserved for its request (120); job 7 for its request.
	if durs[1] != 200 || durs[3] != 50 || durs[4] != 120 || durs[7] != 300 {
		t.Errorf("durations %v", durs)
	}
	s := tally.String()
	for _, frag := range []string{"8 jobs read, 4 used", "2 larger than the capacity 8 (52.8 % of the work)", "1 without a size",
		"1 without a run or requested time", "1 without a requested time (field 9)", "1 with run time 0"} {
		if !strings.Contains(s, frag) {
			t.Errorf("summary %q lacks %q", s, frag)
		}
	}
	// Without UseRequested the run time is the duration and nothing is
	// counted as an estimate; job 4 (run 0) is then dropped.
	_, tally, err = FromTally(tr.Jobs, ReservationConfig{TimeScale: 1, MaxAmount: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tally.Kept != 5 || tally.NoTime != 2 || tally.TooLarge != 0 || tally.RunAsEstimate != 0 || tally.ZeroRun != 0 {
		t.Errorf("run-time durations, no capacity limit: %+v", tally)
	}
}

// TestFromTallyOutOfRange checks that a job whose times would overflow the
// time unit (a corrupt line) is dropped and counted, not turned into a
// request with wrapped-around times, and that the jobs beside it keep
// what they would get without it.
func TestFromTallyOutOfRange(t *testing.T) {
	cfg := ReservationConfig{StartFactor: 1, Slack: 1, TimeScale: 1000, UseRequested: true, Seed: 3}
	ok := []Job{
		{Number: 1, Submit: 0, Run: 10, AllocProcs: 4, ReqTime: 20},
		{Number: 3, Submit: 50, Run: 10, AllocProcs: 4, ReqTime: 20},
	}
	// maxUnits / 1000 / 3 seconds: the largest a duration may be at
	// submit time 0 with a start factor and a slack of 1 each.
	limit := int64(maxUnits / 1000 / 3)
	jobs := []Job{
		ok[0],
		{Number: 2, Submit: 1_000_000_000_000_000, Run: 10, AllocProcs: 4, ReqTime: 9_000_000_000_000_000},
		ok[1],
		{Number: 4, Submit: 0, Run: 10, AllocProcs: 4, ReqTime: limit + 1},
		{Number: 5, Submit: 0, Run: 10, AllocProcs: 4, ReqTime: limit - 1},
	}
	rs, tally, err := FromTally(jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tally.OutOfRange != 2 || tally.Kept != 3 || tally.Kept+tally.Dropped() != tally.Read {
		t.Fatalf("tally %+v: want 2 out of range and 3 kept", tally)
	}
	if s := tally.String(); !strings.Contains(s, "2 with times too large for the time unit") {
		t.Errorf("tally reads %q, which does not name the 2 jobs out of range", s)
	}
	if len(rs) != 3 || rs[0].Job != 1 || rs[1].Job != 3 || rs[2].Job != 5 {
		t.Fatalf("kept %+v, want jobs 1, 3 and 5", rs)
	}
	if r := rs[2]; r.Deadline-r.Start < r.Duration || r.Deadline <= 0 {
		t.Fatalf("job 5 at the limit: %+v overflows", r)
	}
	// The jobs beside the dropped ones are converted as without them: the
	// dropped jobs draw nothing from the generator.
	alone, _, err := FromTally(ok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if alone[0] != rs[0] || alone[1] != rs[1] {
		t.Fatalf("with out-of-range jobs beside them: %+v, %+v; alone: %+v, %+v", rs[0], rs[1], alone[0], alone[1])
	}
	for _, bad := range []ReservationConfig{
		{StartFactor: math.Inf(1), TimeScale: 1},
		{Slack: math.Inf(1), TimeScale: 1},
		{OverEstimate: math.Inf(1), TimeScale: 1},
	} {
		if _, _, err := FromTally(jobs, bad); err == nil {
			t.Errorf("FromTally accepted %+v", bad)
		}
	}
}
