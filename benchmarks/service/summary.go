package service

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteSummary writes, for one mix, a Markdown table with a row per
// series (system, label, client mode) in run order and a column per client
// count: the throughput and, beside it, the CPU time per operation of
// every process of the system (load generator and servers). Throughput is
// committed reservations/s for the default mix and operations/s (writes/s)
// for the reserve mix. It writes nothing when rs has no cell of mix.
func WriteSummary(w io.Writer, rs []*Result, mix string) error {
	type series struct {
		name  string
		cells map[int]*Result
	}
	var order []*series
	byName := map[string]*series{}
	var counts []int
	for _, r := range rs {
		if r.Mix != mix {
			continue
		}
		name := r.System
		if r.Label != "" {
			name += " " + r.Label
		}
		if r.Client != "" && !strings.Contains(r.Label, r.Client) {
			name += clientNote(r)
		}
		s := byName[name]
		if s == nil {
			s = &series{name: name, cells: map[int]*Result{}}
			byName[name] = s
			order = append(order, s)
		}
		if s.cells[r.Clients] == nil {
			s.cells[r.Clients] = r
		}
		if !slices.Contains(counts, r.Clients) {
			counts = append(counts, r.Clients)
		}
	}
	if len(order) == 0 {
		return nil
	}
	slices.Sort(counts)
	metric := "committed reservations/s"
	value := func(r *Result) float64 { return r.Committed }
	if mix == "reserve" {
		metric = "writes/s"
		value = func(r *Result) float64 { return r.OpsPerSecond }
	}
	fmt.Fprintf(w, "%s mix: %s · CPU µs per operation, all processes of the system\n\n| system |", mix, metric)
	for _, n := range counts {
		fmt.Fprintf(w, " %d clients |", n)
	}
	fmt.Fprint(w, "\n|---|")
	for range counts {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, s := range order {
		fmt.Fprintf(w, "| %s |", s.name)
		for _, n := range counts {
			if r := s.cells[n]; r != nil {
				fmt.Fprintf(w, " %.0f · %.0f µs |", value(r), r.CPUOwnPerOp+r.CPUServersPerOp)
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w)
	return err
}
