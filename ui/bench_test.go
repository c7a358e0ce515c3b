package ui_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
)

var (
	benchN    = flag.Int("ui.reservations", 10000, "reservations BenchmarkTimeline seeds into the visible range")
	benchSeed = flag.Uint64("ui.seed", 1, "seed of BenchmarkTimeline's workload")
)

// BenchmarkTimeline seeds -ui.reservations reservations into the next day
// of a real dev agent, opens the UI in headless Chromium and measures, in
// the page (performance.now), the first render (navigation start to the
// first frame drawn with every reservation loaded) and the redraw latency
// of pan and zoom steps (input to the end of the frame that shows it). One
// iteration is one pan or zoom step; the custom metrics are what the goals
// name: first-render-ms ≤ 2000 and redraw-p95-ms ≤ 100.
//
//	view=day   individual bars, every seeded reservation in view
//	view=week  the same data aggregated (zoom above a day)
//
// With UI_SCREENSHOTS=<dir> it also saves each view as load-<view>.png.
//
// make bench-ui runs it and writes benchmarks/results/ui/.
func BenchmarkTimeline(b *testing.B) {
	ctx := browser(b)
	a := startAgent(b, false)
	seed(b, a, *benchN, *benchSeed)
	b.Logf("seeded %d reservations (seed %d)", *benchN, *benchSeed)
	for _, view := range []struct {
		name string
		span time.Duration
	}{{"day", 24 * time.Hour}, {"week", 7 * 24 * time.Hour}} {
		b.Run("view="+view.name, func(b *testing.B) {
			tb := newTab(b, ctx)
			// Sign in once (no authentication in -dev), then reload: the
			// measured first render starts at a navigation with the token
			// already in session storage, as when a user returns to the tab.
			tb.run(b, "open", page.BringToFront(), chromedp.Navigate(a.url()+"/ui/"),
				chromedp.Evaluate(`sessionStorage.setItem('ledgerd.token', '')`, nil),
				chromedp.Reload(),
				waitJS(`window.ledgerdUI && window.ledgerdUI.perf().first !== null`))
			var first float64
			var visible int
			tb.run(b, "first render", chromedp.Evaluate(`window.ledgerdUI.perf().first`, &first),
				chromedp.Evaluate(`window.ledgerdUI.perf().lastVisible`, &visible))
			if visible < *benchN {
				b.Fatalf("first frame shows %d reservations, want all %d in view", visible, *benchN)
			}
			// Center the view on the seeded day, at the view's span.
			mid := time.Now().Add(12*time.Hour + 5*time.Minute).UnixMilli()
			half := view.span.Milliseconds() / 2
			tb.run(b, "set view", chromedp.Evaluate(fmt.Sprintf(`window.ledgerdUI.setView(%d, %d)`, mid-half, mid+half), nil),
				waitJS(`window.ledgerdUI.perf().redraws.length > 0`),
				chromedp.Evaluate(`window.ledgerdUI.perf().redraws.length = 0`, nil))
			// The README's pictures of a loaded schedule (UI_SCREENSHOTS=dir).
			if dir := os.Getenv("UI_SCREENSHOTS"); dir != "" {
				var png []byte
				tb.run(b, "screenshot", waitJS(`document.querySelectorAll('#list tbody tr').length === 200`),
					chromedp.CaptureScreenshot(&png))
				if err := os.WriteFile(filepath.Join(dir, "load-"+view.name+".png"), png, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			// Pans at one span and zooms about the centre cancel out, so the
			// window stays on the seeded day however many steps run.
			steps := []string{`pan(0.05)`, `pan(-0.05)`, `zoom(0.8)`, `zoom(1.25)`}
			i := 0
			for b.Loop() {
				tb.run(b, "step", chromedp.Evaluate(fmt.Sprintf(`window.ledgerdUI.%s; window.ledgerdUI.perf().redraws.length`, steps[i%len(steps)]), nil),
					waitJS(fmt.Sprintf(`window.ledgerdUI.perf().redraws.length >= %d`, i+1)))
				i++
			}
			var redraws []float64
			var bars, vis int
			tb.run(b, "read", chromedp.Evaluate(`window.ledgerdUI.perf().redraws`, &redraws),
				chromedp.Evaluate(`window.ledgerdUI.perf().lastBars`, &bars),
				chromedp.Evaluate(`window.ledgerdUI.perf().lastVisible`, &vis))
			slices.Sort(redraws)
			b.ReportMetric(first, "first-render-ms")
			b.ReportMetric(quantile(redraws, 0.50), "redraw-p50-ms")
			b.ReportMetric(quantile(redraws, 0.95), "redraw-p95-ms")
			b.ReportMetric(float64(vis), "in-view")
			b.ReportMetric(float64(bars), "bars-drawn")
			if p := tb.problems(); len(p) > 0 {
				b.Fatalf("page reported errors: %v", p)
			}
		})
	}
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// seed books n reservations starting within the next 20 hours on eight
// large resources, through Batch (256 reserves a call).
func seed(b *testing.B, a *agent, n int, s uint64) {
	b.Helper()
	ctx := context.Background()
	res := ledgerdv1connect.NewResourceServiceClient(http.DefaultClient, a.url())
	const nres = 8
	for i := range nres {
		_, err := res.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{
			Resource: &ledgerdv1.Resource{Name: fmt.Sprintf("bench-%d", i), Capacity: 1_000_000, Unit: "units"},
		}))
		if err != nil {
			b.Fatalf("create bench-%d: %v", i, err)
		}
	}
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	base := time.Now().Add(5 * time.Minute).Truncate(time.Minute)
	cl := a.client("")
	for done := 0; done < n; {
		var ops []*ledgerdv1.BatchOperation
		for ; done < n && len(ops) < 256; done++ {
			start := base.Add(time.Duration(rng.IntN(20*60)) * time.Minute)
			dur := time.Duration(10+rng.IntN(230)) * time.Minute
			ops = append(ops, &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Reserve{Reserve: &ledgerdv1.ReserveRequest{
				Shape: &ledgerdv1.Shape{
					Parts:      []*ledgerdv1.ResourceAmount{{Resource: fmt.Sprintf("bench-%d", rng.IntN(nres)), Amount: int64(1 + rng.IntN(10))}},
					Duration:   durationpb.New(dur),
					ExactStart: timestamppb.New(start),
				},
				Labels:         map[string]string{"bench": "ui"},
				IdempotencyKey: fmt.Sprintf("bench-ui-%d-%d", s, done),
			}}})
		}
		resp, err := cl.Batch(ctx, connect.NewRequest(&ledgerdv1.BatchRequest{Operations: ops}))
		if err != nil {
			b.Fatalf("seed batch: %v", err)
		}
		for i, r := range resp.Msg.Results {
			if e := r.GetError(); e != nil {
				b.Fatalf("seed op %d: %s", i, e.Message)
			}
		}
	}
}
