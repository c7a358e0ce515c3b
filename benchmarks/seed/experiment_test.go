package seed

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/workload"
	"github.com/ledgerd/ledgerd/planner"
)

// kthTrace returns the shared KTH trace path, or "" when it is absent.
func kthTrace(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "workloads", "KTH-SP2-1996-2.1-cln.swf.gz")
	if _, err := os.Stat(p); err != nil {
		t.Logf("KTH trace not available (%v): replay skipped", err)
		return ""
	}
	return p
}

func TestQuickSweepStructure(t *testing.T) {
	cfg := QuickConfig()
	cfg.TracePath = kthTrace(t)
	rep, err := Run(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if bad := rep.Check(); len(bad) > 0 {
		t.Fatalf("structural checks failed:\n%s", strings.Join(bad, "\n"))
	}
	wantPoints := len(cfg.Interarrivals)
	if cfg.TracePath != "" {
		wantPoints += len(cfg.TraceScales)
	}
	if len(rep.Points) != wantPoints {
		t.Fatalf("%d points, want %d", len(rep.Points), wantPoints)
	}
	for _, p := range rep.Points {
		if len(p.Results) != len(cfg.Contenders()) {
			t.Fatalf("%s: %d results", p.Workload, len(p.Results))
		}
		list, _ := p.result("list")
		idx, _ := p.result("indexed")
		exact, err := p.result("slotted-exact")
		if err != nil {
			t.Fatal(err)
		}
		if list.Accepted != idx.Accepted || list.Accepted != exact.Accepted {
			t.Errorf("%s ia=%.0f: accepted list %d indexed %d exact slotted %d", p.Workload, p.MeanInterarrival, list.Accepted, idx.Accepted, exact.Accepted)
		}
		// Not a theorem (online admission: rejecting a big request early
		// can leave room for more later, and a finer slotting did beat the
		// exact timeline by a few requests in one point), but for this seed
		// the coarsest slotting loses a large share to internal
		// fragmentation.
		coarse, _ := p.result("slotted-90")
		if coarse.Accepted > exact.Accepted {
			t.Errorf("%s ia=%.0f: 90 slots accepted %d > exact %d", p.Workload, p.MeanInterarrival, coarse.Accepted, exact.Accepted)
		}
		if p.OfferedLoad <= 1 {
			t.Errorf("%s ia=%.0f: offered load %.2f does not overload the resource", p.Workload, p.MeanInterarrival, p.OfferedLoad)
		}
		if list.SuccessRate >= 1 || list.SuccessRate <= 0 {
			t.Errorf("%s ia=%.0f: exact success rate %.3f: an overload must reject some and accept some", p.Workload, p.MeanInterarrival, list.SuccessRate)
		}
	}
	// Higher load, lower success for the exact planner.
	a, _ := rep.Points[0].result("list")
	b, _ := rep.Points[1].result("list")
	if a.SuccessRate >= b.SuccessRate {
		t.Errorf("success at ia=%.0f (%.3f) should be below ia=%.0f (%.3f)", rep.Points[0].MeanInterarrival, a.SuccessRate, rep.Points[1].MeanInterarrival, b.SuccessRate)
	}

	md := rep.Markdown()
	for _, want := range []string{"### lublin", "| mean interarrival (s) |", "slotted-9000 success", "Structural checks hold"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if got := strings.Count(rep.CSV(), "\n"); got != 1+len(rep.Points)*len(cfg.Contenders()) {
		t.Errorf("CSV has %d lines", got)
	}
	dec := xml.NewDecoder(strings.NewReader(rep.SVG()))
	elems := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			elems++
		}
	}
	if elems < 20 {
		t.Errorf("SVG has only %d elements", elems)
	}
}

func TestReplayDecisions(t *testing.T) {
	// Capacity 10, horizon 100. Requests arrive in order; windows are
	// [Start, Deadline].
	rs := []workload.Reservation{
		{Arrival: 0, Start: 0, Deadline: 10, Duration: 10, Amount: 6},     // at 0
		{Arrival: 1, Start: 1, Deadline: 30, Duration: 10, Amount: 6},     // 10
		{Arrival: 2, Start: 2, Deadline: 12, Duration: 10, Amount: 6},     // no room in [2,12]
		{Arrival: 3, Start: 3, Deadline: 500, Duration: 90, Amount: 4},    // 3: fits beside both
		{Arrival: 4, Start: 4, Deadline: 500, Duration: 100, Amount: 1},   // horizon allows start 4 only: [4,10) is full
		{Arrival: 20, Start: 20, Deadline: 500, Duration: 100, Amount: 1}, // 20, the last start the horizon allows
		{Arrival: 21, Start: 21, Deadline: 500, Duration: 101, Amount: 1}, // longer than the horizon
		{Arrival: 22, Start: 22, Deadline: 30, Duration: 5, Amount: 11},   // larger than the resource
	}
	want := []bool{true, true, false, true, false, true, false, false}
	for _, name := range []string{"list", "indexed", "slotted-exact"} {
		var tl planner.Timeline
		switch name {
		case "list":
			tl = planner.NewList(10, 0)
		case "indexed":
			tl = planner.NewIndexed(10, 0)
		default:
			tl = planner.NewSlotted(10, 0, 1, 100)
		}
		var accepted int
		for i := range rs {
			out, err := Replay(tl, rs[i:i+1], 100)
			if err != nil {
				t.Fatal(err)
			}
			if (out.Accepted == 1) != want[i] {
				t.Errorf("%s: request %d accepted=%v, want %v", name, i, out.Accepted == 1, want[i])
			}
			accepted += out.Accepted
		}
		if accepted != 4 {
			t.Errorf("%s: accepted %d, want 4", name, accepted)
		}
		if got := tl.MinFree(22, 93); got != 5 {
			t.Errorf("%s: free over [22,93) = %d, want 5 (4 + 1 booked)", name, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"capacity", func(c *Config) { c.Capacity = 0 }, "capacity"},
		{"horizon", func(c *Config) { c.Horizon = -1 }, "horizon"},
		{"timescale", func(c *Config) { c.TimeScale = 0 }, "timescale"},
		{"jobs", func(c *Config) { c.Jobs = 0 }, "jobs"},
		{"no interarrivals", func(c *Config) { c.Interarrivals = nil }, "interarrivals"},
		{"zero interarrival", func(c *Config) { c.Interarrivals = []float64{100, 0} }, "interarrivals"},
		{"reps", func(c *Config) { c.Reps = 0 }, "reps"},
		{"slots not dividing", func(c *Config) { c.Slots = []int64{7} }, "slots"},
		{"slack", func(c *Config) { c.Slack = -1 }, "slack"},
		{"trace scale", func(c *Config) { c.TraceScales = []float64{-1} }, "trace-scales"},
		{"min replay", func(c *Config) { c.MinReplay = -1 }, "min-replay"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := QuickConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want one naming %q", err, tc.field)
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
}

// BenchmarkReplay measures one replay of 2,000 Lublin–Feitelson
// reservations at offered load about 3 per contender (the timeline is
// created inside the loop, which for 900,000 slots includes its 7 MB ring).
// cpu-ns/request is what the experiment reports: the replaying thread's CPU
// time over the timed loop (not the decision hashing) per request.
func BenchmarkReplay(b *testing.B) {
	cfg, _, rs := synthBenchStream(b)
	h := cfg.Horizon * cfg.TimeScale
	for _, c := range cfg.Contenders() {
		b.Run(c.Name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				out, err := Replay(c.Factory(cfg.Capacity, rs[0].Arrival), rs, h)
				if err != nil {
					b.Fatal(err)
				}
				cpu += out.CPU
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(rs)), "ns/request")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(len(rs)), "cpu-ns/request")
		})
	}
}

// BenchmarkReplayTrace is BenchmarkReplay on the default trace (the KTH
// log on the 100 CPUs its header declares, submit times unscaled: 28,475
// reservations at offered load 1.07), for the indexed timeline and the
// 90-slot planner; it is skipped when the trace is not beside the
// repository (kthTrace). Profile it to see where a trace replay spends its
// time (results/profile-replay-*-kth.txt).
func BenchmarkReplayTrace(b *testing.B) {
	cfg, capacity, rs := traceBenchStream(b)
	h := cfg.Horizon * cfg.TimeScale
	for _, c := range cfg.Contenders() {
		if c.Name != "indexed" && c.Name != "slotted-90" {
			continue
		}
		b.Run(c.Name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu time.Duration
			for b.Loop() {
				out, err := Replay(c.Factory(capacity, rs[0].Arrival), rs, h)
				if err != nil {
					b.Fatal(err)
				}
				cpu += out.CPU
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(len(rs)), "cpu-ns/request")
		})
	}
}
