package bridge

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// site builds n reservations of 4 nodes each on a cluster of 4n/10 nodes,
// ten after one another on each group of four nodes, as a Slurm with n
// live reservations would hold them. changed of them are moved to the
// neighbouring group of nodes in the desired set (and back, so the moves
// swap pairs: the worst case for the in-place update check).
func site(n, changed int) ([]Spec, []Reservation) {
	desired := make([]Spec, n)
	observed := make([]Reservation, n)
	groups := max(n/10, 2)
	for i := range n {
		g, slot := i%groups, i/groups
		nodes := func(g int) []string {
			return []string{fmt.Sprintf("n%d", 4*g), fmt.Sprintf("n%d", 4*g+1), fmt.Sprintf("n%d", 4*g+2), fmt.Sprintf("n%d", 4*g+3)}
		}
		start := t0.Add(time.Duration(slot) * time.Hour)
		s := Spec{Name: pfx + strconv.Itoa(i), Nodes: nodes(g), Start: start, End: start.Add(time.Hour), Users: []string{"alice"}}
		observed[i] = Reservation{Name: s.Name, Nodes: s.Nodes, Start: s.Start, End: s.End, Users: s.Users}
		if i < changed {
			s.Nodes = nodes(g ^ 1)
		}
		desired[i] = s
	}
	return desired, observed
}

// BenchmarkReconcile plans a round for a site with n live reservations:
// converged (the steady state every round) and with 10% of them moved.
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, changed := range []int{0, n / 10} {
			desired, observed := site(n, changed)
			b.Run(fmt.Sprintf("live=%d/changed=%d", n, changed), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p := Reconcile(desired, observed, pfx, t0)
					if changed == 0 && !p.Converged() {
						b.Fatal("not converged")
					}
				}
			})
		}
	}
}
