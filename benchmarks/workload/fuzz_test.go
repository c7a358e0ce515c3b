package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSWFToReservations feeds any bytes to the SWF reader and the jobs it
// accepts to the conversion the seed experiment runs on a user's trace,
// and checks what the replay relies on: every job is kept or dropped for
// one counted reason, and every reservation is well formed, with times
// that did not overflow (a positive duration, a start at or after its
// arrival, a deadline that leaves room for the duration, all within
// maxUnits but for float64 rounding).
func FuzzSWFToReservations(f *testing.F) {
	for _, name := range []string{"small.swf", "procs.swf", "noheader.swf"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 1.0, 1.0)
	}
	f.Add([]byte("1 0 0 10 4 -1 -1 4 20 -1 1 1 1 1 1 -1 -1 -1\n"), 0.5, 2.0)
	f.Add([]byte("1 1e15 0 10 4 -1 -1 4 9e15 -1 1 1 1 1 1 -1 -1 -1\n"), 1.0, 1.0)
	f.Fuzz(func(t *testing.T, data []byte, startFactor, slack float64) {
		jobs, _, err := ReadAll(bytes.NewReader(data))
		if err != nil {
			return // a malformed trace is refused with an error; that is fine
		}
		for i, j := range jobs {
			for field, v := range []int64{j.Number, j.Submit, j.Wait, j.Run, j.AllocProcs, j.ReqProcs, j.ReqTime} {
				if v < Unknown {
					t.Fatalf("job %d field %d = %d, below -1", i, field, v)
				}
			}
		}
		cfg := ReservationConfig{StartFactor: startFactor, Slack: slack, TimeScale: 1000, UseRequested: true, MaxAmount: 128, Seed: 1}
		rs, tally, err := FromTally(jobs, cfg)
		if err != nil {
			if cfg.check() == nil {
				t.Fatalf("FromTally refused a valid configuration: %v", err)
			}
			return
		}
		if tally.Read != len(jobs) || tally.Kept != len(rs) || tally.Kept+tally.Dropped() != tally.Read {
			t.Fatalf("tally %+v for %d jobs and %d reservations: kept + dropped != read", tally, len(jobs), len(rs))
		}
		for i, r := range rs {
			if r.Duration < 1 || r.Amount < 1 || r.Amount > cfg.MaxAmount || r.Arrival < 0 || r.Start < r.Arrival ||
				r.Deadline-r.Start < r.Duration || r.Deadline > maxUnits+1<<20 {
				t.Fatalf("reservation %d = %+v (start factor %g, slack %g): not well formed", i, r, startFactor, slack)
			}
		}
	})
}
