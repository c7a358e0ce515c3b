package fsm

import (
	"slices"
	"strings"

	"github.com/ledgerd/ledgerd/internal/stepsort"
)

// usageEdge is a change of a usage's level by Delta at instant At.
type usageEdge = stepsort.Edge

// usageBuilder collects the usage of many rows as level changes per
// (tenant, resource) and builds each usage once, in one sweep over its
// sorted edges, instead of one add per row: an add walks and updates
// every step its interval covers, which made tracking a million rows
// (restore with limits set) cost seconds. It contributes exactly what
// limitState.account does for each row, so the usages it builds are the
// ones that adding the rows one by one gives (a usage's steps are
// canonical: one step function has one representation).
type usageBuilder struct {
	// keys[i] has the edges lists[i]; index finds i by owner, then by
	// resource (one string per lookup: most rows have one owner, cached
	// in owner/byRes).
	keys  []limitKey
	lists [][]usageEdge
	index map[string]map[string]int
	owner string
	byRes map[string]int
	// edges are recorded here, in one list (keyOf[n] is the key of
	// edges[n]), and moved to lists by merge: appending each to its own
	// key's list grew a million small lists one by one (growslice was a
	// fifth of the scan of a 1M-row restore) and touched a different one
	// for every row.
	edges []usageEdge
	keyOf []int32
}

func newUsageBuilder() *usageBuilder {
	return &usageBuilder{index: make(map[string]map[string]int)}
}

// newUsageBuilderFor returns a builder for about rows rows, with room for
// their edges (two per counted part).
func newUsageBuilderFor(rows int) *usageBuilder {
	b := newUsageBuilder()
	b.edges, b.keyOf = make([]usageEdge, 0, 2*rows), make([]int32, 0, 2*rows)
	return b
}

// addRect is usage.add(s, e, a) on the usage of (owner, resource),
// recorded.
func (b *usageBuilder) addRect(owner, resource string, s, e, a int64) {
	if e <= s || a == 0 {
		return
	}
	if b.byRes == nil || owner != b.owner {
		m, ok := b.index[owner]
		if !ok {
			// The names may be substrings of a stored row: the builder
			// keeps its own copies, not the row.
			owner = strings.Clone(owner)
			m = make(map[string]int)
			b.index[owner] = m
		}
		b.owner, b.byRes = owner, m
	}
	i, ok := b.byRes[resource]
	if !ok {
		i = len(b.keys)
		b.keys = append(b.keys, limitKey{b.owner, strings.Clone(resource)})
		b.lists = append(b.lists, nil)
		b.byRes[b.keys[i].resource] = i
	}
	b.edges = append(b.edges, usageEdge{At: s, Delta: a}, usageEdge{At: e, Delta: -a})
	b.keyOf = append(b.keyOf, int32(i), int32(i))
}

// merge moves the edges this builder and the builders os recorded (their
// names are their own copies) to the lists of their keys. Each list grows
// once, to its final length: appending the builders one by one regrew the
// long lists (a million rows' edges) for each and copied them again every
// time. os are empty afterwards.
func (b *usageBuilder) merge(os ...*usageBuilder) {
	slots := make([][]int, len(os))
	for c, o := range os {
		slots[c] = make([]int, len(o.keys))
		for i, k := range o.keys {
			slots[c][i] = b.slot(k)
		}
	}
	add := make([]int, len(b.keys))
	for _, i := range b.keyOf {
		add[i]++
	}
	for c, o := range os {
		for _, i := range o.keyOf {
			add[slots[c][i]]++
		}
	}
	for j, n := range add {
		if n > 0 {
			b.lists[j] = slices.Grow(b.lists[j], n)
		}
	}
	for n, i := range b.keyOf {
		b.lists[i] = append(b.lists[i], b.edges[n])
	}
	b.edges, b.keyOf = nil, nil
	for c, o := range os {
		for n, i := range o.keyOf {
			j := slots[c][i]
			b.lists[j] = append(b.lists[j], o.edges[n])
		}
		*o = usageBuilder{}
	}
}

// slot returns the index of key k's edges, adding the key (whose names
// the builder then keeps) if it is new.
func (b *usageBuilder) slot(k limitKey) int {
	if b.byRes == nil || k.tenant != b.owner {
		m, ok := b.index[k.tenant]
		if !ok {
			m = make(map[string]int)
			b.index[k.tenant] = m
		}
		b.owner, b.byRes = k.tenant, m
	}
	j, ok := b.byRes[k.resource]
	if !ok {
		j = len(b.keys)
		b.keys = append(b.keys, k)
		b.lists = append(b.lists, nil)
		b.byRes[k.resource] = j
	}
	return j
}

// account records what limitState.account(owner, m, parts, pend, +1)
// adds.
func (b *usageBuilder) account(owner string, m *rowMeta, parts, pend []scanPart) {
	if !countsState(m.state) {
		return
	}
	for _, p := range parts {
		b.addRect(owner, p.resource, m.start, m.end, p.amount)
	}
	if !m.hasPending {
		return
	}
	for _, q := range pend {
		b.addRect(owner, q.resource, m.pendStart, m.pendEnd, q.amount)
		for _, p := range parts {
			if p.resource == q.resource {
				b.addRect(owner, q.resource, max(m.start, m.pendStart), min(m.end, m.pendEnd), -min(p.amount, q.amount))
			}
		}
	}
}

// build returns the usages, without the ones that are 0 everywhere (as
// account deletes them).
func (b *usageBuilder) build() map[limitKey]*usage {
	b.merge()
	out := make(map[limitKey]*usage, len(b.keys))
	var keys []uint64 // the sorts' scratch space
	for i, k := range b.keys {
		keys = stepsort.Sort(b.lists[i], keys)
		if u := usageFromSorted(b.lists[i]); !u.empty() {
			out[k] = u
		}
	}
	return out
}

// usageFromSorted builds the usage whose level changes by Delta at each
// edge (sorted by instant, as stepsort.Sort leaves them): its steps in
// canonical form (sorted, adjacent levels different, the first not 0).
// Levels wrap as add's do, so the outcome equals adding the rectangles
// one by one.
//
// A first walk over the edges counts the steps, so that each chunk is
// allocated once, at its final length: a usage of up to maxChunk steps in
// one chunk, a larger one in chunks of about three quarters of maxChunk
// (the room left lets the inserts after a restore go without splitting
// every chunk).
func usageFromSorted(es []usageEdge) *usage {
	u := newUsage()
	walk := func(step func(at, level int64)) {
		var level, prev int64
		for i := 0; i < len(es); {
			at := es[i].At
			for ; i < len(es) && es[i].At == at; i++ {
				level += es[i].Delta
			}
			if level != prev {
				step(at, level)
				prev = level
			}
		}
	}
	n := 0
	walk(func(int64, int64) { n++ })
	if n == 0 {
		return u
	}
	k := 1
	if n > maxChunk {
		k = (n + maxChunk*3/4 - 1) / (maxChunk * 3 / 4)
	}
	u.chunks = make([]stepChunk, 0, k)
	// Chunk j holds the steps [j*n/k, (j+1)*n/k): sizes differ by one
	// at most.
	i := 0
	walk(func(at, level int64) {
		if j := len(u.chunks); j < k && i == j*n/k {
			u.chunks = append(u.chunks, stepChunk{first: at, steps: stepArray((j+1)*n/k - i)})
		}
		ch := &u.chunks[len(u.chunks)-1]
		ch.steps = append(ch.steps, ustep{at: at, level: level})
		i++
	})
	return u
}
