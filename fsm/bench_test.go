package fsm

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// loaded returns a state machine with live committed reservations spread
// over two resources, and the next free log index. Every reservation
// carries an idempotency key, as the API's clients send them, so the
// idempotency records count in the memory and snapshot figures.
func loaded(b testing.TB, live int) (*FSM, uint64) {
	return loadedWith(b, live, false)
}

// loadedWith is loaded; twoPhase books each reservation as a keyed hold
// and a keyed commit (the first result then names a superseded row).
func loadedWith(b testing.TB, live int, twoPhase bool) (*FSM, uint64) {
	b.Helper()
	h := newHarness(b, Config{})
	h.must(0, OK, createRes("cpu", 128))
	h.must(0, OK, createRes("gpu", 16))
	for i := range live {
		res, amount := "cpu", int64(1+i%64)
		if i%4 == 0 {
			res, amount = "gpu", int64(1+i%8)
		}
		id, key := fmt.Sprintf("job-%07d", i), fmt.Sprintf("key-%07d", i)
		if !twoPhase {
			h.must(0, OK, reserve(id, res, amount, int64(10+i%50), withWindow(int64(i*7), 0), withKey(key)))
			continue
		}
		h.must(0, OK, hold(id, res, amount, int64(10+i%50), withWindow(int64(i*7), 0), withKey(key), withTTL(DefaultMaxHoldTTL)))
		h.must(0, OK, commit(id, withKey(key+"c")))
	}
	return h.f, h.index + 1
}

func encodeAt(b *testing.B, cmd *fsmv1.Command, now int64) []byte {
	b.Helper()
	e, err := Encode(cmd)
	if err == nil {
		e, err = Stamp(e, now)
	}
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkApplyHoldAbort measures one admission (hold, earliest fit on a
// busy resource) plus the abort that undoes it, through the whole Apply
// path: decode, timers, planner, table, events, result encoding.
func BenchmarkApplyHoldAbort(b *testing.B) {
	for _, live := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			f, idx := loaded(b, live)
			holdAbortLoop(b, f, idx)
		})
	}
}

// holdAbortLoop applies a hold of 32 units on cpu (earliest fit) and its
// abort per iteration, from log index idx on. The hold takes an ID from
// its log index; the abort is encoded per iteration (that cost is
// included).
func holdAbortLoop(b *testing.B, f *FSM, idx uint64) {
	holdCmd := encodeAt(b, hold("", "cpu", 32, 40, withTTL(10_000)), 0)
	b.ReportAllocs()
	for b.Loop() {
		res, err := DecodeResult(f.ApplyCommand(idx, holdCmd))
		if err != nil || res.GetStatus() != OK {
			b.Fatalf("hold: %v %v", res, err)
		}
		f.ApplyCommand(idx+1, encodeAt(b, abort(AutoID(idx)), 0))
		idx += 2
	}
	b.ReportMetric(2, "entries/op")
}

// BenchmarkApplyCancelAmongEnded measures what a follower does most under
// the service's reserve mix: cancel one of 10,000 live reservations with
// automatic IDs, chosen at random, and admit another, on a table that also
// holds the ended rows of earlier ones (kept for ended_retention: a few
// hundred thousand after a minute at the service's rate). The cancel
// replaces its row in the byID list, which is searched for it.
func BenchmarkApplyCancelAmongEnded(b *testing.B) {
	for _, ended := range []int{0, 300_000} {
		b.Run(fmt.Sprintf("ended=%d", ended), func(b *testing.B) {
			h := newHarness(b, Config{})
			h.must(0, OK, createRes("cpu", 128))
			n := 0
			admit := func() string {
				h.must(0, OK, reserve("", "cpu", 1, 10, withWindow(int64(n*7), 0)))
				n++
				return AutoID(h.index)
			}
			for range ended {
				h.must(0, OK, cancel(admit()))
			}
			const live = 10_000
			ids := make([]string, live)
			for i := range ids {
				ids[i] = admit()
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				k := rng.IntN(live)
				h.must(0, OK, cancel(ids[k]))
				ids[k] = admit()
			}
			b.ReportMetric(2, "entries/op")
		})
	}
}

// BenchmarkApplyHoldCommitCancel measures the service's usual two-phase
// path on a loaded table: a keyed hold, its keyed commit and a keyed
// cancel that gives the capacity back, through the whole Apply path
// (the commands are encoded per iteration; that cost is included).
func BenchmarkApplyHoldCommitCancel(b *testing.B) {
	for _, live := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			f, idx := loaded(b, live)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				id, key := fmt.Sprintf("bench-%d", n), fmt.Sprintf("bench-key-%d", n)
				n++
				for _, cmd := range []*fsmv1.Command{
					hold(id, "cpu", 32, 40, withKey(key+"h"), withTTL(10_000)),
					commit(id, withKey(key+"c")),
					cancel(id, withKey(key+"x")),
				} {
					res, err := DecodeResult(f.ApplyCommand(idx, encodeAt(b, cmd, 0)))
					if err != nil || res.GetStatus() != OK {
						b.Fatalf("%s: %v %v", cmd.GetType(), res, err)
					}
					idx++
				}
			}
			b.ReportMetric(3, "entries/op")
		})
	}
}

// BenchmarkSnapshot measures capture plus Persist (encoding) and reports
// the snapshot size per live reservation, and the capture alone
// (capture-ns/op): the part that holds up Apply.
func BenchmarkSnapshot(b *testing.B) {
	for _, live := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			f, _ := loaded(b, live)
			var size int
			var capture time.Duration
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				s, err := f.Snapshot()
				capture += time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				sink := &memSink{}
				if err := s.Persist(sink); err != nil {
					b.Fatal(err)
				}
				size = sink.Len()
			}
			b.ReportMetric(float64(size)/float64(live), "bytes/reservation")
			b.ReportMetric(float64(capture.Nanoseconds())/float64(b.N), "capture-ns/op")
		})
	}
}

// BenchmarkRestore measures decode, verification and the planner rebuild.
func BenchmarkRestore(b *testing.B) {
	for _, live := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			// The source state is garbage once its snapshot is taken, as
			// a restarting node holds no other state while it restores.
			f, _ := loaded(b, live)
			snap := snapshotBytes(b, f)
			g, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
					b.Fatal(err)
				}
			}
			cpu = cpuTime() - cpu
			b.StopTimer()
			// The heap the restored state holds: the difference its
			// release makes. Measured only now, because a collection
			// before the loop would lower the heap goal and make the
			// restores collect more often than they otherwise do.
			var full, empty runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&full)
			runtime.KeepAlive(g)
			g = nil
			runtime.GC()
			runtime.ReadMemStats(&empty)
			b.ReportMetric(float64(int64(full.HeapAlloc)-int64(empty.HeapAlloc))/float64(live), "restored-heap-bytes/reservation")
			runtime.KeepAlive(snap)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*live), "ns/reservation")
			// On a shared machine the process's CPU time (all threads, GC
			// included) is steadier than the wall time.
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkEncodeStamp measures what the edge and the leader do to the
// bytes of a write before raft.Apply: encode, stamp.
func BenchmarkEncodeStamp(b *testing.B) {
	cmd := hold("job-1", "cpu", 4, 3_600_000, withWindow(1_000, 0), withKey("k-123"))
	cmd.GetRequest().Labels = map[string]string{"team": "physics"}
	b.ReportAllocs()
	for b.Loop() {
		e, err := Encode(proto.CloneOf(cmd))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Stamp(e, 1_700_000_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

// heapProfile names a file for BenchmarkLoad to write an in-use heap
// profile of the loaded state machine to (the last case run wins), for the
// breakdown of what holds the memory:
//
//	go test -tags hashicorpmetrics -run '^$' -bench 'Load/hold.commit/live=100000$' \
//	    -benchtime=1x -memprofilerate=4096 -fsm.heapprofile=heap.out ./fsm/
//	go tool pprof -sample_index=inuse_space -top heap.out
var heapProfile = flag.String("fsm.heapprofile", "", "BenchmarkLoad writes the in-use heap of the loaded state machine here")

// BenchmarkLoad applies live one-phase reservations into an empty state
// machine per iteration and reports the heap each live reservation keeps
// (table row, timers, planner booking, idempotency record, history share).
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct {
		mode     string
		live     int
		twoPhase bool
	}{
		{"reserve", 10_000, false},
		{"reserve", 100_000, false},
		{"hold+commit", 10_000, true},
		{"hold+commit", 100_000, true},
		{"reserve", 1_000_000, false},
		{"hold+commit", 1_000_000, true},
	} {
		live := tc.live
		b.Run(fmt.Sprintf("%s/live=%d", tc.mode, live), func(b *testing.B) {
			var perRes float64
			b.ReportAllocs()
			for b.Loop() {
				grown, f := heapGrowth(func() *FSM {
					f, _ := loadedWith(b, live, tc.twoPhase)
					return f
				})
				perRes = float64(grown) / float64(live)
				if *heapProfile != "" {
					writeHeapProfile(b, *heapProfile)
				}
				runtime.KeepAlive(f)
			}
			b.ReportMetric(perRes, "heap-bytes/reservation")
			// The process's peak resident set: run one case per process
			// (with GOGC or GOMEMLIMIT set) to read it for that case.
			b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MiB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*live), "ns/reservation")
		})
	}
}

// heapGrowth runs build between two readings of the heap, each after a
// collection, and returns how much the heap grew and what build returned
// (alive through the second reading; the caller keeps it alive as long as
// it needs).
func heapGrowth[T any](build func() T) (int64, T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), v
}

func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

// cpuTime returns the user plus system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS returns the process's peak resident set in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}
