package fsm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// BenchmarkUnitsHold measures one admission through the state machine
// (a HOLD entry and the ABORT that gives it back, both applied) on a
// resource of 1,024 named units beside the same on a resource of
// capacity 1,024 without units, each holding n live reservations of the
// planner benchmarks' mix (amounts 1–32, durations 1–120 ms, book-ahead
// uniform over 2n ms, placed at their earliest fit). It is the planner's
// BenchmarkUnitAdmission plus everything Apply adds: decoding, rows,
// timers, events and, for units, the co-allocation loop between the
// count planner and the unit schedule. The fixture is built once per n
// (through Apply, so the 100k one takes a while).
func BenchmarkUnitsHold(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		if testing.Short() && n > 10_000 {
			continue
		}
		f, idx := unitsBenchFixture(b, n)
		for _, res := range []string{"count", "nodes"} {
			b.Run(fmt.Sprintf("live=%d/resource=%s", n, res), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(7, uint64(n)))
				b.ReportAllocs()
				for b.Loop() {
					amount, dur, nb := 1+rng.Int64N(32), 1+rng.Int64N(120), 1+rng.Int64N(2*int64(n))
					*idx++
					id := fmt.Sprintf("bench-%d", *idx)
					res := mustDecode(b, f.ApplyCommand(*idx, benchCmd(b, hold(id, res, amount, dur, withWindow(nb, 0)))))
					if res.GetStatus() != OK {
						b.Fatalf("hold: %v", res)
					}
					*idx++
					if res := mustDecode(b, f.ApplyCommand(*idx, benchCmd(b, abort(id)))); res.GetStatus() != OK {
						b.Fatalf("abort: %v", res)
					}
				}
			})
		}
	}
}

var unitsBenchFixtures = map[int]struct {
	f   *FSM
	idx *uint64
}{}

// unitsBenchFixture returns the state machine with n live reservations on
// each resource; terminal rows are retained (Retention is long), which
// only matters for memory.
func unitsBenchFixture(b *testing.B, n int) (*FSM, *uint64) {
	if fx, ok := unitsBenchFixtures[n]; ok {
		return fx.f, fx.idx
	}
	f, err := New(Config{HistoryLimit: 1_000})
	if err != nil {
		b.Fatal(err)
	}
	idx := uint64(0)
	apply := func(c *fsmv1.Command) *fsmv1.Result {
		idx++
		return mustDecode(b, f.ApplyCommand(idx, benchCmd(b, c)))
	}
	apply(createRes("count", 1024))
	apply(createUnits("nodes", 0, nodeNames(1024)...))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		amount, dur, nb := 1+rng.Int64N(32), 1+rng.Int64N(120), 1+rng.Int64N(2*int64(n))
		for _, res := range []string{"count", "nodes"} {
			if r := apply(reserve(fmt.Sprintf("%s-%d", res, i), res, amount, dur, withWindow(nb, 0))); r.GetStatus() != OK {
				b.Fatalf("fixture %d on %s: %v", i, res, r)
			}
		}
	}
	unitsBenchFixtures[n] = struct {
		f   *FSM
		idx *uint64
	}{f, &idx}
	return f, &idx
}

// benchCmd encodes cmd stamped at log time 1 (nothing ever expires).
func benchCmd(b *testing.B, cmd *fsmv1.Command) []byte {
	enc, err := Encode(cmd)
	if err != nil {
		b.Fatal(err)
	}
	if enc, err = Stamp(enc, 1); err != nil {
		b.Fatal(err)
	}
	return enc
}

func mustDecode(b *testing.B, out []byte) *fsmv1.Result {
	r, err := DecodeResult(out)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
