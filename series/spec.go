package series

import (
	"fmt"
	"time"

	"github.com/teambition/rrule-go"
)

// Spec is a standing reservation's recurrence, as the log stores it: plain
// data, canonical (two specs that mean the same series are equal), with a
// versioned binary encoding (Encode, Decode). It carries no instants of
// occurrences: the leader expands it (Compile, then Series.Next) and
// writes the instants into the log.
type Spec struct {
	// Rule is the RRULE in canonical form, without DTSTART, e.g.
	// "FREQ=WEEKLY;COUNT=20;BYDAY=MO,WE;BYHOUR=9".
	Rule string
	// Zone is the IANA time zone the rule's wall-clock times are in.
	Zone string
	// Start is DTSTART, the series' anchor, as a local date-time in Zone
	// ("20261130T090000"). The rule's period counts from it, and the
	// times of day, weekday and month day the rule does not fix come from
	// it (RFC 5545). It is an occurrence only if the rule matches it.
	Start string
	// NotBefore, in Unix ms, drops the occurrences that start earlier:
	// they are not part of the series and COUNT does not count them.
	// 0: none.
	NotBefore int64
	// End, in Unix ms, drops the occurrences that start at or after it,
	// so a series can be ended from a date on. 0: none.
	End int64
	// Duration is each occurrence's length in ms.
	Duration int64
	// Horizon, in ms, is how far ahead of now an endless series (no
	// COUNT, UNTIL or End) is booked; 0 for a bounded series.
	Horizon int64
}

// Limits bound what a series may ask of the ledger. They are the edge's and
// the leader's configuration, checked by Parse and Compile; Decode does not
// use them, so a replica configured differently still reads every stored
// spec.
type Limits struct {
	// MaxOccurrences caps a bounded series (COUNT, UNTIL or End): it is
	// booked whole when it is created.
	MaxOccurrences int
	// MaxPerExpansion caps the occurrences one Expand or Next returns.
	MaxPerExpansion int
	// DefaultHorizon is an endless series' horizon when none is given.
	DefaultHorizon time.Duration
	// MaxHorizon caps the horizon.
	MaxHorizon time.Duration
	// MinInterval is the least time between two starts of one series.
	MinInterval time.Duration
}

// DefaultLimits are the limits a node uses unless configured otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxOccurrences:  1000,
		MaxPerExpansion: 500,
		DefaultHorizon:  90 * 24 * time.Hour,
		MaxHorizon:      366 * 24 * time.Hour,
		MinInterval:     time.Hour,
	}
}

func (l Limits) check() error {
	switch {
	case l.MaxOccurrences < 1, l.MaxPerExpansion < 1:
		return fmt.Errorf("series: limits: MaxOccurrences and MaxPerExpansion must be at least 1")
	case l.MinInterval < time.Minute:
		return fmt.Errorf("series: limits: MinInterval must be at least a minute")
	case l.DefaultHorizon < time.Hour || l.MaxHorizon < l.DefaultHorizon:
		return fmt.Errorf("series: limits: need 1h <= DefaultHorizon <= MaxHorizon")
	}
	return nil
}

// Input is a new series as the caller gives it.
type Input struct {
	// Repeat is the RRULE, e.g. "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20".
	Repeat string
	// TZ is the IANA zone, e.g. "Europe/Berlin".
	TZ string
	// Start, in Unix ms, is DTSTART: its wall clock in TZ, to the
	// second, anchors the rule. With -at T it is T; without, use
	// StartOfDay(not-before) and set NotBefore, so BYHOUR=9 means 09:00.
	Start int64
	// NotBefore, in Unix ms, drops occurrences that start earlier (0: none).
	NotBefore int64
	// Duration of each occurrence in ms.
	Duration int64
	// Horizon in ms for an endless series (0: the default).
	Horizon int64
}

// Parse checks a new series and compiles it. Every error is a *FieldError
// naming the field (repeat, tz, start, duration, horizon) and, for the
// rule, the part at fault; limits that are themselves invalid give a plain
// error.
func Parse(in Input, lim Limits) (*Series, error) {
	if err := lim.check(); err != nil {
		return nil, err
	}
	r, err := parseRule(in.Repeat)
	if err != nil {
		return nil, err
	}
	loc, err := LoadZone(in.TZ)
	if err != nil {
		return nil, err
	}
	if in.Start < minStartMillis || in.Start > maxStartMillis {
		return nil, fieldErr(FieldStart, "must lie between 1970 and 9000")
	}
	spec := Spec{
		Rule:      r.String(),
		Zone:      in.TZ,
		Start:     civilOf(time.UnixMilli(in.Start).In(loc)).String(),
		NotBefore: in.NotBefore,
		Duration:  in.Duration,
	}
	if r.count == 0 && r.until == "" {
		spec.Horizon = in.Horizon
		if spec.Horizon == 0 {
			spec.Horizon = lim.DefaultHorizon.Milliseconds()
		}
	} else if in.Horizon != 0 {
		return nil, fieldErr(FieldHorizon, "only an endless series (no COUNT or UNTIL) has a horizon")
	}
	return Compile(spec, lim)
}

// StartOfDay returns the instant, in Unix ms, at which the local day of ms
// begins in zone: 00:00 there, or, where a zone skips midnight, the first
// instant of that day by the rule of RFC 5545 (the offset before the gap).
func StartOfDay(ms int64, zone string) (int64, error) {
	loc, err := LoadZone(zone)
	if err != nil {
		return 0, err
	}
	y, mo, d := time.UnixMilli(ms).In(loc).Date()
	return instant(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC), loc), nil
}

// The range of DTSTART: from the epoch (NotBefore and End use 0 for
// "none") to the year 9000, well inside what rrule-go iterates (9999).
var (
	minStartMillis = int64(0)
	maxStartMillis = time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// validate checks what needs neither the zone database nor the limits, so
// Decode can run it on any replica: the rule's syntax and RFC 5545
// constraints, the shape of the zone name and of Start, and the ranges of
// the numbers. It returns the parsed rule and start.
func (s Spec) validate() (*rule, civil, error) {
	r, err := parseRule(s.Rule)
	if err != nil {
		return nil, civil{}, err
	}
	if canon := r.String(); canon != s.Rule {
		return nil, civil{}, ruleErr("", "not in canonical form (want %q)", canon)
	}
	if why := zoneNameProblem(s.Zone); why != "" {
		return nil, civil{}, fieldErr(FieldTZ, "%s", why)
	}
	start, err := parseCivil(s.Start)
	if err != nil {
		return nil, civil{}, fieldErr(FieldStart, "%v", err)
	}
	if start.year < 1970 || start.year >= 9000 {
		return nil, civil{}, fieldErr(FieldStart, "must lie between 1970 and 9000")
	}
	if err := r.checkReachable(start); err != nil {
		return nil, civil{}, err
	}
	bounded := r.count != 0 || r.until != "" || s.End != 0
	switch {
	case s.Duration <= 0:
		return nil, civil{}, fieldErr(FieldDuration, "must be positive")
	case s.NotBefore < 0:
		return nil, civil{}, fieldErr(FieldNotBefore, "must not be negative")
	case s.End < 0:
		return nil, civil{}, fieldErr(FieldEnd, "must not be negative")
	case s.End != 0 && s.End <= s.NotBefore:
		return nil, civil{}, fieldErr(FieldEnd, "must be after not_before; the series would be empty")
	case bounded && s.Horizon != 0:
		return nil, civil{}, fieldErr(FieldHorizon, "must be 0 for a bounded series (COUNT, UNTIL or end)")
	case !bounded && s.Horizon <= 0:
		return nil, civil{}, fieldErr(FieldHorizon, "an endless series needs a positive horizon")
	case s.Duration > maxStartMillis, s.Horizon > maxStartMillis:
		return nil, civil{}, fieldErr(FieldDuration, "out of range")
	}
	return r, start, nil
}

// bounded reports whether the series has a last occurrence.
func (s Spec) bounded(r *rule) bool { return r.count != 0 || r.until != "" || s.End != 0 }

// Compile checks a spec against the limits and the zone database and
// returns the series ready to expand. The leader compiles a stored spec
// again after a change of leadership; the result depends only on the spec,
// the limits and the zone data in this package.
func Compile(spec Spec, lim Limits) (*Series, error) {
	if err := lim.check(); err != nil {
		return nil, err
	}
	r, start, err := spec.validate()
	if err != nil {
		return nil, err
	}
	loc, err := LoadZone(spec.Zone)
	if err != nil {
		return nil, err
	}
	gap := r.minSpacing(start)
	switch {
	case gap*1000 < lim.MinInterval.Milliseconds():
		return nil, ruleErr(partForSpacing(r), "starts would be %v apart; the least allowed is %v", time.Duration(gap)*time.Second, lim.MinInterval)
	case spec.Duration > gap*1000:
		return nil, fieldErr(FieldDuration, "%v is longer than the %v between two starts: the series would overlap itself", time.Duration(spec.Duration)*time.Millisecond, time.Duration(gap)*time.Second)
	case spec.Horizon > lim.MaxHorizon.Milliseconds():
		return nil, fieldErr(FieldHorizon, "%v is more than the %v allowed", time.Duration(spec.Horizon)*time.Millisecond, lim.MaxHorizon)
	case r.count > lim.MaxOccurrences:
		return nil, ruleErr("COUNT", "%d is more than the %d occurrences a series may have", r.count, lim.MaxOccurrences)
	}
	rr, err := rrule.NewRRule(r.option(start.floating()))
	if err != nil {
		return nil, ruleErr("", "%v", err)
	}
	s := &Series{spec: spec, rule: r, start: start, loc: loc, rr: rr, limits: lim, untilMs: maxInt64}
	switch {
	case !r.untilUTC.IsZero():
		s.untilMs = r.untilUTC.UnixMilli()
	case r.until != "":
		next := r.untilDate.floating().AddDate(0, 0, 1)
		s.untilMs = instant(next, loc) - 1
	}
	if s.untilMs != maxInt64 && s.untilMs < instant(start.floating(), loc) {
		return nil, ruleErr("UNTIL", "%s is before the series' start %s; the series would be empty", r.until, spec.Start)
	}
	// The first occurrence: an empty series is refused here, once, so
	// that no later expansion searches the calendar to the year 9999.
	first, ok := s.first()
	if !ok {
		return nil, ruleErr("", "the rule has no occurrence after the start (and not_before/end)")
	}
	s.firstKey = first.Key
	if spec.bounded(r) {
		// Count the whole series, stopping one past the cap. A series
		// bounded only by End (one ended from a date on, see Split) is
		// not capped: End only ever shortens a series the limits let in.
		capped := r.count != 0 || r.until != ""
		n := 0
		s.walk(minInt64, func(o Occurrence) bool {
			n++
			s.lastKey = o.Key
			return !capped || n <= lim.MaxOccurrences
		})
		if capped && n > lim.MaxOccurrences {
			// COUNT is checked above, so it is UNTIL that lets in too many.
			return nil, ruleErr("UNTIL", "the series has more than %d occurrences up to %s; end it earlier or leave it endless", lim.MaxOccurrences, r.until)
		}
		s.count = n
	}
	return s, nil
}

// partForSpacing names the part to blame for starts too close together.
func partForSpacing(r *rule) string {
	switch {
	case r.freq >= rrule.HOURLY && len(r.byminute) < 2:
		return "INTERVAL"
	case len(r.byminute) > 1:
		return "BYMINUTE"
	case len(r.byhour) > 1:
		return "BYHOUR"
	}
	return "FREQ"
}

// String shows the spec as RFC 5545 lines plus the ledger's fields, e.g.
// "DTSTART;TZID=Europe/Berlin:20261130T090000 RRULE:FREQ=WEEKLY;... duration=1h0m0s".
func (s Spec) String() string {
	out := fmt.Sprintf("DTSTART;TZID=%s:%s RRULE:%s duration=%v", s.Zone, s.Start, s.Rule, time.Duration(s.Duration)*time.Millisecond)
	if s.NotBefore != 0 {
		out += " not_before=" + time.UnixMilli(s.NotBefore).UTC().Format(time.RFC3339)
	}
	if s.End != 0 {
		out += " end=" + time.UnixMilli(s.End).UTC().Format(time.RFC3339)
	}
	if s.Horizon != 0 {
		out += fmt.Sprintf(" horizon=%v", time.Duration(s.Horizon)*time.Millisecond)
	}
	return out
}
