package stepsort

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// reference is es sorted by comparisons.
func reference(es []Edge) []Edge {
	out := slices.Clone(es)
	slices.SortFunc(out, compare)
	return out
}

// TestSortMatchesComparisonSort checks the packed sort and its fallback
// against a comparison sort, on lists that fit a key and lists that do
// not (instants over the whole int64 range, changes of any size, the
// most negative change).
func TestSortMatchesComparisonSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	gens := map[string]func() Edge{
		"bookings": func() Edge {
			d := 1 + r.Int64N(64)
			if r.IntN(2) == 0 {
				d = -d
			}
			return Edge{1_800_000_000_000 + r.Int64N(3_600_000*24*30), d}
		},
		"ties": func() Edge { return Edge{r.Int64N(4), r.Int64N(7) - 3} },
		"wide instants": func() Edge {
			return Edge{int64(r.Uint64()), r.Int64N(1000) - 500}
		},
		"wide changes": func() Edge {
			return Edge{r.Int64N(1000), int64(r.Uint64())}
		},
		"extremes": func() Edge {
			vals := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64}
			return Edge{vals[r.IntN(len(vals))], vals[r.IntN(len(vals))]}
		},
		"zero changes": func() Edge { return Edge{r.Int64N(100), 0} },
	}
	var keys []uint64
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 3, 17, 200, 5000} {
			es := make([]Edge, n)
			for i := range es {
				es[i] = gen()
			}
			want := reference(es)
			keys = Sort(es, keys)
			if !slices.Equal(es, want) {
				t.Fatalf("%s, %d edges: got %v\nwant %v", name, n, es, want)
			}
		}
	}
}

// FuzzSort reads edges from the input (16 bytes each) and compares the
// sort with a comparison sort.
func FuzzSort(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xff, 0, 0, 0, 0, 0, 0, 0x80, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var es []Edge
		for ; len(b) >= 16; b = b[16:] {
			es = append(es, Edge{int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))})
		}
		want := reference(es)
		Sort(es, nil)
		if !slices.Equal(es, want) {
			t.Fatalf("got %v\nwant %v", es, want)
		}
	})
}

// BenchmarkSort sorts one resource's booking edges (200, instants over a
// month) by comparisons and by Sort.
func BenchmarkSort(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	src := make([]Edge, 200)
	for i := range src {
		d := 1 + r.Int64N(64)
		if i%2 == 1 {
			d = -d
		}
		src[i] = Edge{1_800_000_000_000 + r.Int64N(3_600_000*24*30), d}
	}
	es := make([]Edge, len(src))
	b.Run("comparisons", func(b *testing.B) {
		for b.Loop() {
			copy(es, src)
			slices.SortFunc(es, compare)
		}
	})
	b.Run("keys", func(b *testing.B) {
		var keys []uint64
		for b.Loop() {
			copy(es, src)
			keys = Sort(es, keys)
		}
	})
}
