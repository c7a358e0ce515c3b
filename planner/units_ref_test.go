package planner

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// refUnits is the brute-force reference of the unit layer: a flat list of
// records with unit bitmasks, searched start by start and mapped by trying
// every assignment. It is deliberately dumb and only good for a handful of
// units, records and small times.
type refUnits struct {
	n      int
	origin int64
	recs   []refRec
}

type refRec struct {
	id         string
	start, end int64
	mask       uint32
	movable    bool
	down       bool
}

func (m *refUnits) pinned(r refRec) bool { return r.down || !r.movable || r.start <= m.origin }

// freeMask returns the units no record in recs holds during [s, e).
func (m *refUnits) freeMask(recs []refRec, s, e int64) uint32 {
	busy := uint32(0)
	for _, r := range recs {
		if r.start < e && s < r.end {
			busy |= r.mask
		}
	}
	return (1<<m.n - 1) &^ busy
}

// countFits: the summed free capacity is >= amount at every instant of
// [s, e).
func (m *refUnits) countFits(s, e, amount int64) bool {
	for t := s; t < e; t++ {
		used := 0
		for _, r := range m.recs {
			if r.start <= t && t < r.end {
				used += bits.OnesCount32(r.mask)
			}
		}
		if int64(m.n-used) < amount {
			return false
		}
	}
	return true
}

// fixedFits: amount units are free over [s, e) as things are mapped now.
func (m *refUnits) fixedFits(s, e, amount int64) bool {
	return int64(bits.OnesCount32(m.freeMask(m.recs, s, e))) >= amount
}

type refItem struct {
	start, end int64
	amount     int
}

// remapFits: some assignment of every movable booking plus the new one
// (and plus extra fixed records) to units avoids every overlap, with the
// pinned records where they are.
func (m *refUnits) remapFits(s, e, amount int64, extra []refRec) bool {
	var fixed []refRec
	var items []refItem
	for _, r := range m.recs {
		if m.pinned(r) {
			fixed = append(fixed, r)
		} else {
			items = append(items, refItem{r.start, r.end, bits.OnesCount32(r.mask)})
		}
	}
	fixed = append(fixed, extra...)
	if amount > 0 {
		items = append(items, refItem{s, e, int(amount)})
	}
	var placed []refRec
	var try func(i int) bool
	try = func(i int) bool {
		if i == len(items) {
			return true
		}
		it := items[i]
		all := append(slices.Clone(fixed), placed...)
		free := m.freeMask(all, it.start, it.end)
		for mask := uint32(1); mask < 1<<m.n; mask++ {
			if bits.OnesCount32(mask) != it.amount || mask&^free != 0 {
				continue
			}
			placed = append(placed, refRec{start: it.start, end: it.end, mask: mask})
			if try(i + 1) {
				return true
			}
			placed = placed[:len(placed)-1]
		}
		return false
	}
	return try(0)
}

// horizon is a time after which everything is free.
func (m *refUnits) horizon() int64 {
	h := m.origin
	for _, r := range m.recs {
		h = max(h, r.end)
	}
	return h
}

// earliest returns the first start in [nb, latest] that maps under the
// policy; latest is capped at the horizon (every later start maps).
func (m *refUnits) earliest(amount, d, nb, latest int64, policy UnitPolicy) (int64, bool) {
	for s := nb; s <= latest; s++ {
		if s > m.horizon() {
			return s, true
		}
		if m.fixedFits(s, s+d, amount) {
			return s, true
		}
		if policy == UnitRemap && m.countFits(s, s+d, amount) && m.remapFits(s, s+d, amount, nil) {
			return s, true
		}
	}
	return 0, false
}

func (m *refUnits) countEarliest(amount, d, nb, latest int64) (int64, bool) {
	for s := nb; s <= latest; s++ {
		if s > m.horizon() || m.countFits(s, s+d, amount) {
			return s, true
		}
	}
	return 0, false
}

func (m *refUnits) advance(now int64) {
	if now <= m.origin {
		return
	}
	m.origin = now
	m.recs = slices.DeleteFunc(m.recs, func(r refRec) bool { return r.end <= now })
}

// loadRef copies the implementation's state into a reference.
func loadRef(u *UnitSchedule) *refUnits {
	m := &refUnits{n: len(u.names), origin: u.origin}
	for _, r := range u.books {
		m.recs = append(m.recs, refRec{id: r.id, start: r.start, end: r.end, mask: maskOf(r.units), movable: r.movable})
	}
	for _, r := range u.downs {
		m.recs = append(m.recs, refRec{id: r.id, start: r.start, end: r.end, mask: maskOf(r.units), down: true})
	}
	slices.SortFunc(m.recs, func(a, b refRec) int { return strings.Compare(a.id, b.id) })
	return m
}

func maskOf(units []int32) uint32 {
	m := uint32(0)
	for _, x := range units {
		m |= 1 << x
	}
	return m
}

// checkUnits verifies the invariants of a UnitSchedule: every per-unit
// schedule sorted and disjoint, every record on exactly its units, the
// global timeline equal to the unit count minus the units held at every
// instant, no record ended before the origin.
func checkUnits(u *UnitSchedule) error {
	held := map[*urec]int{}
	for x := range u.lines {
		var l []span
		u.lines[x].spans.all(func(sp span) { l = append(l, sp) })
		if len(l) != u.lines[x].spans.n {
			return fmt.Errorf("unit %s: %d spans, counted %d", u.names[x], len(l), u.lines[x].spans.n)
		}
		for _, ch := range u.lines[x].spans.chunks {
			if len(ch) == 0 || len(ch) > chunkMax {
				return fmt.Errorf("unit %s: chunk of %d spans", u.names[x], len(ch))
			}
		}
		for i, sp := range l {
			if sp.start >= sp.end {
				return fmt.Errorf("unit %s: empty span of %q", u.names[x], sp.r.id)
			}
			if i > 0 && l[i-1].end > sp.start {
				return fmt.Errorf("unit %s: %q [%d,%d) overlaps %q [%d,%d)", u.names[x], l[i-1].r.id, l[i-1].start, l[i-1].end, sp.r.id, sp.start, sp.end)
			}
			if sp.start != sp.r.start || sp.end != sp.r.end {
				return fmt.Errorf("unit %s: span of %q out of step with its record", u.names[x], sp.r.id)
			}
			if _, ok := slices.BinarySearch(sp.r.units, int32(x)); !ok {
				return fmt.Errorf("unit %s holds %q, which does not list it", u.names[x], sp.r.id)
			}
			if sp.end <= u.origin {
				return fmt.Errorf("unit %s: %q ended at %d before origin %d", u.names[x], sp.r.id, sp.end, u.origin)
			}
			held[sp.r]++
		}
	}
	recs := 0
	for _, set := range []map[string]*urec{u.books, u.downs} {
		for id, r := range set {
			recs++
			if r.id != id || r.gone {
				return fmt.Errorf("record %q: bad bookkeeping", id)
			}
			if held[r] != len(r.units) || len(r.units) == 0 || !slices.IsSorted(r.units) {
				return fmt.Errorf("record %q: on %d unit(s), lists %v", id, held[r], r.units)
			}
		}
	}
	if recs != len(held) {
		return fmt.Errorf("%d records held by units, %d live", len(held), recs)
	}
	indexed := 0
	for c := range u.recs.classes {
		var list []*urec
		u.recs.classes[c].all(func(r *urec) { list = append(list, r) })
		for i, r := range list {
			if held[r] == 0 || durClass(r) != c || (i > 0 && list[i-1].start > r.start) {
				return fmt.Errorf("record index: class %d entry %d (%q) misplaced or dead", c, i, r.id)
			}
			indexed++
		}
	}
	if indexed != recs {
		return fmt.Errorf("record index holds %d records, %d live", indexed, recs)
	}
	// Global profile: compare at every boundary.
	var pts []int64
	pts = append(pts, u.origin)
	for r := range held {
		pts = append(pts, max(r.start, u.origin), r.end)
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	for _, t := range pts {
		want := int64(len(u.names))
		for r := range held {
			if r.start <= t && t < r.end {
				want -= int64(len(r.units))
			}
		}
		if got := u.global.MinFree(t, t+1); got != want {
			return fmt.Errorf("global free at %d = %d, units say %d", t, got, want)
		}
	}
	return nil
}
