package seed

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Workloads returns the workload names present in the report, in order.
func (r *Report) Workloads() []string {
	var ws []string
	for _, p := range r.Points {
		if !slices.Contains(ws, p.Workload) {
			ws = append(ws, p.Workload)
		}
	}
	return ws
}

// Check returns the structural facts the experiment must satisfy whatever
// the machine: success rates are fractions, the list and the indexed
// timeline make identical decisions, and a slotted timeline with one slot
// per time unit decides exactly like them. An empty result means all hold.
func (r *Report) Check() []string {
	var bad []string
	for _, p := range r.Points {
		list, err := p.result("list")
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		for _, res := range p.Results {
			if res.SuccessRate < 0 || res.SuccessRate > 1 || res.Accepted > p.Requests {
				bad = append(bad, fmt.Sprintf("%s ia=%.0f %s: success rate %g out of [0,1]", p.Workload, p.MeanInterarrival, res.Planner, res.SuccessRate))
			}
			if !(res.NsPerRequest > 0) {
				bad = append(bad, fmt.Sprintf("%s ia=%.0f %s: runtime %g ns not positive", p.Workload, p.MeanInterarrival, res.Planner, res.NsPerRequest))
			}
		}
		for _, name := range []string{"indexed", "indexed" + FrozenSuffix, "slotted-exact"} {
			other, err := p.result(name)
			if err != nil {
				if name == "indexed" {
					bad = append(bad, err.Error())
				}
				continue
			}
			if other.Accepted != list.Accepted || other.Decisions != list.Decisions {
				bad = append(bad, fmt.Sprintf("%s ia=%.0f: %s accepted %d (decisions %x), list %d (%x): must decide identically",
					p.Workload, p.MeanInterarrival, name, other.Accepted, other.Decisions, list.Accepted, list.Decisions))
			}
		}
		// A frozen baseline runs the same algorithm as the current code
		// of its name: it must decide identically.
		for _, res := range p.Results {
			name, ok := strings.CutSuffix(res.Planner, FrozenSuffix)
			if !ok {
				continue
			}
			cur, err := p.result(name)
			if err == nil && (cur.Accepted != res.Accepted || cur.Decisions != res.Decisions) {
				bad = append(bad, fmt.Sprintf("%s ia=%.0f: %s decided differently from %s", p.Workload, p.MeanInterarrival, name, res.Planner))
			}
		}
	}
	return bad
}

// Headline evaluates the goal at every sweep point: the indexed timeline
// (the planner the ledger uses) costs no more CPU per request than the
// coarsest slotting while accepting at least as many requests as the
// finest one. Each line also gives the seed papers' own comparison (the
// plain list against the coarsest slotting) and the current coarsest
// slotting against its frozen baseline copy. It returns one line per
// point and whether the goal holds at every point.
func (r *Report) Headline() ([]string, bool) {
	if len(r.Config.Slots) == 0 {
		return []string{"no slotted configuration: headline not evaluated"}, false
	}
	coarse := "slotted-" + strconv.FormatInt(slices.Min(r.Config.Slots), 10)
	fine := "slotted-" + strconv.FormatInt(slices.Max(r.Config.Slots), 10)
	all := true
	var lines []string
	for _, p := range r.Points {
		list, e1 := p.result("list")
		idx, e2 := p.result("indexed")
		c, e3 := p.result(coarse)
		f, e4 := p.result(fine)
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
			all = false
			continue
		}
		acc := idx.Accepted >= f.Accepted
		fast := idx.NsPerRequest <= c.NsPerRequest
		all = all && acc && fast
		line := fmt.Sprintf("%s (%d CPUs) ia=%.0fs: indexed accepts >= %s: %s (%d vs %d); indexed CPU <= %s: %s (%.0f vs %.0f ns, ratio %.2f); list/%s %.2f",
			p.Workload, p.Capacity, p.MeanInterarrival, fine, yes(acc), idx.Accepted, f.Accepted,
			coarse, yes(fast), idx.NsPerRequest, c.NsPerRequest, idx.NsPerRequest/c.NsPerRequest,
			coarse, list.NsPerRequest/c.NsPerRequest)
		if fr, err := p.result("indexed" + FrozenSuffix); err == nil {
			line += fmt.Sprintf("; indexed now/%s %.2f", FrozenSuffix[1:], idx.NsPerRequest/fr.NsPerRequest)
		}
		if fr, err := p.result(coarse + FrozenSuffix); err == nil {
			line += fmt.Sprintf("; %s now/%s %.2f", coarse, FrozenSuffix[1:], c.NsPerRequest/fr.NsPerRequest)
		}
		lines = append(lines, line)
	}
	return lines, all
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// Markdown renders one table per workload: success rate and ns/request per
// contender and sweep point.
func (r *Report) Markdown() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "Book-ahead horizon %d s; time unit 1/%d s; start factor %g; window slack %g; seed %d.\n", c.Horizon, c.TimeScale, c.StartFactor, c.Slack, c.Seed)
	if c.Synthetic {
		fmt.Fprintf(&b, "Synthetic sweep (%s): %d Lublin–Feitelson jobs per point on %d CPUs; %d generated jobs dropped.\n", SyntheticName, c.Jobs, c.Capacity, r.SyntheticDropped)
	} else {
		b.WriteString("Synthetic sweep: off.\n")
	}
	if t := r.Trace; t != nil {
		fmt.Fprintf(&b, "Trace %s (file %s) on %d CPUs (capacity from %s), submit times scaled by %s; durations are requested times (field 9). Conversion: %s.\n",
			t.Name, filepath.Base(t.Path), t.Capacity, t.CapacitySource, floats(c.TraceScales), t.Tally)
	}
	fmt.Fprintf(&b, "ns/req: median over all timed replays of the replaying thread's CPU time divided by the requests (%d repetitions, each repeating a replay until %v of it had run; contenders interleaved). \"list blocks\" is the mean (max) length of the free-block list during the replay.\n\n", c.Reps, c.MinReplay)
	for _, w := range r.Workloads() {
		var pts []Point
		for _, p := range r.Points {
			if p.Workload == w {
				pts = append(pts, p)
			}
		}
		fmt.Fprintf(&b, "### %s, %d CPUs\n\n", w, pts[0].Capacity)
		names := contenderNames(pts)
		b.WriteString("| mean interarrival (s) | offered load | requests | list blocks |")
		for _, n := range names {
			fmt.Fprintf(&b, " %s success | %s ns/req |", n, n)
		}
		b.WriteString("\n|---:|---:|---:|---:|")
		for range names {
			b.WriteString("---:|---:|")
		}
		b.WriteString("\n")
		for _, p := range pts {
			blocks := "–"
			if l, err := p.result("list"); err == nil {
				blocks = fmt.Sprintf("%.0f (%d)", l.MeanLen, l.MaxLen)
			}
			fmt.Fprintf(&b, "| %.0f | %.2f | %d | %s |", p.MeanInterarrival, p.OfferedLoad, p.Requests, blocks)
			for _, n := range names {
				res, err := p.result(n)
				if err != nil {
					b.WriteString(" – | – |")
					continue
				}
				fmt.Fprintf(&b, " %.4f | %.0f |", res.SuccessRate, res.NsPerRequest)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	lines, ok := r.Headline()
	fmt.Fprintf(&b, "### Goal (the indexed timeline accepts at least as many as the finest slotting and costs no more CPU per request than the coarsest): %s\n\n", map[bool]string{true: "holds at every point", false: "does NOT hold at every point"}[ok])
	for _, l := range lines {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	if bad := r.Check(); len(bad) > 0 {
		b.WriteString("\n### Structural check FAILED\n\n")
		for _, l := range bad {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	} else {
		b.WriteString("\nStructural checks hold: success rates in [0,1]; list and indexed made identical decisions at every point, and so did each slotted timeline and its frozen baseline copy")
		if c.ExactSlotted {
			b.WriteString("; the one-slot-per-unit slotted timeline decided identically too")
		}
		b.WriteString(".\n")
	}
	return b.String()
}

func contenderNames(pts []Point) []string {
	var names []string
	for _, p := range pts {
		for _, r := range p.Results {
			if !slices.Contains(names, r.Planner) {
				names = append(names, r.Planner)
			}
		}
	}
	return names
}

// CSV renders every result as one row.
func (r *Report) CSV() string {
	var b strings.Builder
	b.WriteString("workload,mean_interarrival_s,offered_load,requests,planner,accepted,success_rate,cpu_ns_per_request,wall_ns_per_request,replays,mean_len,max_len,decisions,capacity,trace_scale\n")
	for _, p := range r.Points {
		for _, res := range p.Results {
			fmt.Fprintf(&b, "%s,%.1f,%.4f,%d,%s,%d,%.6f,%.1f,%.1f,%d,%.1f,%d,%016x,%d,%g\n", p.Workload, p.MeanInterarrival, p.OfferedLoad,
				p.Requests, res.Planner, res.Accepted, res.SuccessRate, res.NsPerRequest, res.WallNsPerRequest, res.Replays,
				res.MeanLen, res.MaxLen, res.Decisions, p.Capacity, p.Scale)
		}
	}
	return b.String()
}

// palette gives each contender a fixed colour.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"}

// dash makes every second line dashed, so that contenders with identical
// results (list and indexed) stay visible on top of each other.
func dash(i int) string {
	if i%2 == 1 {
		return ` stroke-dasharray="6,4"`
	}
	return ""
}

// SVG draws, for every workload, success rate and ns/request (log scale)
// against the mean interarrival time, one line per contender.
func (r *Report) SVG() string {
	ws := r.Workloads()
	const pw, ph, ml, mr, mt, mb = 420.0, 260.0, 70.0, 20.0, 40.0, 50.0
	cellW, cellH := ml+pw+mr, mt+ph+mb
	names := contenderNames(r.Points)
	legendH := 30.0
	W, H := 2*cellW, float64(len(ws))*cellH+legendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, n := range names {
		x := 20 + float64(i)*150
		fmt.Fprintf(&b, `<line x1="%.0f" y1="18" x2="%.0f" y2="18" stroke="%s" stroke-width="3"%s/><text x="%.0f" y="22">%s</text>`+"\n", x, x+25, palette[i%len(palette)], dash(i), x+30, n)
	}
	for row, w := range ws {
		var pts []Point
		for _, p := range r.Points {
			if p.Workload == w {
				pts = append(pts, p)
			}
		}
		slices.SortFunc(pts, func(a, b Point) int {
			switch {
			case a.MeanInterarrival < b.MeanInterarrival:
				return -1
			case a.MeanInterarrival > b.MeanInterarrival:
				return 1
			}
			return 0
		})
		for col := range 2 {
			ox, oy := float64(col)*cellW+ml, legendH+float64(row)*cellH+mt
			logY := col == 1
			title := fmt.Sprintf("%s, %d CPUs: success rate", w, pts[0].Capacity)
			if logY {
				title = fmt.Sprintf("%s, %d CPUs: CPU ns per request (log)", w, pts[0].Capacity)
			}
			val := func(res Result) float64 {
				if logY {
					return math.Log10(res.NsPerRequest)
				}
				return res.SuccessRate
			}
			xmin, xmax := pts[0].MeanInterarrival, pts[len(pts)-1].MeanInterarrival
			if xmax == xmin {
				xmin, xmax = xmin*0.9, xmax*1.1
			}
			ymin, ymax := math.Inf(1), math.Inf(-1)
			for _, p := range pts {
				for _, res := range p.Results {
					ymin, ymax = min(ymin, val(res)), max(ymax, val(res))
				}
			}
			if logY {
				ymin, ymax = math.Floor(ymin), math.Ceil(ymax)
			} else {
				ymin, ymax = math.Floor(ymin*10)/10, math.Ceil(ymax*10)/10
			}
			if ymax <= ymin {
				ymax = ymin + 1
			}
			sx := func(x float64) float64 { return ox + (x-xmin)/(xmax-xmin)*pw }
			sy := func(y float64) float64 { return oy + ph - (y-ymin)/(ymax-ymin)*ph }
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", ox, oy-10, title)
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", ox, oy, pw, ph)
			// y ticks
			steps := 5
			if logY {
				steps = int(ymax - ymin)
			}
			for k := 0; k <= steps; k++ {
				y := ymin + (ymax-ymin)*float64(k)/float64(steps)
				label := fmt.Sprintf("%.2f", y)
				if logY {
					label = fmt.Sprintf("1e%.0f", y)
				}
				fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
					ox, sy(y), ox+pw, sy(y), ox-5, sy(y)+4, label)
			}
			for _, p := range pts {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f</text>`+"\n", sx(p.MeanInterarrival), oy+ph+16, p.MeanInterarrival)
			}
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">mean interarrival time (s)</text>`+"\n", ox+pw/2, oy+ph+36)
			for i, n := range names {
				var coords []string
				for _, p := range pts {
					res, err := p.result(n)
					if err != nil {
						continue
					}
					coords = append(coords, fmt.Sprintf("%.1f,%.1f", sx(p.MeanInterarrival), sy(val(res))))
				}
				colour := palette[i%len(palette)]
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", colour, dash(i), strings.Join(coords, " "))
				for _, c := range coords {
					xy := strings.Split(c, ",")
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], colour)
				}
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// floats formats a list of floats as "1, 0.5, 0.25".
func floats(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'g', -1, 64))
	}
	return strings.Join(s, ", ")
}
