package planner

import (
	"errors"
	"fmt"
	"testing"
)

// The unit admission benchmark: one resource of 1,024 named units holding
// n live bookings placed in arrival order at their earliest mapping (the
// request mix of bench_test.go: amounts in [1, 32], durations in
// [1, 120], book-ahead times spread so that the mean load is about half
// the capacity). Each operation admits one request and releases it again.
// count-only is the Planner on the indexed timeline holding the same
// rectangles: the admission cost of today's resources beside which the
// unit layer is measured.
const (
	unitBenchUnits = 1024
	// unitBenchSpread: book-ahead times are uniform in [0, spread*n);
	// 8x the capacity of bench_test.go, so 1/8 the spread per booking.
	unitBenchSpread = 2
)

var unitBenchLive = []struct {
	name string
	n    int
}{{"10k", 10_000}, {"100k", 100_000}}

type unitFixture struct {
	u, lowest    *UnitSchedule
	p            *Planner
	bytesPerLive float64
}

var unitFixtures = map[int]*unitFixture{}

func unitFixtureFor(tb testing.TB, n int) *unitFixture {
	if fx, ok := unitFixtures[n]; ok {
		return fx
	}
	names := make([]string, unitBenchUnits)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	before := heapAlloc()
	u, err := NewUnitSchedule(names, 0, UnitConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	reqs := benchRequests(benchSeed, n, int64(n)*unitBenchSpread)
	for i, r := range reqs {
		req := UnitRequest{Amount: r.amount, Duration: r.duration, NotBefore: r.notBefore, Deadline: MaxTime, Movable: true}
		if _, err := u.Reserve(fmt.Sprintf("b%d", i), req, UnitRefuse); err != nil {
			tb.Fatalf("fixture booking %d: %v", i, err)
		}
	}
	after := heapAlloc()
	p := New(NewIndexed)
	if err := p.AddResource(benchResource, unitBenchUnits); err != nil {
		tb.Fatal(err)
	}
	for i := range reqs {
		b, _ := u.Get(fmt.Sprintf("b%d", i))
		if err := p.Book(Booking{ID: b.ID, Parts: []Part{{Resource: benchResource, Amount: int64(len(b.Units))}}, Start: b.Start, End: b.End}); err != nil {
			tb.Fatalf("count-only copy of %s: %v", b.ID, err)
		}
	}
	// The same bookings under the lowest-index rule (the fit rule only
	// matters for new bookings; the fixture keeps the best-fit mapping).
	snap := u.Snapshot()
	lowest, err := RestoreUnitSchedule(snap, UnitConfig{Fit: FitLowest})
	if err != nil {
		tb.Fatal(err)
	}
	fx := &unitFixture{u: u, lowest: lowest, p: p, bytesPerLive: perLive(before, after, n)}
	unitFixtures[n] = fx
	return fx
}

// BenchmarkUnitAdmission measures one admission (and its release) on the
// unit resource under REFUSE and REMAP beside count-only admission of the
// same request on the same load.
func BenchmarkUnitAdmission(b *testing.B) {
	for _, live := range unitBenchLive {
		for _, mode := range []string{"count-only", "refuse", "refuse-lowest", "remap"} {
			b.Run(fmt.Sprintf("live=%s/mode=%s", live.name, mode), func(b *testing.B) {
				fx := unitFixtureFor(b, live.n)
				reqs := benchRequests(benchReqSeed, 4096, int64(live.n)*unitBenchSpread)
				parts := make([]Part, 1)
				b.ReportAllocs()
				i := 0
				cpu := startCPU()
				for b.Loop() {
					r := reqs[i%len(reqs)]
					i++
					if mode == "count-only" {
						if _, err := fx.p.Reserve("new", r.request(parts)); err != nil {
							b.Fatal(err)
						}
						if _, err := fx.p.Release("new"); err != nil {
							b.Fatal(err)
						}
						continue
					}
					policy := UnitRefuse
					if mode == "remap" {
						policy = UnitRemap
					}
					u := fx.u
					if mode == "refuse-lowest" {
						u = fx.lowest
					}
					req := UnitRequest{Amount: r.amount, Duration: r.duration, NotBefore: r.notBefore, Deadline: MaxTime, Movable: true}
					if _, err := u.Reserve("new", req, policy); err != nil && !errors.Is(err, ErrUnmappable) {
						b.Fatal(err)
					}
					if _, err := u.Release("new"); err != nil {
						b.Fatal(err)
					}
				}
				cpu.stop(b)
				if mode != "count-only" {
					b.ReportMetric(fx.bytesPerLive, "B/live")
				}
			})
		}
	}
}

// TestUnitBenchDecisions checks on a small fixture that the unit
// admissions of the benchmark map (REFUSE and REMAP agree with count-only
// whenever no move is needed) and leave the schedule consistent.
func TestUnitBenchDecisions(t *testing.T) {
	fx := unitFixtureFor(t, 2000)
	if err := checkUnits(fx.u); err != nil {
		t.Fatal(err)
	}
	reqs := benchRequests(benchReqSeed, 200, 2000*unitBenchSpread)
	parts := make([]Part, 1)
	for i, r := range reqs {
		dc, err := fx.p.Find(r.request(parts))
		if err != nil {
			t.Fatal(err)
		}
		req := UnitRequest{Amount: r.amount, Duration: r.duration, NotBefore: r.notBefore, Deadline: MaxTime, Movable: true}
		dr, err := fx.u.Find(req, UnitRemap)
		if err != nil {
			t.Fatal(err)
		}
		// Nothing is pinned but what runs at 0, so REMAP admits exactly
		// what count-only admits.
		if !dr.Fits || dr.Start != dc.Start {
			t.Fatalf("request %d %+v: remap %+v, count-only %+v", i, r, dr, dc)
		}
	}
}
