package planner

import (
	"cmp"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The admission benchmarks run one resource of benchCapacity units holding
// n live reservations. The reservations arrive in random order with random
// sizes, durations and book-ahead times (seeded, so every run and every
// implementation sees the same load) and are placed at their earliest fit,
// which fragments the timeline into about 2n free blocks. Results and the
// command that produced them are in benchmarks/planner/README.md.
const (
	benchCapacity  = 128
	benchMaxAmount = 32  // amounts are uniform in [1, 32]
	benchMaxDur    = 120 // durations are uniform in [1, 120]
	// benchSpread: book-ahead times are uniform in [0, benchSpread*n),
	// which puts the mean load near half the capacity.
	benchSpread   = 16
	benchSeed     = 0x1ed6e7
	benchReqSeed  = 0xad7155
	benchResource = "cpu"
	// benchCheck is how many requests of the timed stream are compared
	// between the implementations before timing.
	benchCheck = 256
)

var benchLive = []struct {
	name string
	n    int
}{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}

var benchImpls = []struct {
	name string
	f    TimelineFactory
}{{"list", NewList}, {"indexed", NewIndexed}}

// benchReq is one admission request on the benchmark resource.
type benchReq struct {
	amount, duration, notBefore int64
}

func benchRequests(seed uint64, count int, spread int64) []benchReq {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]benchReq, count)
	for i := range out {
		out[i] = benchReq{
			amount:    1 + rng.Int64N(benchMaxAmount),
			duration:  1 + rng.Int64N(benchMaxDur),
			notBefore: rng.Int64N(spread),
		}
	}
	return out
}

func (r benchReq) request(parts []Part) Request {
	parts[0] = Part{Resource: benchResource, Amount: r.amount}
	return Request{Parts: parts, Duration: r.duration, NotBefore: r.notBefore, Deadline: MaxTime}
}

// placed is one live reservation of a fixture.
type placed struct {
	id                 string
	amount, start, end int64
}

// admissionFixture is a planner with n live reservations, plus what the
// benchmarks need to drive it. The timed loops leave it in the state they
// found it, so a fixture is built once per process and reused by -count.
type admissionFixture struct {
	p      *Planner
	placed []placed
	// bytesPerLive is the heap the planner holds per live reservation
	// (timeline, booking table, expiry set, ID strings); tlBytesPerLive
	// is the timeline's share alone.
	bytesPerLive, tlBytesPerLive float64
	// tl is a bare timeline holding the same reservations.
	tl Timeline
}

var benchFixtures = map[string]*admissionFixture{}

// cpuNanos returns the CPU time (user plus system, all threads) the process
// has used so far. The benchmarks report it per operation next to ns/op:
// on a shared machine wall time per operation includes the time other
// processes hold the CPU, process CPU time mostly does not.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// cpuMeter reports process CPU time per benchmark iteration. Call start
// before the first b.Loop and stop after the loop.
type cpuMeter struct{ t0 int64 }

func startCPU() cpuMeter { return cpuMeter{t0: cpuNanos()} }

func (m cpuMeter) stop(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuNanos()-m.t0)/float64(b.N), "cpu-ns/op")
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func perLive(before, after uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n)
}

// buildArrival places the n reservations in arrival order, each at its
// earliest fit (Find then Book), as a live system would.
func buildArrival(tb testing.TB, f TimelineFactory, reqs []benchReq) *admissionFixture {
	fx := &admissionFixture{placed: make([]placed, len(reqs))}
	parts := make([]Part, 1)
	before := heapAlloc()
	p := New(f)
	if err := p.AddResource(benchResource, benchCapacity); err != nil {
		tb.Fatal(err)
	}
	for i, r := range reqs {
		d, err := p.Find(r.request(parts))
		if err != nil || !d.Fits {
			tb.Fatalf("placing reservation %d: %+v, %v", i, d, err)
		}
		id := "r" + strconv.Itoa(i)
		end := d.Start + r.duration
		if err := p.Book(Booking{ID: id, Parts: parts, Start: d.Start, End: end}); err != nil {
			tb.Fatalf("booking reservation %d: %v", i, err)
		}
		fx.placed[i] = placed{id: id, amount: r.amount, start: d.Start, end: end}
	}
	fx.bytesPerLive = perLive(before, heapAlloc(), len(reqs))
	fx.p = p
	return fx
}

// buildSorted books already placed reservations in order of start time.
// The resulting state is the same as placing them in arrival order (a
// timeline is the sum of its bookings), but the list timeline then only
// splits blocks near its tail; in arrival order each booking would move
// half of a million-block slice and the setup would take minutes.
func buildSorted(tb testing.TB, f TimelineFactory, src []placed) *admissionFixture {
	order := make([]int, len(src))
	for i := range order {
		order[i] = i
	}
	sortByStart(order, src)
	fx := &admissionFixture{placed: make([]placed, len(src))}
	parts := make([]Part, 1)
	before := heapAlloc()
	p := New(f)
	if err := p.AddResource(benchResource, benchCapacity); err != nil {
		tb.Fatal(err)
	}
	for _, i := range order {
		pl := src[i]
		pl.id = strings.Clone(pl.id) // the planner's own copy of the ID
		parts[0] = Part{Resource: benchResource, Amount: pl.amount}
		if err := p.Book(Booking{ID: pl.id, Parts: parts, Start: pl.start, End: pl.end}); err != nil {
			tb.Fatalf("booking %s: %v", pl.id, err)
		}
		fx.placed[i] = pl
	}
	fx.bytesPerLive = perLive(before, heapAlloc(), len(src))
	fx.p = p
	return fx
}

// sortByStart orders reservation indexes by start time, ties by index.
func sortByStart(order []int, src []placed) {
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(src[x].start, src[y].start); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
}

// bareTimeline builds a bare timeline holding the placed reservations,
// booked in the given order, and measures its heap per reservation.
func bareTimeline(tb testing.TB, f TimelineFactory, src []placed, order []int) (Timeline, float64) {
	before := heapAlloc()
	tl := f(benchCapacity, 0)
	for _, i := range order {
		if err := tl.Book(src[i].start, src[i].end, src[i].amount); err != nil {
			tb.Fatal(err)
		}
	}
	return tl, perLive(before, heapAlloc(), len(src))
}

// fixtures returns the list and indexed fixtures for n live reservations,
// building them on first use and checking that both planners hold the same
// free blocks and answer the first benchCheck timed requests identically.
func fixtures(tb testing.TB, n int) (list, indexed *admissionFixture) {
	key := strconv.Itoa(n)
	if fx, ok := benchFixtures["indexed/"+key]; ok {
		return benchFixtures["list/"+key], fx
	}
	reqs := benchRequests(benchSeed, n, int64(n)*benchSpread)
	indexed = buildArrival(tb, NewIndexed, reqs)
	list = buildSorted(tb, NewList, indexed.placed)

	arrival := make([]int, n)
	for i := range arrival {
		arrival[i] = i
	}
	sorted := slices.Clone(arrival)
	sortByStart(sorted, indexed.placed)
	indexed.tl, indexed.tlBytesPerLive = bareTimeline(tb, NewIndexed, indexed.placed, arrival)
	list.tl, list.tlBytesPerLive = bareTimeline(tb, NewList, indexed.placed, sorted)

	al, err := list.p.Availability(benchResource, 0, MaxTime)
	if err != nil {
		tb.Fatal(err)
	}
	ai, err := indexed.p.Availability(benchResource, 0, MaxTime)
	if err != nil {
		tb.Fatal(err)
	}
	if !slices.Equal(al, ai) || !slices.Equal(ai, indexed.tl.Blocks(0, MaxTime)) || !slices.Equal(ai, list.tl.Blocks(0, MaxTime)) {
		tb.Fatalf("live=%d: list and indexed hold different free blocks (%d vs %d blocks)", n, len(al), len(ai))
	}
	parts := make([]Part, 1)
	for i, r := range benchRequests(benchReqSeed, benchCheck, int64(n)*benchSpread) {
		dl, errl := list.p.Find(r.request(parts))
		di, erri := indexed.p.Find(r.request(parts))
		if dl != di || errl != nil || erri != nil {
			tb.Fatalf("live=%d request %d %+v: list %+v (%v), indexed %+v (%v)", n, i, r, dl, errl, di, erri)
		}
	}
	tb.Logf("live=%d: %d free blocks, identical on list and indexed; %d timed requests decided identically",
		n, len(ai), benchCheck)
	benchFixtures["list/"+key], benchFixtures["indexed/"+key] = list, indexed
	return list, indexed
}

func pick(list, indexed *admissionFixture, impl string) *admissionFixture {
	if impl == "list" {
		return list
	}
	return indexed
}

// BenchmarkAdmission measures one admission on a resource with n live
// reservations: Find the earliest fit of a new request (random size,
// duration and book-ahead time), Book it, then Release it so that n stays
// constant.
func BenchmarkAdmission(b *testing.B) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			for _, live := range benchLive {
				b.Run("live="+live.name, func(b *testing.B) {
					l, ix := fixtures(b, live.n)
					benchAdmission(b, pick(l, ix, impl.name), live.n)
				})
			}
		})
	}
}

func benchAdmission(b *testing.B, fx *admissionFixture, n int) {
	reqs := benchRequests(benchReqSeed, 4096, int64(n)*benchSpread)
	parts := make([]Part, 1)
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		admitOnce(b, fx.p, reqs[i%len(reqs)], parts)
		i++
	}
	cpu.stop(b)
	b.ReportMetric(fx.bytesPerLive, "B/live")
	b.ReportMetric(fx.tlBytesPerLive, "tlB/live")
}

// BenchmarkTimelineAdmission is BenchmarkAdmission on a bare timeline
// (Earliest, Book, Release) without the Planner's validation and booking
// table, to show what the timeline itself costs.
func BenchmarkTimelineAdmission(b *testing.B) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			for _, live := range benchLive {
				b.Run("live="+live.name, func(b *testing.B) {
					l, ix := fixtures(b, live.n)
					tl := pick(l, ix, impl.name).tl
					reqs := benchRequests(benchReqSeed, 4096, int64(live.n)*benchSpread)
					b.ReportAllocs()
					i := 0
					cpu := startCPU()
					for b.Loop() {
						r := reqs[i%len(reqs)]
						i++
						s, ok := tl.Earliest(r.amount, r.duration, r.notBefore, MaxTime-r.duration)
						if !ok {
							b.Fatalf("no fit for %+v", r)
						}
						if err := tl.Book(s, s+r.duration, r.amount); err != nil {
							b.Fatal(err)
						}
						if err := tl.Release(s, s+r.duration, r.amount); err != nil {
							b.Fatal(err)
						}
					}
					cpu.stop(b)
					b.ReportMetric(pick(l, ix, impl.name).tlBytesPerLive, "tlB/live")
				})
			}
		})
	}
}

// BenchmarkTimelineLookup measures the lookup of a random instant in the
// bare indexed timeline of the admission fixture (the free capacity at
// that instant): the first step of every admission, and at a million
// blocks a chain of cache misses.
func BenchmarkTimelineLookup(b *testing.B) {
	for _, live := range benchLive {
		b.Run("live="+live.name, func(b *testing.B) {
			_, ix := fixtures(b, live.n)
			rng := rand.New(rand.NewPCG(benchReqSeed, 1))
			xs := make([]int64, 1<<16)
			for i := range xs {
				xs[i] = rng.Int64N(int64(live.n) * benchSpread)
			}
			var sink int64
			i := 0
			cpu := startCPU()
			for b.Loop() {
				x := xs[i&(len(xs)-1)]
				i++
				sink += ix.tl.MinFree(x, x)
			}
			cpu.stop(b)
			if sink == 0 {
				b.Log(sink)
			}
		})
	}
}

// BenchmarkTimelineBuild measures the growth of a bare indexed timeline:
// the fixture's n reservations booked one by one in arrival order into an
// empty timeline, which splits chunks (and rebuilds the segment tree) as
// it grows. It reports the CPU time per booking; it is the cost that
// smaller chunks would raise, beside the admission they speed up.
func BenchmarkTimelineBuild(b *testing.B) {
	for _, live := range benchLive {
		b.Run("live="+live.name, func(b *testing.B) {
			_, ix := fixtures(b, live.n)
			var blocks int
			cpu := startCPU()
			for b.Loop() {
				tl := NewIndexed(benchCapacity, 0)
				for _, pl := range ix.placed {
					if err := tl.Book(pl.start, pl.end, pl.amount); err != nil {
						b.Fatal(err)
					}
				}
				blocks = tl.Len()
			}
			if b.N > 0 {
				b.ReportMetric(float64(cpuNanos()-cpu.t0)/float64(b.N*live.n), "cpu-ns/booking")
			}
			if blocks != ix.tl.Len() {
				b.Fatalf("built %d blocks, the fixture holds %d", blocks, ix.tl.Len())
			}
		})
	}
}

// BenchmarkRelease measures releasing one live reservation (cycling through
// all of them) and booking it back at the same place, so that n stays
// constant.
func BenchmarkRelease(b *testing.B) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			for _, live := range benchLive {
				b.Run("live="+live.name, func(b *testing.B) {
					l, ix := fixtures(b, live.n)
					fx := pick(l, ix, impl.name)
					parts := make([]Part, 1)
					b.ReportAllocs()
					i := 0
					cpu := startCPU()
					for b.Loop() {
						pl := fx.placed[i%len(fx.placed)]
						i++
						if _, err := fx.p.Release(pl.id); err != nil {
							b.Fatal(err)
						}
						parts[0] = Part{Resource: benchResource, Amount: pl.amount}
						if err := fx.p.Book(Booking{ID: pl.id, Parts: parts, Start: pl.start, End: pl.end}); err != nil {
							b.Fatal(err)
						}
					}
					cpu.stop(b)
				})
			}
		})
	}
}

// admitOnce is the timed step of BenchmarkAdmission: Find, Book, Release.
func admitOnce(tb testing.TB, p *Planner, r benchReq, parts []Part) {
	d, err := p.Find(r.request(parts))
	if err != nil || !d.Fits {
		tb.Fatalf("find %+v: %+v, %v", r, d, err)
	}
	if err := p.Book(Booking{ID: "bench", Parts: parts, Start: d.Start, End: d.Start + r.duration}); err != nil {
		tb.Fatal(err)
	}
	if err := p.Remove("bench"); err != nil {
		tb.Fatal(err)
	}
}

// TestBenchFixtures runs the benchmark setup at a small size, so that a
// broken fixture shows up in the normal test run, and checks that the
// timed step leaves a fixture exactly as it found it (the benchmarks rely
// on that to keep n constant and to reuse fixtures).
func TestBenchFixtures(t *testing.T) {
	const n = 2_000
	l, ix := fixtures(t, n)
	defer func() {
		delete(benchFixtures, "list/"+strconv.Itoa(n))
		delete(benchFixtures, "indexed/"+strconv.Itoa(n))
	}()
	for _, fx := range []*admissionFixture{l, ix} {
		if fx.p.Len() != n {
			t.Fatalf("fixture holds %d bookings, want %d", fx.p.Len(), n)
		}
		before, err := fx.p.Availability(benchResource, 0, MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]Part, 1)
		for _, r := range benchRequests(benchReqSeed, 200, n*benchSpread) {
			admitOnce(t, fx.p, r, parts)
		}
		for _, pl := range fx.placed[:200] {
			if _, err := fx.p.Release(pl.id); err != nil {
				t.Fatal(err)
			}
			parts[0] = Part{Resource: benchResource, Amount: pl.amount}
			if err := fx.p.Book(Booking{ID: pl.id, Parts: parts, Start: pl.start, End: pl.end}); err != nil {
				t.Fatal(err)
			}
		}
		after, err := fx.p.Availability(benchResource, 0, MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		if fx.p.Len() != n || !slices.Equal(before, after) {
			t.Fatalf("timed steps changed the fixture: %d bookings, %d -> %d blocks", fx.p.Len(), len(before), len(after))
		}
	}
	if ix.bytesPerLive <= 0 || ix.tlBytesPerLive <= 0 || ix.tlBytesPerLive > ix.bytesPerLive {
		t.Fatalf("implausible memory figures: planner %.1f B/live, timeline %.1f B/live", ix.bytesPerLive, ix.tlBytesPerLive)
	}
}
