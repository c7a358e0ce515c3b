package agent

import (
	"io"
	"strings"
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
		if !equalInts(set, want[i]) {
			t.Fatalf("live %d MiB (after %v): set %v, want %v", live[i], live[:i], set, want[i])
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGCHeadroomConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		args []string
		want ByteSize
		err  string
	}{
		{"default: off", `{"data_dir":"d"}`, nil, 0, ""},
		{"zero", `{"data_dir":"d","gc_headroom":0}`, nil, 0, ""},
		{"number", `{"data_dir":"d","gc_headroom":268435456}`, nil, 256 << 20, ""},
		{"file string", `{"data_dir":"d","gc_headroom":"1GiB"}`, nil, 1 << 30, ""},
		{"flag over file", `{"data_dir":"d","gc_headroom":"1GiB"}`, []string{"-gc-headroom", "64MiB"}, 64 << 20, ""},
		{"bad unit", `{"data_dir":"d","gc_headroom":"9MB"}`, nil, 0, `key "gc_headroom"`},
		{"bad flag", `{"data_dir":"d"}`, []string{"-gc-headroom", "lots"}, 0, "gc-headroom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-insecure", "-config", writeConfig(t, tc.file)}, tc.args...)
			cfg, _, err := ParseArgs(args, func(string) string { return "" }, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %s", err, tc.err)
				}
				return
			}
			if err != nil || cfg.GCHeadroom != tc.want {
				t.Fatalf("gc_headroom = %d (%v), want %d", cfg.GCHeadroom, err, tc.want)
			}
		})
	}
}
