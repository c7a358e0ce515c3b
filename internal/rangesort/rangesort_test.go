package rangesort

import (
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSortMatchesReference: against a reference (a stable sort
// by range), Sort keeps the same multiset, leaves every range contiguous
// and in order, and its bounds delimit exactly the reference's ranges.
func TestSortMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, tc := range []struct {
		name   string
		n      int
		ranges uint32
	}{{"empty", 0, 1}, {"one", 1, 1 << Bits}, {"one range", 500, 1}, {"few ranges", 2000, 7}, {"all ranges", 50000, 1 << Bits}} {
		t.Run(tc.name, func(t *testing.T) {
			type item struct{ key, id uint32 }
			xs := make([]item, tc.n)
			for i := range xs {
				xs[i] = item{r.Uint32N(tc.ranges), uint32(i)}
			}
			want := slices.Clone(xs)
			slices.SortStableFunc(want, func(a, b item) int { return int(a.key) - int(b.key) })
			bounds := Sort(xs, func(x item) uint32 { return x.key })
			for b := range 1 << Bits {
				got, ref := xs[bounds[b]:bounds[b+1]], []item{}
				for _, w := range want {
					if w.key == uint32(b) {
						ref = append(ref, w)
					}
				}
				slices.SortFunc(got, func(a, b item) int { return int(a.id) - int(b.id) })
				if !slices.Equal(got, ref) {
					t.Fatalf("range %d holds %v, want %v", b, got, ref)
				}
			}
			if bounds[0] != 0 || bounds[1<<Bits] != tc.n {
				t.Fatalf("bounds run from %d to %d, want 0 to %d", bounds[0], bounds[1<<Bits], tc.n)
			}
		})
	}
}

// TestImportsNothing keeps the package usable by the planner, which takes
// the standard library only and no I/O, clock or concurrency.
func TestImportsNothing(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			t.Errorf("%s imports %s: the package must import nothing", name, imp.Path.Value)
		}
	}
}
