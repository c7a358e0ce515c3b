package fsm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	gbtree "github.com/google/btree"
	tbtree "github.com/tidwall/btree"
)

// The tree benchmarks compare the two B-tree libraries on the shapes the
// state keeps: a million reservation IDs and a million timers, built from
// sorted items as a restore does, then changed at random as the apply path
// does (one deletion and one insertion per operation), and sought.

const treeBenchN = 1_000_000

func benchIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("job-%07d-%016x", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	slices.Sort(ids)
	return ids
}

func benchTimers(n int) []timer {
	r := rand.New(rand.NewPCG(1, 2))
	ts := make([]timer, n)
	for i := range ts {
		ts[i] = timer{at: 1_700_000_000_000 + r.Int64N(30*24*3600*1000), kind: timerKind(r.IntN(2)), id: fmt.Sprintf("job-%07d", i)}
	}
	slices.SortFunc(ts, func(a, b timer) int {
		switch {
		case timerLess(a, b):
			return -1
		case timerLess(b, a):
			return 1
		}
		return 0
	})
	return ts
}

// treeKind is one library with one way of building a tree from sorted items.
type treeKind[T any] struct {
	name string
	// build returns a tree holding items and the operations on it.
	build func(items []T) treeOps[T]
}

type treeOps[T any] struct {
	set    func(T)
	del    func(T)
	seek   func(T, func(T) bool)
	min    func() (T, bool)
	length func() int
}

func googleOps[T any](t *gbtree.BTreeG[T]) treeOps[T] {
	return treeOps[T]{
		set: func(it T) { t.ReplaceOrInsert(it) },
		del: func(it T) { t.Delete(it) },
		seek: func(p T, f func(T) bool) {
			t.AscendGreaterOrEqual(p, gbtree.ItemIteratorG[T](f))
		},
		min:    t.Min,
		length: t.Len,
	}
}

func tidwallOps[T any](t *tbtree.BTreeG[T]) treeOps[T] {
	return treeOps[T]{
		set:    func(it T) { t.Set(it) },
		del:    func(it T) { t.Delete(it) },
		seek:   t.Ascend,
		min:    t.Min,
		length: t.Len,
	}
}

func treeKinds[T any](less func(a, b T) bool, googleDegree int) []treeKind[T] {
	kinds := []treeKind[T]{
		{"google-2pass", func(items []T) treeOps[T] {
			t := gbtree.NewG(googleDegree, less)
			for _, first := range []bool{true, false} {
				for i, it := range items {
					if inFirstPass(i) == first {
						t.ReplaceOrInsert(it)
					}
				}
			}
			return googleOps(t)
		}},
	}
	for _, deg := range []int{16, 32} {
		kinds = append(kinds,
			treeKind[T]{fmt.Sprintf("sortedSet-d%d", deg), func(items []T) treeOps[T] {
				t := newSortedSet(deg, less)
				t.loadSorted(slices.Values(items))
				return tidwallOps(t.t)
			}},
			treeKind[T]{fmt.Sprintf("tidwall-load-d%d", deg), func(items []T) treeOps[T] {
				t := tbtree.NewBTreeGOptions(less, tbtree.Options{NoLocks: true, Degree: deg})
				for _, it := range items {
					t.Load(it)
				}
				return tidwallOps(t)
			}},
			treeKind[T]{fmt.Sprintf("tidwall-2pass-d%d", deg), func(items []T) treeOps[T] {
				t := tbtree.NewBTreeGOptions(less, tbtree.Options{NoLocks: true, Degree: deg})
				for i, it := range items {
					if inFirstPass(i) {
						t.Load(it)
					}
				}
				for i, it := range items {
					if !inFirstPass(i) {
						t.Set(it)
					}
				}
				return tidwallOps(t)
			}},
			treeKind[T]{fmt.Sprintf("tidwall-2pass-hint-d%d", deg), func(items []T) treeOps[T] {
				t := tbtree.NewBTreeGOptions(less, tbtree.Options{NoLocks: true, Degree: deg})
				for i, it := range items {
					if inFirstPass(i) {
						t.Load(it)
					}
				}
				var hint tbtree.PathHint
				for i, it := range items {
					if !inFirstPass(i) {
						t.SetHint(it, &hint)
					}
				}
				return tidwallOps(t)
			}},
		)
	}
	return kinds
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchTree runs the build, churn and seek benchmarks of one item shape.
// fresh makes the i-th new item for the churn (not in items).
func benchTree[T any](b *testing.B, items []T, kinds []treeKind[T], fresh func(i int) T) {
	for _, k := range kinds {
		b.Run("build/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			var ops treeOps[T]
			for b.Loop() {
				ops = k.build(items)
			}
			before := heapInUse()
			runtime.KeepAlive(ops)
			after := heapInUse()
			b.ReportMetric(float64(before-after)/float64(len(items)), "treeB/item")
		})
	}
	for _, k := range kinds {
		ops := k.build(items)
		live := slices.Clone(items)
		news := make([]T, len(items))
		for i := range news {
			news[i] = fresh(i)
		}
		r := rand.New(rand.NewPCG(3, 4))
		n := 0
		b.Run("churn/"+k.name, func(b *testing.B) {
			// One op deletes a random live item and inserts a new one,
			// as a release followed by an admission does.
			b.ReportAllocs()
			for b.Loop() {
				i := r.IntN(len(live))
				ops.del(live[i])
				if n == len(news) {
					news = append(news, fresh(n))
				}
				it := news[n]
				n++
				ops.set(it)
				live[i] = it
			}
			if ops.length() != len(items) {
				b.Fatalf("tree holds %d items, want %d", ops.length(), len(items))
			}
		})
		b.Run("seek10/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				seen := 0
				ops.seek(live[r.IntN(len(live))], func(T) bool {
					seen++
					return seen < 10
				})
			}
		})
	}
}

func BenchmarkTreeIDs(b *testing.B) {
	ids := benchIDs(treeBenchN)
	benchTree(b, ids, treeKinds(func(a, b string) bool { return a < b }, 32), func(i int) string {
		return fmt.Sprintf("new-%09d", i*7919%1_000_000_007)
	})
}

func BenchmarkTreeTimers(b *testing.B) {
	ts := benchTimers(treeBenchN)
	r := rand.New(rand.NewPCG(5, 6))
	benchTree(b, ts, treeKinds(timerLess, 32), func(i int) timer {
		return timer{at: 1_700_000_000_000 + r.Int64N(30*24*3600*1000), id: fmt.Sprintf("new-%09d", i)}
	})
}
