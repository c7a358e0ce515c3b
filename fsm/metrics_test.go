package fsm

import (
	"math"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// TestUsageAhead checks the booked share over a window from the log time
// against hand-computed areas, including a booking that straddles the
// window's end and one that starts after it.
func TestUsageAhead(t *testing.T) {
	const hour = int64(3_600_000)
	t0 := int64(1_900_000_000_000)
	h := newHarness(t, Config{})
	h.must(t0, fsmv1.Result_STATUS_OK, createRes("a", 10))
	h.must(t0, fsmv1.Result_STATUS_OK, createRes("b", 4))
	h.must(t0, fsmv1.Result_STATUS_OK, createRes("idle", 1))
	// a: 5 units for 1 h from t0+1h; 10 units for 2 h from t0+3h (half of
	// it past a 4-hour window).
	h.must(t0, fsmv1.Result_STATUS_OK, reserve("r1", "a", 5, hour, withStart(t0+hour)))
	h.must(t0, fsmv1.Result_STATUS_OK, hold("r2", "a", 10, 2*hour, withStart(t0+3*hour)))
	// b: all 4 units for 1 h, beyond a 4-hour window.
	h.must(t0, fsmv1.Result_STATUS_OK, reserve("r3", "b", 4, hour, withStart(t0+10*hour)))
	for _, c := range []struct {
		window int64
		want   map[string]float64
	}{
		{4 * hour, map[string]float64{"a": (5.0 + 10) / 40, "b": 0, "idle": 0}},
		{24 * hour, map[string]float64{"a": (5.0 + 20) / 240, "b": 4.0 / 96, "idle": 0}},
		{hour, map[string]float64{"a": 0, "b": 0, "idle": 0}},
	} {
		got, err := h.f.UsageAhead(c.window)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("window %d: %d resources, want %d", c.window, len(got), len(c.want))
		}
		for i, u := range got {
			if i > 0 && got[i-1].Name >= u.Name {
				t.Errorf("not sorted by name: %q before %q", got[i-1].Name, u.Name)
			}
			if u.FromMillis != t0 || u.ToMillis != t0+c.window {
				t.Errorf("%s: window [%d, %d), want [%d, %d)", u.Name, u.FromMillis, u.ToMillis, t0, t0+c.window)
			}
			if math.Abs(u.Utilization-c.want[u.Name]) > 1e-12 {
				t.Errorf("window %d h: %s utilization %g, want %g", c.window/hour, u.Name, u.Utilization, c.want[u.Name])
			}
		}
	}
	for _, w := range []int64{0, -1} {
		if _, err := h.f.UsageAhead(w); err == nil {
			t.Errorf("UsageAhead(%d) succeeded", w)
		}
	}
}
