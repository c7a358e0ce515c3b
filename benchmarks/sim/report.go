package sim

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ledgerd/ledgerd/planner"
)

// Table001 writes the Heine et al. results as a Markdown table.
func Table001(w io.Writer, rows []Row001) error {
	var b strings.Builder
	b.WriteString("| start factor | reservations % | policy | submitted | rejected % | SLDwA | utilization % | moves |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %.1f | %.0f | %v | %d | %.1f | %.2f | %.1f | %d |\n", r.StartFactor, 100*r.Share, r.Policy,
			r.Result.Reservations, r.Result.RejectionRate(), r.Result.SLDwA, r.Result.Utilization, r.Result.Moves)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSV001 writes the Heine et al. results as CSV, every row naming the
// workload (the trace) and the capacity it ran on.
func CSV001(w io.Writer, rows []Row001, workload string, capacity int64) error {
	var b strings.Builder
	b.WriteString("workload,capacity,start_factor,share,policy,reservations,rejected,rejection_pct,sldwa,utilization_pct,moves,var_jobs\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%d,%g,%g,%v,%d,%d,%.3f,%.4f,%.3f,%d,%d\n", workload, capacity, r.StartFactor, r.Share, r.Policy, r.Result.Reservations,
			r.Result.Rejected, r.Result.RejectionRate(), r.Result.SLDwA, r.Result.Utilization, r.Result.Moves, r.Result.VarJobs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Table002 writes the Xiao & Hu results as a Markdown table.
func Table002(w io.Writer, rows []Row002) error {
	var b strings.Builder
	b.WriteString("| k_over | reservation rate % | policy | v* | submitted | rejected % | relaxed admits | violations % | of which relaxed | utilization % | mean response s |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		v := "-"
		if r.Policy == planner.PolicyRelaxed {
			v = fmt.Sprintf("%.2f", r.VStar)
		}
		fmt.Fprintf(&b, "| [%.1f,%.1f] | %.0f | %v | %s | %d | %.1f | %d | %.1f | %d | %.1f | %.0f |\n", r.KLo, r.KHi, 100*r.Rate, r.Policy, v,
			r.Result.Reservations, r.Result.RejectionRate(), r.Result.Relaxed, r.Result.ViolationRate(), r.Result.RelaxedViolations, r.Result.Utilization, r.Result.MeanResponse)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSV002 writes the Xiao & Hu results as CSV, every row naming the
// workload, the clusters' size and the time units.
func CSV002(w io.Writer, rows []Row002, workload string, clusterSize int64, units string) error {
	var b strings.Builder
	b.WriteString("workload,cluster_size,units,k_lo,k_hi,rate,policy,vstar,reservations,rejected,rejection_pct,relaxed,violations,relaxed_violations,violation_pct,utilization_pct,mean_response\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%d,%s,%g,%g,%g,%v,%g,%d,%d,%.3f,%d,%d,%d,%.3f,%.3f,%.1f\n", workload, clusterSize, units, r.KLo, r.KHi, r.Rate, r.Policy, r.VStar, r.Result.Reservations,
			r.Result.Rejected, r.Result.RejectionRate(), r.Result.Relaxed, r.Result.Violations, r.Result.RelaxedViolations, r.Result.ViolationRate(), r.Result.Utilization, r.Result.MeanResponse)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Series is one line of a plot.
type Series struct {
	Name   string
	Color  string
	Dashed bool
	X, Y   []float64
}

// Panel is one chart of a figure.
type Panel struct {
	Title, XLabel string
	Series        []Series
}

// SVG writes the panels side by side as a self-contained SVG line chart.
func SVG(w io.Writer, title string, panels []Panel) error {
	const pw, ph, ml, mr, mt, mb = 340.0, 260.0, 50.0, 15.0, 40.0, 45.0
	width := pw * float64(len(panels))
	height := ph + 85
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="16" text-anchor="middle" font-size="13">%s</text>`+"\n", width/2, esc(title))
	for i, p := range panels {
		x0 := float64(i) * pw
		xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
		for _, s := range p.Series {
			for k := range s.X {
				xmin, xmax = math.Min(xmin, s.X[k]), math.Max(xmax, s.X[k])
				ymin, ymax = math.Min(ymin, s.Y[k]), math.Max(ymax, s.Y[k])
			}
		}
		if math.IsInf(xmin, 0) {
			continue
		}
		if xmax == xmin {
			xmax = xmin + 1
		}
		if ymax <= ymin {
			ymax = ymin + 1
		}
		ymax *= 1.05
		px := func(x float64) float64 { return x0 + ml + (x-xmin)/(xmax-xmin)*(pw-ml-mr) }
		py := func(y float64) float64 { return mt + (1-(y-ymin)/(ymax-ymin))*(ph-mt-mb) }
		fmt.Fprintf(&b, `<text x="%.1f" y="32" text-anchor="middle">%s</text>`+"\n", x0+pw/2, esc(p.Title))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", x0+ml, mt, pw-ml-mr, ph-mt-mb)
		for k := 0; k <= 4; k++ {
			y := ymin + float64(k)*(ymax-ymin)/4
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.3g</text><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n",
				x0+ml-4, py(y)+4, y, x0+ml, x0+pw-mr, py(y), py(y))
			x := xmin + float64(k)*(xmax-xmin)/4
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.3g</text>`+"\n", px(x), ph-mb+14, x)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x0+pw/2, ph-mb+30, esc(p.XLabel))
		for j, s := range p.Series {
			var pts []string
			for k := range s.X {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[k]), py(s.Y[k])))
			}
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="5,3"`
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`+"\n", s.Color, dash, strings.Join(pts, " "))
			{
				ly := ph + 13*float64(j)
				lx := x0 + 10
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%.1f">%s</text>`+"\n",
					lx, lx+24, ly, ly, s.Color, dash, lx+30, ly+4, esc(s.Name))
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// Plot001 draws rejection rate, SLDwA and utilization over the share of
// reservations, one line per policy and start factor. workload names the
// trace and its settings in the title (e.g. "KTH-SP2-1996-2.1-cln, 100 nodes").
func Plot001(w io.Writer, rows []Row001, workload string) error {
	metrics := []struct {
		title string
		get   func(Result) float64
	}{
		{"rejected reservations %", Result.RejectionRate},
		{"SLDwA of variable jobs", func(r Result) float64 { return r.SLDwA }},
		{"utilization %", func(r Result) float64 { return r.Utilization }},
	}
	var panels []Panel
	for _, m := range metrics {
		p := Panel{Title: m.title, XLabel: "reservations, % of variable jobs"}
		var factors []float64
		for _, r := range rows {
			if !containsF(factors, r.StartFactor) {
				factors = append(factors, r.StartFactor)
			}
		}
		for fi, f := range factors {
			for _, pol := range []planner.Policy{planner.PolicyReject, planner.PolicyMoveVariable} {
				s := Series{Name: fmt.Sprintf("%v, start factor %.1f", pol, f), Color: palette[fi%len(palette)], Dashed: pol == planner.PolicyReject}
				for _, r := range rows {
					if r.StartFactor == f && r.Policy == pol && (r.Share > 0 || m.title != metrics[0].title) {
						s.X = append(s.X, 100*r.Share)
						s.Y = append(s.Y, m.get(r.Result))
					}
				}
				p.Series = append(p.Series, s)
			}
		}
		panels = append(panels, p)
	}
	return SVG(w, fmt.Sprintf("Reservations among variable jobs (%s): REJECT (dashed) vs MOVE_VARIABLE (solid)", workload), panels)
}

// Plot002 draws, for the middle k_over interval, rejection, utilization and
// response time over the reservation rate (REJECT vs RELAXED v*=0.8), and
// the violation rate over v* per reservation rate. workload names the job
// stream and its settings in the title.
func Plot002(w io.Writer, rows []Row002, kLo, kHi float64, workload string) error {
	pick := func(pol planner.Policy, v float64, get func(Result) float64) Series {
		s := Series{Name: pol.String(), Color: palette[0], Dashed: true}
		if pol == planner.PolicyRelaxed {
			s = Series{Name: fmt.Sprintf("RELAXED v*=%.2f", v), Color: palette[1]}
		}
		for _, r := range rows {
			if r.KLo == kLo && r.KHi == kHi && r.Policy == pol && r.VStar == v {
				s.X = append(s.X, 100*r.Rate)
				s.Y = append(s.Y, get(r.Result))
			}
		}
		return s
	}
	panels := []Panel{
		{Title: "rejected reservations %", XLabel: "reservation rate %", Series: []Series{
			pick(planner.PolicyReject, 0, Result.RejectionRate), pick(planner.PolicyRelaxed, 0.8, Result.RejectionRate)}},
		{Title: "utilization %", XLabel: "reservation rate %", Series: []Series{
			pick(planner.PolicyReject, 0, func(r Result) float64 { return r.Utilization }),
			pick(planner.PolicyRelaxed, 0.8, func(r Result) float64 { return r.Utilization })}},
		{Title: "mean response time of jobs, s", XLabel: "reservation rate %", Series: []Series{
			pick(planner.PolicyReject, 0, func(r Result) float64 { return r.MeanResponse }),
			pick(planner.PolicyRelaxed, 0.8, func(r Result) float64 { return r.MeanResponse })}},
	}
	viol := Panel{Title: "violations % of admitted (RELAXED)", XLabel: "v*"}
	var rates []float64
	for _, r := range rows {
		if !containsF(rates, r.Rate) {
			rates = append(rates, r.Rate)
		}
	}
	for i, rate := range rates {
		s := Series{Name: fmt.Sprintf("violations, rate %.0f%%", 100*rate), Color: palette[(i+2)%len(palette)]}
		for _, r := range rows {
			if r.KLo == kLo && r.KHi == kHi && r.Policy == planner.PolicyRelaxed && r.Rate == rate {
				s.X = append(s.X, r.VStar)
				s.Y = append(s.Y, r.Result.ViolationRate())
			}
		}
		viol.Series = append(viol.Series, s)
	}
	panels = append(panels, viol)
	return SVG(w, fmt.Sprintf("Relaxed reservations (%s), k_over ~ U[%.1f,%.1f]", workload, kLo, kHi), panels)
}

func containsF(xs []float64, x float64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
