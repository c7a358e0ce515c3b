package planner

import "slices"

// expirySet orders the live bookings by end for Advance, which forgets
// those that ended, least (end, slot) first.
//
// Why two parts rather than one heap of every booking. Advance only ever
// needs the bookings that end before its next few calls, while each
// admission adds a booking and each release or cancel removes one. In a
// heap of a million bookings every add sifts the new one up and every
// remove sifts another into the hole, with reads and writes of cold
// records and positions on the way: about 7 % of a planner admission at a
// million live (benchmarks/planner/README.md, round 20).
// So only the bookings that end before the horizon sit in the heap
// (near); the others sit in an unordered list (far), where adding is an
// append and removing moves the list's last booking into the hole.
// When Advance reaches the horizon, settle moves it on and pulls into
// the heap the far bookings that end before it.
//
// Invariants: every booking in far ends at or after horizon (near holds
// the others, and may hold some that end later); a record's pos is its
// heap position, or farBit with its index in far. Advance forgets in the
// heap's (end, slot) order exactly as a heap of every booking would:
// whatever ends at or before now is in near once horizon is past now.
// The split and the order of far depend on the calls alone, so the set
// stays deterministic.
type expirySet struct {
	near endHeap
	far  []farItem
	// horizon separates near from far (see above); 0 at first, so that
	// bookings go to far until the first Advance.
	horizon int64
}

// farItem is a far booking: its slot and a copy of its record's end, so
// that settle scans the list without reading the scattered records.
type farItem struct {
	end  int64
	slot uint32
}

// farBit marks a record's pos as an index into far.
const farBit = 1 << 31

// horizonSamples is how many far ends settle looks at to place the
// horizon, and horizonShare the share of them it aims to pull into near:
// each settle scans far once and pulls about an eighth of it, so a
// booking is scanned about eight times before it expires, a sequential
// read each, and near holds about an eighth of the bookings.
const (
	horizonSamples = 64
	horizonShare   = 8
)

// len is the number of bookings in the set.
func (x *expirySet) len() int { return len(x.near) + len(x.far) }

// add files the live slot s by its record's end.
func (x *expirySet) add(t *bookTable, s uint32) {
	if e := t.at(s); e.end >= x.horizon {
		x.toFar(e, s)
		return
	}
	x.near.push(t, s)
}

// toFar appends the live slot s, whose record is e, to far.
func (x *expirySet) toFar(e *entry, s uint32) {
	e.pos = farBit | uint32(len(x.far))
	x.far = append(x.far, farItem{end: e.end, slot: s})
}

// reserve makes room for n more addUnordered calls.
func (x *expirySet) reserve(n int) { x.far = slices.Grow(x.far, n) }

// addUnordered adds the live slot s to far whatever its end, for a load
// that adds many and then calls settle.
func (x *expirySet) addUnordered(t *bookTable, s uint32) { x.toFar(t.at(s), s) }

// settle moves the horizon past now, to about the horizonShare-th
// quantile of the far ends (nextHorizon), unless it lies further already,
// and pulls the far bookings that end before it into near. Advance calls
// it when now reaches the horizon; a load calls it after addUnordered,
// which restores the invariants.
func (x *expirySet) settle(t *bookTable, now int64) {
	x.horizon = max(x.horizon, x.nextHorizon(now))
	x.pull(t)
}

// remove deletes the live slot s.
func (x *expirySet) remove(t *bookTable, s uint32) {
	pos := t.at(s).pos
	if pos&farBit == 0 {
		x.near.remove(t, s)
		return
	}
	x.dropFar(t, int(pos&^farBit))
}

// dropFar removes far[i], moving the last far booking into its place.
func (x *expirySet) dropFar(t *bookTable, i int) {
	n := len(x.far) - 1
	if i != n {
		m := x.far[n]
		x.far[i] = m
		t.at(m.slot).pos = farBit | uint32(i)
	}
	x.far = x.far[:n]
}

// rekeyed moves the live slot s to where its record's end, just
// changed, belongs: in place when it stays on its side of the horizon,
// else out and in again.
func (x *expirySet) rekeyed(t *bookTable, s uint32) {
	e := t.at(s)
	inFar := e.pos&farBit != 0
	switch {
	case inFar && e.end >= x.horizon:
		x.far[e.pos&^farBit].end = e.end
	case !inFar && e.end < x.horizon:
		x.near.fix(t, int(e.pos))
	default:
		x.remove(t, s)
		x.add(t, s)
	}
}

// due returns the least (end, slot) live booking that ends at or before
// now, if there is one.
func (x *expirySet) due(t *bookTable, now int64) (uint32, bool) {
	if now >= x.horizon {
		x.settle(t, now)
	}
	if len(x.near) > 0 && t.at(x.near[0]).end <= now {
		return x.near[0], true
	}
	return 0, false
}

// pull moves the far bookings that end before the horizon into near:
// one by one into a heap larger than what they add, else by one heapify.
func (x *expirySet) pull(t *bookTable) {
	had := len(x.near)
	for i := 0; i < len(x.far); {
		it := x.far[i]
		if it.end >= x.horizon {
			i++
			continue
		}
		x.dropFar(t, i)
		x.near.append(t, it.slot)
	}
	if len(x.near)-had > had {
		x.near.heapify(t)
		return
	}
	for i := had; i < len(x.near); i++ {
		x.near.up(t, i)
	}
}

// nextHorizon is the horizon settle moves to: after now, and at about
// the horizonShare-th quantile of far's ends (a sample of evenly spaced
// items), so that about that share of far is pulled. Either the pull
// takes that share or the horizon lands past now by that quantile, so a
// scan of far comes at most once per call of Advance that reaches the
// horizon, and usually once per eighth of far expired; a sample that
// misjudges the quantile (ends laid out in far in step with the sample's
// spacing) costs scans, never a wrong order.
func (x *expirySet) nextHorizon(now int64) int64 {
	h := now + 1 // Advance keeps now below MaxTime
	n := len(x.far)
	if n == 0 {
		return h
	}
	var buf [horizonSamples]int64
	k := min(n, horizonSamples)
	ends := buf[:k]
	for j := range ends {
		ends[j] = x.far[j*n/k].end
	}
	slices.Sort(ends)
	return max(h, ends[k/horizonShare])
}
