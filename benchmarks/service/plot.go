package service

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// ReadResults reads the JSON lines written by -json.
func ReadResults(path string) ([]*Result, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer fh.Close()
	var out []*Result
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		r := new(Result)
		if err := json.Unmarshal(sc.Bytes(), r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// Series names a curve: system, label and mix.
func (r *Result) Series() string {
	s := r.System
	if r.Label != "" {
		s += " " + r.Label
	}
	if r.Mix != "" && r.Mix != "default" {
		s += " (" + r.Mix + " mix)"
	}
	return s
}

// WriteMarkdown writes one table row per result.
func WriteMarkdown(w io.Writer, rs []*Result) error {
	fmt.Fprintln(w, "| system | mix | clients | live (target) | resources | ops/s | committed/s | committed p50 / p99 ms | read p99 ms | CPU µs/op | acceptance | errors | read-back | load avg start → end |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
	for _, r := range rs {
		var p50, readP99 float64
		for _, s := range r.Ops {
			if s.Op == OpReserve.String() {
				p50 = s.P50
			}
			if s.Op == OpRead.String() {
				readP99 = s.P99
			}
		}
		errs := 0
		for _, v := range r.Errors {
			errs += v
		}
		check := "—"
		switch {
		case r.VerifyError != "":
			check = "FAILED: " + r.VerifyError
		case r.Verified > 0:
			check = fmt.Sprintf("%d ok", r.Verified)
		}
		name := r.System
		if r.Label != "" {
			name += " " + r.Label
		}
		if r.Client != "" {
			name += " (" + r.Client + " client)"
		}
		load := "—"
		if r.LoadStart > 0 || r.LoadEnd > 0 {
			load = fmt.Sprintf("%.1f → %.1f", r.LoadStart, r.LoadEnd)
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %d | %d (%d) | %d | %.0f | %.0f | %.1f / %.1f | %.1f | %.0f | %.1f%% | %d | %s | %s |\n",
			name, r.Mix, r.Clients, r.Live, r.TargetLive, r.Resources, r.OpsPerSecond, r.Committed, p50, r.CommittedP99, readP99,
			r.CPUOwnPerOp+r.CPUServersPerOp, 100*r.AcceptanceRate, errs, check, load); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return nil
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

type svgPlot struct {
	b                      strings.Builder
	w, h, left, top, right int
	bottom                 int
	xmin, xmax, ymin, ymax float64
	logX                   bool
}

func newPlot(title, xlabel, ylabel string, xmin, xmax, ymin, ymax float64, logX bool) *svgPlot {
	p := &svgPlot{w: 760, h: 460, left: 70, top: 40, right: 230, bottom: 50, xmin: xmin, xmax: xmax, ymin: ymin, ymax: ymax, logX: logX}
	fmt.Fprintf(&p.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", p.w, p.h)
	fmt.Fprintf(&p.b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="22" font-size="15">%s</text>`+"\n", p.left, esc(title))
	pw, ph := p.w-p.left-p.right, p.h-p.top-p.bottom
	fmt.Fprintf(&p.b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", p.left, p.top, pw, ph)
	fmt.Fprintf(&p.b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", p.left+pw/2, p.h-12, esc(xlabel))
	fmt.Fprintf(&p.b, `<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", p.top+ph/2, esc(ylabel))
	for _, x := range p.xticks() {
		px, _ := p.pt(x, ymin)
		fmt.Fprintf(&p.b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px, p.top, px, p.top+ph, px, p.top+ph+16, num(x))
	}
	for i := 0; i <= 5; i++ {
		y := ymin + (ymax-ymin)*float64(i)/5
		_, py := p.pt(xmin, y)
		fmt.Fprintf(&p.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", p.left, py, p.left+pw, py, p.left-6, py+4, num(y))
	}
	return p
}

func (p *svgPlot) xticks() []float64 {
	var out []float64
	if p.logX {
		for x := math.Pow(10, math.Floor(math.Log10(p.xmin))); x <= p.xmax*1.0001; x *= 10 {
			for _, m := range []float64{1, 2, 5} {
				if v := x * m; v >= p.xmin*0.9999 && v <= p.xmax*1.0001 {
					out = append(out, v)
				}
			}
		}
		return out
	}
	for i := 0; i <= 5; i++ {
		out = append(out, p.xmin+(p.xmax-p.xmin)*float64(i)/5)
	}
	return out
}

func (p *svgPlot) pt(x, y float64) (float64, float64) {
	pw, ph := float64(p.w-p.left-p.right), float64(p.h-p.top-p.bottom)
	fx := (x - p.xmin) / (p.xmax - p.xmin)
	if p.logX {
		fx = (math.Log(x) - math.Log(p.xmin)) / (math.Log(p.xmax) - math.Log(p.xmin))
	}
	fy := (y - p.ymin) / (p.ymax - p.ymin)
	return float64(p.left) + fx*pw, float64(p.top) + ph - fy*ph
}

func (p *svgPlot) line(i int, name string, xs, ys []float64, marks bool) {
	c := palette[i%len(palette)]
	var pts []string
	for k := range xs {
		x, y := p.pt(xs[k], ys[k])
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		if marks {
			fmt.Fprintf(&p.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x, y, c)
		}
	}
	fmt.Fprintf(&p.b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
	ly := p.top + 10 + 18*i
	lx := p.w - p.right + 12
	fmt.Fprintf(&p.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly, lx+18, ly, c, lx+24, ly+4, esc(name))
}

func (p *svgPlot) String() string { return p.b.String() + "</svg>\n" }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e7:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// ThroughputSVG plots committed reservations/s against clients, one curve
// per series with at least two client counts.
func ThroughputSVG(rs []*Result) string {
	groups := map[string][]*Result{}
	var order []string
	for _, r := range rs {
		k := r.Series()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	xmin, xmax, ymax := math.Inf(1), 1.0, 1.0
	for _, r := range rs {
		xmin, xmax, ymax = min(xmin, float64(r.Clients)), max(xmax, float64(r.Clients)), max(ymax, r.Committed)
	}
	if xmin >= xmax {
		xmin, xmax = 1, 2
	}
	p := newPlot("Committed reservations/s vs closed-loop clients", "clients (log scale)", "committed reservations/s", xmin, xmax, 0, ymax*1.1, true)
	i := 0
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		slices.SortFunc(g, func(a, b *Result) int { return a.Clients - b.Clients })
		var xs, ys []float64
		for _, r := range g {
			xs, ys = append(xs, float64(r.Clients)), append(ys, r.Committed)
		}
		p.line(i, k, xs, ys, true)
		i++
	}
	return p.String()
}

// LatencyCDFSVG plots the latency CDF of one operation for the results
// given (one curve each), on a log latency axis.
func LatencyCDFSVG(rs []*Result, op Op, title string) string {
	lo, hi := math.Inf(1), 0.0
	for _, r := range rs {
		for _, s := range r.Ops {
			if s.Op == op.String() && len(s.CDF) > 0 && s.CDF[0] > 0 {
				lo, hi = min(lo, s.CDF[0]), max(hi, s.CDF[len(s.CDF)-1])
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.1, 1
	}
	p := newPlot(title, op.String()+" latency, ms (log scale)", "percentile", lo, hi, 0, 100, true)
	for i, r := range rs {
		for _, s := range r.Ops {
			if s.Op != op.String() || len(s.CDF) == 0 {
				continue
			}
			var xs, ys []float64
			for q, v := range s.CDF {
				if v > 0 {
					xs, ys = append(xs, v), append(ys, float64(q+1))
				}
			}
			p.line(i, fmt.Sprintf("%s, %d clients", r.Series(), r.Clients), xs, ys, false)
		}
	}
	return p.String()
}
