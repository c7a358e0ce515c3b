package agent

import (
	"fmt"
	"os"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testwait"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, headroom, floor uint64
		want                  int
	}{
		{0, 256 * mib, 0, 100},
		{100 * mib, 256 * mib, 0, 100},
		{256 * mib, 256 * mib, 0, 100},
		{320 * mib, 256 * mib, 0, 80},
		{460 * mib, 256 * mib, 0, 55},
		{512 * mib, 256 * mib, 0, 50},
		{4096 * mib, 256 * mib, 0, gcHeadroomMinPercent},
		{4096 * mib, 0, 0, 100}, // off
		// The floor: the next collection at floor while live < floor/2.
		{0, 0, 256 * mib, 100}, // nothing measured yet
		{32 * mib, 0, 256 * mib, 700},
		{64 * mib, 0, 256 * mib, 300},
		{100 * mib, 0, 256 * mib, 156},
		{128 * mib, 0, 256 * mib, 100}, // half the floor: the default reaches it
		{200 * mib, 0, 256 * mib, 100},
		{16 * mib, 0, 256 * mib, gcMinHeapMaxPercent}, // 1500 capped
		{1, 0, 256 * mib, gcMinHeapMaxPercent},
		// Both: each where it applies; the headroom wins where both would.
		{32 * mib, 256 * mib, 256 * mib, 700},
		{512 * mib, 256 * mib, 256 * mib, 50},
		{300 * mib, 256 * mib, 1024 * mib, 85},
	} {
		if got := gcPercentFor(tc.live, tc.headroom, tc.floor); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB, headroom %d MiB, floor %d MiB) = %d, want %d", tc.live/mib, tc.headroom/mib, tc.floor/mib, got, tc.want)
		}
	}
}

// TestGCPolicySteps: series of live heaps and the GOGC settings each
// policy applies, a new one only when it moves by 5 % of the larger
// setting or more (or back to 100).
//   - headroom: none while the heap is small, 100 again once the heap is
//     small again;
//   - floor: 100 once the heap reaches half the floor.
func TestGCPolicySteps(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name            string
		headroom, floor uint64
		live            []uint64 // MiB
		want            [][]int
	}{
		{"headroom", 256 * mib, 0,
			[]uint64{10, 200, 256, 300, 310, 320, 460, 470, 2000, 3000, 400, 100, 90},
			[][]int{nil, nil, nil, {85}, nil, {80}, {55}, nil, {50}, nil, {64}, {100}, nil}},
		{"floor", 0, 256 * mib,
			[]uint64{0, 32, 33, 40, 64, 127, 128, 60, 10},
			[][]int{nil, {700}, nil, {540}, {300}, {101}, {100}, {326}, {1000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set []int
			i := 0
			g := &gcPolicy{headroom: tc.headroom, floor: tc.floor, read: func() uint64 { return tc.live[i] * mib },
				set: func(p int) { set = append(set, p) }, percent: 100}
			for ; i < len(tc.live); i++ {
				set = nil
				g.step()
				if !slices.Equal(set, tc.want[i]) {
					t.Fatalf("live %d MiB (after %v): set %v, want %v", tc.live[i], tc.live[:i], set, tc.want[i])
				}
			}
		})
	}
}

// gogc reads the collector's current GOGC setting.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestGCPolicyAgent: an agent applies each policy to the process's GOGC
// and puts back 100 when it stops:
//   - gc_headroom 1KiB lowers it to 50, as any test process holds more
//     than 1 KiB live;
//   - gc_min_heap 64GiB raises it to the cap, 1000, as no test process
//     holds 32 GiB live.
func TestGCPolicyAgent(t *testing.T) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Skipf("GOGC=%s is set in the environment, which turns gc_headroom and gc_min_heap off", v)
	}
	for _, tc := range []struct {
		flag, value string
		want        uint64
	}{
		{"-gc-headroom", "1KiB", gcHeadroomMinPercent},
		{"-gc-min-heap", "64GiB", gcMinHeapMaxPercent},
	} {
		t.Run(tc.flag[1:], func(t *testing.T) {
			if got := gogc(); got != 100 {
				t.Skipf("the process runs with GOGC %d, not the default this test starts from", got)
			}
			_, _, stop := runDevAgent(t, tc.flag, tc.value)
			testwait.Until(t, 30*time.Second, fmt.Sprintf("GOGC set to %d", tc.want), func() bool { return gogc() == tc.want })
			if err := stop(); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			testwait.Until(t, 30*time.Second, "GOGC back at 100 after the agent stopped", func() bool { return gogc() == 100 })
		})
	}
}
