package sortedlist

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/btree"
)

// kv is an item ordered by k alone, so that a replacement shows in v.
type kv struct{ k, v int }

func kvLess(a, b kv) bool { return a.k < b.k }

// checkList fails t unless l's chunks are well formed and hold exactly
// want, in order.
func checkList(t *testing.T, l *List[kv], want []kv) {
	t.Helper()
	if l.Len() != len(want) {
		t.Fatalf("Len %d, want %d", l.Len(), len(want))
	}
	if len(l.chunks) != len(l.firsts) {
		t.Fatalf("%d chunks, %d firsts", len(l.chunks), len(l.firsts))
	}
	var got []kv
	for i, c := range l.chunks {
		if len(c.items) == 0 || len(c.items) > maxChunk {
			t.Fatalf("chunk %d holds %d items", i, len(c.items))
		}
		if cap(c.items) > maxChunk+1 {
			t.Fatalf("chunk %d has room for %d items", i, cap(c.items))
		}
		if l.firsts[i] != c.items[0] {
			t.Fatalf("firsts[%d] = %v, chunk starts with %v", i, l.firsts[i], c.items[0])
		}
		got = append(got, c.items...)
	}
	for i := 1; i < len(got); i++ {
		if !kvLess(got[i-1], got[i]) {
			t.Fatalf("items %d and %d out of order: %v, %v", i-1, i, got[i-1], got[i])
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("holds %v\nwant %v", got, want)
	}
	var walked []kv
	l.Ascend(func(it kv) bool { walked = append(walked, it); return true })
	if !slices.Equal(walked, want) {
		t.Fatalf("Ascend walks %v\nwant %v", walked, want)
	}
	m, ok := l.Min()
	if ok != (len(want) > 0) || (ok && m != want[0]) {
		t.Fatalf("Min = %v, %v; want the first of %v", m, ok, want)
	}
}

// items returns the reference tree's items in order.
func items(tr *btree.BTreeG[kv]) []kv {
	var out []kv
	tr.Ascend(func(it kv) bool { out = append(out, it); return true })
	return out
}

// TestListMatchesBTree runs random operations on a List and on the
// B-tree it replaces, with clones taken and changed on both sides, and
// compares every answer and the contents after each step.
func TestListMatchesBTree(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		keys := []int{50, 2_000, 100_000}[seed%3]
		type pair struct {
			l   *List[kv]
			ref *btree.BTreeG[kv]
		}
		sides := []pair{{New(kvLess), btree.NewG(8, kvLess)}}
		steps := 6_000
		next := 0 // the next key of an ascending run of Appends
		for step := range steps {
			p := sides[rng.IntN(len(sides))]
			k := rng.IntN(keys)
			switch op := rng.IntN(20); {
			case op < 6:
				it := kv{k, step}
				old, had := p.l.ReplaceOrInsert(it)
				rold, rhad := p.ref.ReplaceOrInsert(it)
				if had != rhad || old != rold {
					t.Fatalf("seed %d step %d: ReplaceOrInsert(%v) = %v, %v; B-tree %v, %v", seed, step, it, old, had, rold, rhad)
				}
			case op < 10:
				// Runs of ascending keys, now and then one that is not.
				if rng.IntN(8) == 0 {
					next = rng.IntN(keys)
				}
				it := kv{next, step}
				next += 1 + rng.IntN(3)
				p.l.Append(it)
				p.ref.ReplaceOrInsert(it)
			case op < 15:
				old, had := p.l.Delete(kv{k: k})
				rold, rhad := p.ref.Delete(kv{k: k})
				if had != rhad || old != rold {
					t.Fatalf("seed %d step %d: Delete(%d) = %v, %v; B-tree %v, %v", seed, step, k, old, had, rold, rhad)
				}
			case op < 18:
				m, ok := p.l.Min()
				rm, rok := p.ref.Min()
				if ok != rok || m != rm {
					t.Fatalf("seed %d step %d: Min = %v, %v; B-tree %v, %v", seed, step, m, ok, rm, rok)
				}
				if ok {
					p.l.Delete(m)
					p.ref.Delete(m)
				}
			case op < 19:
				var got, want []kv
				n := rng.IntN(40)
				p.l.AscendGreaterOrEqual(kv{k: k}, func(it kv) bool { got = append(got, it); return len(got) < n })
				p.ref.AscendGreaterOrEqual(kv{k: k}, func(it kv) bool { want = append(want, it); return len(want) < n })
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: AscendGreaterOrEqual(%d) walks %v, B-tree %v", seed, step, k, got, want)
				}
			default:
				if len(sides) < 4 {
					sides = append(sides, pair{p.l.Clone(), p.ref.Clone()})
				}
			}
			if step%97 == 0 || step == steps-1 {
				for _, s := range sides {
					checkList(t, s.l, items(s.ref))
				}
			}
		}
	}
}

// TestAppendSorted checks that sorted Appends fill chunks to fillChunk
// and that a list built so takes later inserts and removals.
func TestAppendSorted(t *testing.T) {
	l := New(kvLess)
	var want []kv
	for i := range 10_000 {
		l.Append(kv{2 * i, i})
		want = append(want, kv{2 * i, i})
	}
	checkList(t, l, want)
	if got, min := len(l.chunks), (10_000+fillChunk-1)/fillChunk; got != min {
		t.Fatalf("sorted Appends made %d chunks, want %d", got, min)
	}
	for i := range 10_000 {
		l.ReplaceOrInsert(kv{2*i + 1, -i})
	}
	for i := range 5_000 {
		l.Delete(kv{k: 4 * i})
	}
	want = want[:0]
	for k := range 20_000 {
		switch {
		case k%2 == 1:
			want = append(want, kv{k, -(k / 2)})
		case k%4 == 2:
			want = append(want, kv{k, k / 2})
		}
	}
	checkList(t, l, want)
}

// appended returns a list of the items {i, i} for i < n, appended in
// order, and those items.
func appended(n int) (*List[kv], []kv) {
	l := New(kvLess)
	var want []kv
	for i := range n {
		l.Append(kv{i, i})
		want = append(want, kv{i, i})
	}
	return l, want
}

// TestCloneIsolation checks that a clone keeps its items while the
// original changes, and the other way round, whichever changes first.
func TestCloneIsolation(t *testing.T) {
	for _, originalFirst := range []bool{true, false} {
		l, want := appended(3_000)
		c := l.Clone()
		change := func(x *List[kv]) {
			for i := 0; i < 3_000; i += 3 {
				x.Delete(kv{k: i})
				x.ReplaceOrInsert(kv{i + 1, -1})
			}
			x.Append(kv{5_000, 0})
		}
		if originalFirst {
			change(l)
			checkList(t, c, want)
			change(c)
		} else {
			change(c)
			checkList(t, l, want)
			change(l)
		}
		checkList(t, l, items(fromList(c)))
	}
}

// fromList copies l into a B-tree.
func fromList(l *List[kv]) *btree.BTreeG[kv] {
	tr := btree.NewG(8, kvLess)
	l.Ascend(func(it kv) bool { tr.ReplaceOrInsert(it); return true })
	return tr
}

// TestCloneWalkedConcurrently walks a clone on another goroutine while
// the original changes (what a snapshot does); under the race detector
// any write to a chunk the clone can see fails it.
func TestCloneWalkedConcurrently(t *testing.T) {
	l, want := appended(20_000)
	c := l.Clone()
	done := make(chan []kv)
	go func() {
		var got []kv
		c.Ascend(func(it kv) bool { got = append(got, it); return true })
		done <- got
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		k := rng.IntN(30_000)
		if rng.IntN(2) == 0 {
			l.Delete(kv{k: k})
		} else {
			l.ReplaceOrInsert(kv{k, -k})
		}
	}
	if got := <-done; !slices.Equal(got, want) {
		t.Fatalf("the clone walked %d items, want the %d it was cloned with", len(got), len(want))
	}
}

// FuzzList drives a List and the reference B-tree with the operations
// encoded in the input and compares them.
func FuzzList(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(slices.Repeat([]byte{1, 200}, 300))
	f.Fuzz(func(t *testing.T, ops []byte) {
		l, ref := New(kvLess), btree.NewG(4, kvLess)
		var clones []*List[kv]
		var refs []*btree.BTreeG[kv]
		for i := 0; i+1 < len(ops); i += 2 {
			k := int(ops[i+1]) | int(ops[i]/5)<<8
			switch ops[i] % 5 {
			case 0, 1:
				l.ReplaceOrInsert(kv{k, i})
				ref.ReplaceOrInsert(kv{k, i})
			case 2:
				l.Append(kv{k, i})
				ref.ReplaceOrInsert(kv{k, i})
			case 3:
				_, had := l.Delete(kv{k: k})
				_, rhad := ref.Delete(kv{k: k})
				if had != rhad {
					t.Fatalf("Delete(%d) = %v, B-tree %v", k, had, rhad)
				}
			case 4:
				if len(clones) < 3 {
					clones, refs = append(clones, l.Clone()), append(refs, ref.Clone())
				}
			}
		}
		checkList(t, l, items(ref))
		for i := range clones {
			checkList(t, clones[i], items(refs[i]))
		}
	})
}
