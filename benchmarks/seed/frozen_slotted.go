// This file is a frozen copy of planner/slotted.go as of commit ee65182,
// the slotted-time baseline the planner's speed is compared against. The
// experiment runs it side by side with the current slotted timeline
// (contender "slotted-N@ee65182") to show that the baseline was not made
// slower. Only names changed (package, type, the planner package qualifiers);
// its logic must not be edited.

package seed

import (
	"fmt"
	"github.com/ledgerd/ledgerd/planner"
	"math"
)

// frozenMaxSlots bounds the ring size so that a misconfigured slot count is
// reported as an error instead of exhausting memory (2^27 slots = 1 GiB).
const frozenMaxSlots = 1 << 27

// frozenSlotted is the slotted-time baseline of Schneider & Linnert (§4):
// time is cut into fixed slots of length SlotLen, slot i covering
// [base+i*SlotLen, base+(i+1)*SlotLen) where base is the origin the timeline
// was created with. A ring buffer of Slots slots covers the maximum
// book-ahead time; each slot holds the free capacity that every instant of
// the slot is guaranteed to have.
//
// A booking counts in full in every slot it touches, so a booking [s, e)
// that starts or ends inside a slot occupies the whole slot: the timeline
// over-reserves (internal fragmentation) and is therefore conservative, it
// never admits anything an exact timeline would reject. With SlotLen = 1 it
// decides exactly like a per-time-unit model.
//
// Time past the horizon (the end of the last slot of the ring) is described
// by a single tail value. Only open-ended operations (end = planner.MaxTime), which
// is how capacity changes reach a timeline, touch the tail; every other
// request that ends past the horizon is refused: Earliest reports no start
// and Book returns an error wrapping planner.ErrNoCapacity. Advance rotates the ring:
// the slots that fall wholly before the new origin are recycled as new slots
// at the far end, initialised from the tail.
//
// Invariant: len(free) == slots; free[(head+k)%slots] is the free capacity of
// absolute slot headIdx+k for 0 <= k < slots; headIdx is the slot that holds
// origin; base+ (headIdx+slots)*slotLen does not overflow.
type frozenSlotted struct {
	base    int64 // start of absolute slot 0
	slotLen int64
	slots   int64
	origin  int64
	headIdx int64   // absolute index of the slot containing origin
	head    int64   // ring position of slot headIdx
	free    []int64 // ring of per-slot free capacity
	tail    int64   // free capacity of every instant at or after the horizon
}

var _ planner.Timeline = (*frozenSlotted)(nil)

// newFrozenSlotted returns a slotted timeline with capacity free
// everywhere, slots slots of length slotLen, the first one starting at
// origin. It returns a *FieldError (wrapping ErrInvalid) naming the bad
// argument when capacity < 0, slotLen <= 0, slots <= 0, slots is too large
// to allocate, or origin+slots*slotLen overflows.
func newFrozenSlotted(capacity, origin, slotLen, slots int64) (*frozenSlotted, error) {
	switch {
	case capacity < 0:
		return nil, &planner.FieldError{Field: "capacity", Reason: "must be >= 0"}
	case slotLen <= 0:
		return nil, &planner.FieldError{Field: "slotLen", Reason: "must be > 0"}
	case slots <= 0:
		return nil, &planner.FieldError{Field: "slots", Reason: "must be > 0"}
	case slots > frozenMaxSlots:
		return nil, &planner.FieldError{Field: "slots", Reason: fmt.Sprintf("must be <= %d", frozenMaxSlots)}
	case slotLen > (math.MaxInt64-1)/slots:
		return nil, &planner.FieldError{Field: "slotLen", Reason: "slots*slotLen overflows int64"}
	case origin > math.MaxInt64-1-slots*slotLen:
		return nil, &planner.FieldError{Field: "origin", Reason: "origin+slots*slotLen overflows int64"}
	}
	s := &frozenSlotted{
		base:    origin,
		slotLen: slotLen,
		slots:   slots,
		origin:  origin,
		free:    make([]int64, slots),
		tail:    capacity,
	}
	for i := range s.free {
		s.free[i] = capacity
	}
	return s, nil
}

// frozenFactory returns a planner.TimelineFactory of frozen slotted
// timelines; it panics on an invalid configuration, which Config.Validate
// rules out first (it checks the same one on the current slotted code).
func frozenFactory(slotLen, slots int64) planner.TimelineFactory {
	return func(capacity, origin int64) planner.Timeline {
		s, err := newFrozenSlotted(capacity, origin, slotLen, slots)
		if err != nil {
			panic(err)
		}
		return s
	}
}

// SlotLen returns the length of one slot.
func (s *frozenSlotted) SlotLen() int64 { return s.slotLen }

// Slots returns the number of slots in the ring.
func (s *frozenSlotted) Slots() int64 { return s.slots }

// Horizon returns the end of the last slot: requests must end at or before
// it (or be open-ended) to be admitted.
func (s *frozenSlotted) Horizon() int64 { return s.slotStart(s.headIdx + s.slots) }

// slotStart is the start of absolute slot idx (callers keep it in range).
func (s *frozenSlotted) slotStart(idx int64) int64 { return s.base + idx*s.slotLen }

// slotOf returns the absolute slot containing t; t >= base.
func (s *frozenSlotted) slotOf(t int64) int64 { return (t - s.base) / s.slotLen }

// slotEndIdx returns the index one past the last slot touched by [.., end);
// end > base.
func (s *frozenSlotted) slotEndIdx(end int64) int64 {
	return (end - s.base + s.slotLen - 1) / s.slotLen
}

// at returns the ring position of absolute slot idx, which must lie in
// [headIdx, headIdx+slots).
func (s *frozenSlotted) at(idx int64) int64 {
	p := s.head + (idx - s.headIdx)
	if p >= s.slots {
		p -= s.slots
	}
	return p
}

// Earliest returns the earliest start s in [notBefore, latestStart] such that
// every slot touched by [s, s+duration) has at least amount free and the
// interval ends at or before the horizon.
//
// Candidate starts, as in the paper's discretised search: notBefore itself
// (the slot containing it counts in full, so a start inside a slot is never
// rounded down to an earlier instant, and is not rounded up either, which
// would waste the rest of that slot), then every slot boundary after
// notBefore up to latestStart. Any other start touches a superset of the
// slots of one of these candidates, so nothing is lost by skipping it.
// The search walks the ring once, keeping the current run of slots with
// enough free capacity, which is the slot analogue of the paper's Fig. 4.
func (s *frozenSlotted) Earliest(amount, duration, notBefore, latestStart int64) (int64, bool) {
	if amount <= 0 || duration <= 0 || notBefore > latestStart {
		return 0, false
	}
	if notBefore < s.origin {
		notBefore = s.origin
		if notBefore > latestStart {
			return 0, false
		}
	}
	horizon := s.Horizon()
	if notBefore >= horizon || duration > horizon-notBefore {
		return 0, false
	}
	first := s.slotOf(notBefore)
	endIdx := s.headIdx + s.slots
	// need(k) is the number of slots a candidate starting in slot k touches.
	needFirst := s.slotEndIdx(notBefore+duration) - first
	needOther := (duration + s.slotLen - 1) / s.slotLen
	runStart := first
	for j := first; j < endIdx; j++ {
		if s.free[s.at(j)] < amount {
			runStart = j + 1
			if runStart > first && s.slotStart(runStart) > latestStart {
				return 0, false
			}
			continue
		}
		need := needOther
		if runStart == first {
			need = needFirst
		}
		if j-runStart+1 >= need {
			if runStart == first {
				return notBefore, true
			}
			return s.slotStart(runStart), true
		}
	}
	return 0, false
}

// span converts [start, end) into the absolute slots it touches and whether
// it reaches the tail. It reports a *FieldError for an empty interval or a
// start before the origin, and an error wrapping planner.ErrNoCapacity (book) or a
// *FieldError (release) for a finite end past the horizon.
func (s *frozenSlotted) span(op string, start, end int64) (from, to int64, tail bool, err error) {
	if end <= start {
		return 0, 0, false, fmt.Errorf("slotted %s: %w", op, &planner.FieldError{Field: "end", Reason: "must be > start"})
	}
	if start < s.origin {
		return 0, 0, false, fmt.Errorf("slotted %s: %w", op, &planner.FieldError{Field: "start", Reason: fmt.Sprintf("%d is before the timeline origin %d", start, s.origin)})
	}
	horizon := s.Horizon()
	endIdx := s.headIdx + s.slots
	if end == planner.MaxTime {
		tail = true
		end = horizon
	} else if end > horizon {
		if op == "book" {
			return 0, 0, false, fmt.Errorf("slotted book [%d,%d): ends after the book-ahead horizon %d: %w", start, end, horizon, planner.ErrNoCapacity)
		}
		return 0, 0, false, fmt.Errorf("slotted %s: %w", op, &planner.FieldError{Field: "end", Reason: fmt.Sprintf("%d is after the book-ahead horizon %d and not open-ended", end, horizon)})
	}
	if start >= horizon {
		return endIdx, endIdx, tail, nil
	}
	return s.slotOf(start), s.slotEndIdx(end), tail, nil
}

// Book subtracts amount from every slot touched by [start, end), and from
// the tail when end is planner.MaxTime. It returns an error wrapping planner.ErrNoCapacity
// (and changes nothing) if one of them has less than amount free or the
// interval ends past the horizon, and a *FieldError for amount <= 0, an empty
// interval or a start before the origin.
func (s *frozenSlotted) Book(start, end, amount int64) error {
	if amount <= 0 {
		return fmt.Errorf("slotted book: %w", &planner.FieldError{Field: "amount", Reason: "must be > 0"})
	}
	from, to, tail, err := s.span("book", start, end)
	if err != nil {
		return err
	}
	if tail && s.tail < amount {
		return fmt.Errorf("slotted book [%d,%d): %d free after the horizon, %d wanted: %w", start, end, s.tail, amount, planner.ErrNoCapacity)
	}
	for i := from; i < to; i++ {
		if f := s.free[s.at(i)]; f < amount {
			return fmt.Errorf("slotted book [%d,%d): slot at %d has %d free, %d wanted: %w", start, end, s.slotStart(i), f, amount, planner.ErrNoCapacity)
		}
	}
	for i := from; i < to; i++ {
		s.free[s.at(i)] -= amount
	}
	if tail {
		s.tail -= amount
	}
	return nil
}

// Release adds amount to every slot touched by [start, end), and to the tail
// when end is planner.MaxTime; it is the exact inverse of Book over the same
// interval. It returns a *FieldError (and changes nothing) for amount <= 0, an
// empty interval, a start before the origin, a finite end past the horizon,
// or a sum that would overflow int64.
func (s *frozenSlotted) Release(start, end, amount int64) error {
	if amount <= 0 {
		return fmt.Errorf("slotted release: %w", &planner.FieldError{Field: "amount", Reason: "must be > 0"})
	}
	from, to, tail, err := s.span("release", start, end)
	if err != nil {
		return err
	}
	overflow := tail && s.tail > math.MaxInt64-amount
	for i := from; i < to && !overflow; i++ {
		overflow = s.free[s.at(i)] > math.MaxInt64-amount
	}
	if overflow {
		return fmt.Errorf("slotted release: %w", &planner.FieldError{Field: "amount", Reason: "free capacity would overflow int64"})
	}
	for i := from; i < to; i++ {
		s.free[s.at(i)] += amount
	}
	if tail {
		s.tail += amount
	}
	return nil
}

// MinFree returns the smallest free capacity of the slots touched by
// [start, end) (and of the tail if end is past the horizon). Parts before
// the origin are ignored; an empty interval is treated as the single instant
// start.
func (s *frozenSlotted) MinFree(start, end int64) int64 {
	if start < s.origin {
		start = s.origin
	}
	if end <= start {
		if start == planner.MaxTime {
			return s.tail
		}
		end = start + 1
	}
	horizon := s.Horizon()
	m := int64(math.MaxInt64)
	if end > horizon {
		m = s.tail
		end = horizon
	}
	if start >= end {
		return m
	}
	for i, to := s.slotOf(start), s.slotEndIdx(end); i < to; i++ {
		m = min(m, s.free[s.at(i)])
	}
	return m
}

// Blocks returns the slot-granular free profile over [from, to), clipped to
// that window and to the origin, with equal neighbouring slots merged into
// one block (canonical form). Time past the horizon appears as one block with
// the tail's free capacity ending at planner.MaxTime (or at to).
func (s *frozenSlotted) Blocks(from, to int64) []planner.Block {
	if from < s.origin {
		from = s.origin
	}
	if to <= from {
		return nil
	}
	var out []planner.Block
	add := func(b planner.Block) {
		if n := len(out); n > 0 && out[n-1].Free == b.Free && out[n-1].End == b.Start {
			out[n-1].End = b.End
			return
		}
		out = append(out, b)
	}
	horizon := s.Horizon()
	if from < horizon {
		end := min(to, horizon)
		for i, last := s.slotOf(from), s.slotEndIdx(end); i < last; i++ {
			add(planner.Block{
				Start: max(from, s.slotStart(i)),
				End:   min(end, s.slotStart(i+1)),
				Free:  s.free[s.at(i)],
			})
		}
	}
	if to > horizon {
		add(planner.Block{Start: max(from, horizon), End: to, Free: s.tail})
	}
	return out
}

// Advance moves the origin to now (if later) and rotates the ring: slots
// that end at or before now are dropped and reused at the far end with the
// tail's free capacity, so the horizon moves forward by whole slots. If the
// new horizon would overflow int64 the ring stops rotating (the origin still
// moves): only the reachable part of the horizon is kept.
func (s *frozenSlotted) Advance(now int64) {
	if now <= s.origin {
		return
	}
	newHead := s.slotOf(now)
	// Keep base+(newHead+slots)*slotLen representable (for a negative
	// base the bound is conservative, avoiding overflow in computing it).
	room := int64(math.MaxInt64 - 1)
	if s.base >= 0 {
		room -= s.base
	}
	if limit := room/s.slotLen - s.slots; newHead > limit {
		newHead = limit
	}
	if newHead > s.headIdx {
		shift := newHead - s.headIdx
		if shift >= s.slots {
			for i := range s.free {
				s.free[i] = s.tail
			}
			s.head = 0
		} else {
			for k := int64(0); k < shift; k++ {
				s.free[s.head] = s.tail
				s.head++
				if s.head == s.slots {
					s.head = 0
				}
			}
		}
		s.headIdx = newHead
	}
	s.origin = now
	if h := s.Horizon(); s.origin > h {
		// Only possible when rotation hit the int64 limit.
		s.origin = h
	}
}

// Origin returns the earliest instant the timeline still describes.
func (s *frozenSlotted) Origin() int64 { return s.origin }

// Len returns the number of slots kept: the ring always holds all of them,
// which is the memory cost the paper attributes to slotted time.
func (s *frozenSlotted) Len() int { return int(s.slots) }
