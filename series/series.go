package series

import (
	"slices"
	"time"

	"github.com/teambition/rrule-go"
)

// Series is a compiled Spec: the rule, the zone and the limits, ready to
// expand. It is immutable and safe for concurrent use.
type Series struct {
	spec    Spec
	rule    *rule
	start   civil
	loc     *time.Location
	rr      *rrule.RRule // anchored at the floating DTSTART
	limits  Limits
	untilMs int64 // inclusive; maxInt64 without UNTIL
	// firstKey is the first occurrence's key; lastKey and count are set
	// for a bounded series only.
	firstKey, lastKey int64
	count             int
	// fullWalk turns off iteratorFrom's skipping ahead (tests compare).
	fullWalk bool
}

// Occurrence is one start of a series.
type Occurrence struct {
	// Key is the occurrence's identity within its series: its local
	// wall-clock start, as seconds since 1970-01-01T00:00:00 read as if
	// the wall clock were UTC. It does not depend on zone rules, so an
	// occurrence keeps its identity even if a newer zone database moves
	// its instant (see OccurrenceID).
	Key int64
	// Start is the instant it starts, in Unix ms.
	Start int64
}

// Spec returns the series' spec.
func (s *Series) Spec() Spec { return s.spec }

// Location returns the series' zone, from the embedded database.
func (s *Series) Location() *time.Location { return s.loc }

// Bounded reports whether the series has a last occurrence (COUNT, UNTIL
// or an end), and if so how many occurrences it has.
func (s *Series) Bounded() (n int, ok bool) { return s.count, s.spec.bounded(s.rule) }

// Duration returns each occurrence's length in ms.
func (s *Series) Duration() int64 { return s.spec.Duration }

// slack is more than any offset change of a zone (the largest, Pacific/
// Apia in 2011, was a day): two wall-clock times further apart than this
// resolve to instants in the same order.
const slack = 2 * 86400

// walk calls fn with each occurrence in key order (wall-clock order)
// until fn returns false or the series ends. An occurrence is a time the
// rule yields whose instant is not before NotBefore, not after UNTIL, not
// at or after End, and not equal to the instant of an earlier one (a
// wall time in a spring-forward gap can resolve onto the next hour);
// COUNT counts occurrences. Keys below skipBelow-slack are not resolved
// to instants and not passed to fn, unless COUNT needs them; pass
// minInt64 to walk the whole series.
//
// Instants follow keys except in a spring-forward gap, where a gap time
// (read with the offset before the gap) can start after the next wall
// hour's; never by more than slack.
func (s *Series) walk(skipBelow int64, fn func(Occurrence) bool) {
	stopKey := int64(maxInt64)
	if s.untilMs != maxInt64 {
		stopKey = min(stopKey, wallKey(s.untilMs, s.loc)+slack)
	}
	if s.spec.End != 0 {
		stopKey = min(stopKey, wallKey(s.spec.End, s.loc)+slack)
	}
	// Keys below lo are neither resolved nor passed to fn. Under COUNT
	// every member must be counted, so lo stays at the beginning.
	lo := int64(minInt64)
	if s.rule.count == 0 && skipBelow > minInt64+slack {
		lo = skipBelow - slack
	}
	// The calendar can be skipped up to lo, and up to NotBefore (less
	// slack) in any case: nothing before it is a member or counts.
	from := lo
	if s.spec.NotBefore != 0 {
		from = max(from, wallKey(s.spec.NotBefore, s.loc)-slack)
	}
	type seen struct{ key, start int64 }
	var recent []seen
	counted := 0
	next := s.iteratorFrom(from)
	for {
		w, ok := next()
		if !ok {
			return
		}
		key := w.Unix()
		if key > stopKey {
			return
		}
		if key < lo {
			continue
		}
		ms := instant(w, s.loc)
		switch {
		case s.spec.NotBefore != 0 && ms < s.spec.NotBefore,
			s.spec.End != 0 && ms >= s.spec.End,
			ms > s.untilMs:
			continue
		}
		dup := false
		keep := recent[:0]
		for _, r := range recent {
			if r.key >= key-slack {
				keep = append(keep, r)
				dup = dup || r.start == ms
			}
		}
		recent = keep
		if dup {
			continue
		}
		recent = append(recent, seen{key, ms})
		counted++
		if !fn(Occurrence{Key: key, Start: ms}) {
			return
		}
		if s.rule.count != 0 && counted == s.rule.count {
			return
		}
	}
}

// wallKey is the key (wall clock read as UTC, in seconds) of the instant
// ms in loc.
func wallKey(ms int64, loc *time.Location) int64 {
	return civilOf(time.UnixMilli(ms).In(loc)).floating().Unix()
}

func (s *Series) first() (Occurrence, bool) {
	var out Occurrence
	found := false
	s.walk(minInt64, func(o Occurrence) bool {
		out, found = o, true
		return false
	})
	return out, found
}

// Occurrences returns the occurrences that start in [from, to) (Unix ms),
// in order of their start, at most Limits.MaxPerExpansion of them: when
// it returns that many, ask again from the last start + 1. The answer
// depends only on the spec and the zone data embedded in this package.
func (s *Series) Occurrences(from, to int64) []Occurrence {
	limit := s.limits.MaxPerExpansion
	var out []Occurrence
	stopAt := int64(maxInt64)
	toKey := wallKey(to, s.loc) + slack
	s.walk(wallKey(from, s.loc), func(o Occurrence) bool {
		if o.Key > stopAt || o.Key > toKey {
			return false
		}
		if o.Start >= from && o.Start < to {
			out = append(out, o)
			if len(out) == limit && stopAt == maxInt64 {
				// Later keys may still start earlier, within slack.
				stopAt = o.Key + slack
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b Occurrence) int { return compareInt64(a.Start, b.Start) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Expand returns the start instants (Unix ms) of the occurrences in
// [from, to), ascending; each occurrence lasts Duration ms. At most
// Limits.MaxPerExpansion are returned. It is Occurrences without the keys.
func (s *Series) Expand(from, to int64) []int64 {
	occ := s.Occurrences(from, to)
	out := make([]int64, len(occ))
	for i, o := range occ {
		out[i] = o.Start
	}
	return out
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// iteratorFrom returns an iterator over the rule's wall-clock times that
// yields the same times as one from DTSTART for every time at or after
// lo, but starts as late as it can: a whole number of periods (INTERVAL ×
// FREQ) after DTSTART, at or before lo. Without it every expansion of an
// endless series would walk the calendar from the series' first day, and
// a leader's tick would cost more the older the series is.
//
// The rebased rule states the defaults RFC 5545 takes from DTSTART (the
// month day of a monthly rule, the month and day of a yearly one, the
// weekday of a weekly one, the time of day) explicitly, so that moving
// DTSTART does not change them.
func (s *Series) iteratorFrom(lo int64) rrule.Next {
	if s.fullWalk || lo == minInt64 {
		return s.rr.Iterator()
	}
	d0 := s.start.floating()
	if lo <= d0.Unix() {
		return s.rr.Iterator()
	}
	target := time.Unix(lo, 0).UTC()
	iv := int64(s.rule.interval)
	var d time.Time
	switch s.rule.freq {
	case rrule.MINUTELY, rrule.HOURLY, rrule.DAILY, rrule.WEEKLY:
		unit := map[rrule.Frequency]int64{rrule.MINUTELY: 60, rrule.HOURLY: 3600, rrule.DAILY: 86400, rrule.WEEKLY: 7 * 86400}[s.rule.freq]
		step := iv * unit
		n := (lo - d0.Unix()) / step
		if n <= 0 {
			return s.rr.Iterator()
		}
		d = d0.Add(time.Duration(n*step) * time.Second)
	case rrule.MONTHLY:
		months := int64(target.Year()-d0.Year())*12 + int64(target.Month()-d0.Month())
		for n := months / iv; ; n-- {
			if n <= 0 {
				return s.rr.Iterator()
			}
			d = time.Date(d0.Year(), d0.Month()+time.Month(n*iv), 1, s.start.hour, s.start.min, s.start.sec, 0, time.UTC)
			if !d.After(target) {
				break
			}
		}
	case rrule.YEARLY:
		for n := int64(target.Year()-d0.Year()) / iv; ; n-- {
			if n <= 0 {
				return s.rr.Iterator()
			}
			d = time.Date(d0.Year()+int(n*iv), time.January, 1, s.start.hour, s.start.min, s.start.sec, 0, time.UTC)
			if !d.After(target) {
				break
			}
		}
	default:
		return s.rr.Iterator()
	}
	rr, err := rrule.NewRRule(s.rule.explicitOption(d, s.start))
	if err != nil { // cannot happen: the same parts passed NewRRule in Compile
		return s.rr.Iterator()
	}
	return rr.Iterator()
}
