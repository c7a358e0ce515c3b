package fsm

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// kthTrace is the KTH SP2 job log (100 processors), read in place.
const kthTrace = "../../shared/workloads/KTH-SP2-1996-2.1-cln.swf.gz"

// BenchmarkTraceKTH replays the first 10,000 jobs of the KTH SP2 log as
// two-phase advance reservations (Heine et al.: start factor 1, window slack
// 1): each job is a hold at its submit time, committed one millisecond
// later, through the whole Apply path. It reports the cost per log entry
// and the share of jobs admitted.
func BenchmarkTraceKTH(b *testing.B) {
	jobs, _, err := workload.ReadFile(kthTrace)
	if errors.Is(err, fs.ErrNotExist) {
		b.Skipf("trace not available: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	res, _, err := workload.FromSWF(jobs, workload.ReservationConfig{
		StartFactor: 1, Slack: 1, TimeScale: 1000, UseRequested: true, MaxAmount: 100, Seed: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	res = res[:min(len(res), 10_000)]
	type entry struct{ hold, commit []byte }
	entries := make([]entry, len(res))
	for i, r := range res {
		id := fmt.Sprintf("job-%d", r.Job)
		h := hold(id, "sp2", r.Amount, r.Duration, withWindow(r.Start, r.Deadline), withTTL(30_000))
		entries[i] = entry{encodeAt(b, h, r.Arrival), encodeAt(b, commit(id), r.Arrival+1)}
	}
	setup := encodeAt(b, createRes("sp2", 100), 0)

	var admitted int
	b.ReportAllocs()
	for b.Loop() {
		f, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		idx := uint64(1)
		f.ApplyCommand(idx, setup)
		admitted = 0
		for _, e := range entries {
			idx++
			r := new(fsmv1.Result)
			if err := proto.Unmarshal(f.ApplyCommand(idx, e.hold), r); err != nil {
				b.Fatal(err)
			}
			idx++
			if r.GetStatus() == OK {
				admitted++
				f.ApplyCommand(idx, e.commit)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(len(entries)+admitted)), "ns/entry")
	b.ReportMetric(float64(admitted)/float64(len(entries)), "admitted")
}
