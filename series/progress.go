package series

import (
	"fmt"
	"strings"
	"time"
)

// NoneDecided is the watermark of a series none of whose occurrences has
// been decided yet.
const NoneDecided = int64(minInt64)

// Batch is what the leader proposes for one series in one log entry: the
// occurrences to book, in key order, and the watermark after them.
//
// Invariant: every occurrence with a key <= Through is in this batch, in
// an earlier one, or was passed over (it started before the leader's now,
// too late to book); keys are strictly ascending and <= Through.
type Batch struct {
	Book    []Occurrence
	Through int64
}

// Next returns the occurrences to book next: those with a key above the
// watermark through (the replicated state's record of what has been
// decided), starting at or after now, up to now + Horizon for an endless
// series (the whole series for a bounded one), at most limit of them
// (MaxPerExpansion if limit <= 0 or above it), and the watermark that
// covers them. Occurrences that start before now are passed over: the
// watermark moves past them and they are never booked.
//
// Next is a pure function of the spec, the zone data, through, now and
// limit. A leader that dies after expanding and a new leader that expands
// again from the same watermark propose the same occurrences; Accept
// drops what an earlier entry already decided, so each occurrence is
// booked exactly once however entries are lost, repeated or reordered.
func (s *Series) Next(through, now int64, limit int) Batch {
	if limit <= 0 || limit > s.limits.MaxPerExpansion {
		limit = s.limits.MaxPerExpansion
	}
	windowEnd := int64(maxInt64)
	if s.spec.Horizon != 0 {
		windowEnd = now + s.spec.Horizon
	}
	b := Batch{Through: through}
	// An endless series skips the calendar up to now: what starts before
	// now is passed over anyway, and the watermark covers it once
	// anything after it is walked. A bounded one is walked from the
	// watermark (it has at most MaxOccurrences), so that the watermark
	// reaches its last occurrence even when all of it is in the past.
	skip := through
	if s.spec.Horizon != 0 {
		skip = max(skip, wallKey(now, s.loc))
	}
	s.walk(skip, func(o Occurrence) bool {
		if o.Key <= through {
			return true
		}
		if o.Start > windowEnd {
			return false
		}
		if o.Start >= now {
			b.Book = append(b.Book, o)
		}
		b.Through = o.Key
		return len(b.Book) < limit
	})
	return b
}

// Done reports whether a bounded series has no occurrence left after the
// watermark through. An endless series is never done.
func (s *Series) Done(through int64) bool {
	_, bounded := s.Bounded()
	return bounded && through >= s.lastKey
}

// CheckBatch checks a batch's invariant as far as it can be checked
// without expanding: keys strictly ascending and none above Through. The
// replicated state machine runs it before Accept and refuses a batch that
// fails it.
func CheckBatch(b Batch) error {
	for i, o := range b.Book {
		if o.Key > b.Through {
			return fmt.Errorf("series batch: occurrence %d key %d is above through %d", i, o.Key, b.Through)
		}
		if i > 0 && o.Key <= b.Book[i-1].Key {
			return fmt.Errorf("series batch: occurrence keys not strictly ascending at %d", i)
		}
	}
	return nil
}

// Accept is the replicated side of Next: given a series' watermark and a
// checked batch, it returns the occurrences of the batch that are new
// (above the watermark, in key order) and the watermark after it. A batch
// from an earlier or a stale leader adds only what nobody decided before.
// Accept reads no clock and no zone data.
func Accept(through int64, b Batch) (fresh []Occurrence, next int64) {
	for _, o := range b.Book {
		if o.Key > through {
			fresh = append(fresh, o)
		}
	}
	return fresh, max(through, b.Through)
}

// keyLayout formats an occurrence key in OccurrenceID.
const keyLayout = "20060102T150405"

// OccurrenceID is the reservation ID of an occurrence: the series ID, '@',
// and the occurrence's local wall-clock start, e.g.
// "lab-gpus@20261130T090000". '@' may not appear in a client's ID, so an
// occurrence ID never collides with one; series IDs of up to 112 bytes
// keep it within 128.
func OccurrenceID(seriesID string, key int64) string {
	return seriesID + "@" + time.Unix(key, 0).UTC().Format(keyLayout)
}

// KeyStart returns the instant (Unix ms) at which the occurrence with
// key (Occurrence.Key, the second part of its OccurrenceID) of a series in
// zone starts: its wall-clock time resolved in the zone as expansion
// resolves it. The ledger reports a booked occurrence's start from its ID
// with it, whichever node expanded the batch.
func KeyStart(key int64, zone string) (int64, error) {
	loc, err := LoadZone(zone)
	if err != nil {
		return 0, err
	}
	return instant(time.Unix(key, 0).UTC(), loc), nil
}

// ParseOccurrenceID splits an occurrence's reservation ID into its series
// ID and key.
func ParseOccurrenceID(id string) (seriesID string, key int64, err error) {
	at := strings.LastIndexByte(id, '@')
	if at <= 0 {
		return "", 0, fmt.Errorf("%q is not an occurrence ID (SERIES@YYYYMMDDTHHMMSS)", id)
	}
	t, err := time.Parse(keyLayout, id[at+1:])
	if err != nil {
		return "", 0, fmt.Errorf("%q is not an occurrence ID (SERIES@YYYYMMDDTHHMMSS)", id)
	}
	return id[:at], t.Unix(), nil
}
