package sim

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
)

// unitsStream is a seeded, overloaded stream of small reservations on 16
// units.
func unitsStream(seed uint64, n int) []workload.Reservation {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([]workload.Reservation, n)
	t := int64(0)
	for i := range out {
		t += rng.Int64N(30)
		d := 10 + rng.Int64N(200)
		start := t + rng.Int64N(300)
		out[i] = workload.Reservation{Job: int64(i), Arrival: t, Start: start, Deadline: start + d + rng.Int64N(2*d), Duration: d, Amount: 1 + rng.Int64N(8)}
	}
	return out
}

// TestRunUnits checks the experiment's structure on a synthetic stream:
// with only running bookings pinned, re-mapping admits exactly what
// count-only admits (a count-feasible request can always be mapped when
// everything that has not started may move); REFUSE never moves anything
// and refuses some count-feasible requests on this load; and with a
// materialization horizon re-mapping moves no more than without one.
func TestRunUnits(t *testing.T) {
	rs := unitsStream(1, 1500)
	modes := DefaultUnitsModes()
	res := map[string]UnitsResult{}
	for _, m := range modes {
		r, err := RunUnits(rs, 16, m)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if r.Requests != len(rs) || r.Exhausted != 0 || r.P99Ns < r.P50Ns || r.P99Ns <= 0 {
			t.Fatalf("%s: %+v", m.Name, r)
		}
		res[m.Name] = r
	}
	count, remap := res["count-only"], res["remap, pinned when running"]
	if remap.Accepted != count.Accepted || remap.Booked != count.Booked || remap.Unmappable != 0 {
		t.Errorf("remap pinned when running %+v, count-only %+v: want the same admissions", remap, count)
	}
	if remap.Remaps == 0 {
		t.Errorf("remap moved nothing on an overloaded stream: the test load is too light")
	}
	for _, name := range []string{"refuse, lowest-index", "refuse, best-fit"} {
		if r := res[name]; r.Remaps != 0 || r.Unmappable == 0 {
			t.Errorf("%s: %+v: want no moves and some unmappable refusals", name, r)
		}
	}
	if h := res["remap, pinned 1 h ahead"]; h.Remaps > remap.Remaps*2 || h.Accepted > count.Accepted {
		t.Errorf("remap with a horizon %+v vs %+v", h, remap)
	}
	md := UnitsMarkdown([]UnitsRow{{Workload: &UnitsWorkload{Trace: "synthetic", Capacity: 16, Reservations: rs}, Mode: modes[0], Result: count}}, UnitsEnv{Command: "test"})
	if !strings.Contains(md, "| count-only |") || !strings.Contains(UnitsCSV(nil), "acceptance_pct") {
		t.Errorf("report:\n%s", md)
	}
	if _, err := RunUnits(rs, 0, modes[0]); err == nil {
		t.Error("capacity 0 accepted")
	}
}
