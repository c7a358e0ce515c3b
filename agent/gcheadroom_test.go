package agent

import (
	"slices"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 256 * mib, 100},
		{100 * mib, 256 * mib, 100},
		{256 * mib, 256 * mib, 100},
		{320 * mib, 256 * mib, 80},
		{460 * mib, 256 * mib, 55},
		{512 * mib, 256 * mib, 50},
		{4096 * mib, 256 * mib, gcHeadroomMinPercent},
		{4096 * mib, 0, 100}, // off
	} {
		if got := gcPercentFor(tc.live, tc.headroom); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB, %d MiB) = %d, want %d", tc.live/mib, tc.headroom/mib, got, tc.want)
		}
	}
}

// TestGCHeadroomStep: a series of live heaps and the GOGC settings the
// policy applies: none while the heap is small, a new one when the
// percent moves by 5 or more, 100 again once the heap is small again.
func TestGCHeadroomStep(t *testing.T) {
	const mib = 1 << 20
	live := []uint64{10, 200, 256, 300, 310, 320, 460, 470, 2000, 3000, 400, 100, 90}
	want := [][]int{nil, nil, nil, {85}, nil, {80}, {55}, nil, {50}, nil, {64}, {100}, nil}
	var set []int
	i := 0
	g := &gcHeadroom{headroom: 256 * mib, read: func() uint64 { return live[i] * mib }, set: func(p int) { set = append(set, p) }, percent: 100}
	for ; i < len(live); i++ {
		set = nil
		g.step()
		if !slices.Equal(set, want[i]) {
			t.Fatalf("live %d MiB (after %v): set %v, want %v", live[i], live[:i], set, want[i])
		}
	}
}
