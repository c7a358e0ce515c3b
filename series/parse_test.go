package series

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var berlinMonday = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC).UnixMilli() // 09:00 CET

// TestParseErrorsNameTheField: each bad input gets a *FieldError naming
// the field and, for the rule, the part at fault.
func TestParseErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		in          Input
		field, part string
		says        string
	}{
		{Input{Repeat: "", TZ: "UTC"}, FieldRepeat, "", "must not be empty"},
		{Input{Repeat: "BYHOUR=9"}, FieldRepeat, "FREQ", "missing"},
		{Input{Repeat: "FREQ=FORTNIGHTLY"}, FieldRepeat, "FREQ", "not a frequency"},
		{Input{Repeat: "FREQ=SECONDLY"}, FieldRepeat, "FREQ", "SECONDLY"},
		{Input{Repeat: "FREQ=DAILY;FREQ=WEEKLY"}, FieldRepeat, "FREQ", "twice"},
		{Input{Repeat: "FREQ=DAILY;BYHOUR=24"}, FieldRepeat, "BYHOUR", "out of range 0..23"},
		{Input{Repeat: "FREQ=DAILY;BYHOUR=nine"}, FieldRepeat, "BYHOUR", "NINE"},
		{Input{Repeat: "FREQ=DAILY;BYMINUTE=60"}, FieldRepeat, "BYMINUTE", "0..59"},
		{Input{Repeat: "FREQ=MONTHLY;BYMONTHDAY=0"}, FieldRepeat, "BYMONTHDAY", "out of range"},
		{Input{Repeat: "FREQ=MONTHLY;BYMONTHDAY=32"}, FieldRepeat, "BYMONTHDAY", "out of range"},
		{Input{Repeat: "FREQ=WEEKLY;BYMONTHDAY=1"}, FieldRepeat, "BYMONTHDAY", "WEEKLY"},
		{Input{Repeat: "FREQ=MONTHLY;BYYEARDAY=1"}, FieldRepeat, "BYYEARDAY", "MONTHLY"},
		{Input{Repeat: "FREQ=MONTHLY;BYWEEKNO=1"}, FieldRepeat, "BYWEEKNO", "YEARLY"},
		{Input{Repeat: "FREQ=WEEKLY;BYDAY=XX"}, FieldRepeat, "BYDAY", "XX"},
		{Input{Repeat: "FREQ=WEEKLY;BYDAY=2MO"}, FieldRepeat, "BYDAY", "ordinal"},
		{Input{Repeat: "FREQ=MONTHLY;BYDAY=6MO"}, FieldRepeat, "BYDAY", "at most 5"},
		{Input{Repeat: "FREQ=DAILY;BYSETPOS=1"}, FieldRepeat, "BYSETPOS", "another"},
		{Input{Repeat: "FREQ=DAILY;BYSECOND=0"}, FieldRepeat, "BYSECOND", "whole minutes"},
		{Input{Repeat: "FREQ=DAILY;BYEASTER=0"}, FieldRepeat, "BYEASTER", "not RFC 5545"},
		{Input{Repeat: "FREQ=DAILY;X-FOO=1"}, FieldRepeat, "X-FOO", "unknown"},
		{Input{Repeat: "FREQ=DAILY;COUNT=0"}, FieldRepeat, "COUNT", "at least 1"},
		{Input{Repeat: "FREQ=DAILY;COUNT=1001"}, FieldRepeat, "COUNT", "1000"},
		{Input{Repeat: "FREQ=DAILY;INTERVAL=0"}, FieldRepeat, "INTERVAL", "1..10000"},
		{Input{Repeat: "FREQ=DAILY;COUNT=3;UNTIL=20270101"}, FieldRepeat, "COUNT", "not both"},
		{Input{Repeat: "FREQ=DAILY;UNTIL=20270101T000000"}, FieldRepeat, "UNTIL", "no zone"},
		{Input{Repeat: "FREQ=DAILY;UNTIL=2027"}, FieldRepeat, "UNTIL", "neither"},
		{Input{Repeat: "FREQ=DAILY;UNTIL=20260101T000000Z"}, FieldRepeat, "UNTIL", "before the series' start"},
		{Input{Repeat: "FREQ=DAILY;UNTIL=20300101T000000Z"}, FieldRepeat, "UNTIL", "more than 1000"},
		{Input{Repeat: "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"}, FieldRepeat, "BYMONTHDAY", "no occurrence"},
		{Input{Repeat: "FREQ=HOURLY;BYMINUTE=0,30"}, FieldRepeat, "BYMINUTE", "30m0s apart"},
		{Input{Repeat: "FREQ=MINUTELY;INTERVAL=30"}, FieldRepeat, "INTERVAL", "30m0s apart"},
		// rrule-go would search for these forever (09:00 + 4h steps never
		// reach 00:00 or 02:00).
		{Input{Repeat: "FREQ=HOURLY;INTERVAL=4;BYHOUR=0,2"}, FieldRepeat, "BYHOUR", "never reached"},
		{Input{Repeat: "FREQ=MINUTELY;INTERVAL=120;BYMINUTE=30"}, FieldRepeat, "BYMINUTE", "never reached"},
		{Input{Repeat: "FREQ=DAILY;BYHOUR=9,10", Duration: 2 * 3_600_000}, FieldDuration, "", "overlap itself"},
		{Input{Repeat: "FREQ=DAILY", TZ: "Europe/Berln"}, FieldTZ, "", "unknown time zone"},
		{Input{Repeat: "FREQ=DAILY", TZ: ""}, FieldTZ, "", "IANA"},
		{Input{Repeat: "FREQ=DAILY", TZ: "Local"}, FieldTZ, "", "host"},
		{Input{Repeat: "FREQ=DAILY", TZ: "../etc/passwd"}, FieldTZ, "", "not an IANA zone name"},
		{Input{Repeat: "FREQ=DAILY", Duration: -1}, FieldDuration, "", "positive"},
		{Input{Repeat: "FREQ=DAILY", Horizon: 400 * 86_400_000}, FieldHorizon, "", "allowed"},
		{Input{Repeat: "FREQ=DAILY;COUNT=2", Horizon: 86_400_000}, FieldHorizon, "", "endless"},
		{Input{Repeat: "FREQ=DAILY", Start: -1}, FieldStart, "", "1970"},
	} {
		in := c.in
		if in.TZ == "" && c.field != FieldTZ {
			in.TZ = "Europe/Berlin"
		}
		if in.Start == 0 {
			in.Start = berlinMonday
		}
		if in.Duration == 0 {
			in.Duration = 3_600_000
		}
		_, err := Parse(in, DefaultLimits())
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("Parse(%q, tz %q) = %v, want a *FieldError", in.Repeat, in.TZ, err)
			continue
		}
		if fe.Field != c.field || fe.Part != c.part || !strings.Contains(fe.Reason, c.says) {
			t.Errorf("Parse(%q, tz %q) = %q; want field %q part %q saying %q", in.Repeat, in.TZ, err, c.field, c.part, c.says)
		}
	}
}

// TestCanonicalRule: spellings of one rule give one Spec.Rule, and the
// canonical text parses back to itself.
func TestCanonicalRule(t *testing.T) {
	want := "FREQ=WEEKLY;COUNT=20;BYDAY=MO,WE;BYHOUR=9"
	for _, text := range []string{
		"FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20",
		"RRULE:freq=weekly;byday=we,mo,we;byhour=9;count=20;interval=1;wkst=MO",
		" FREQ=WEEKLY ; COUNT=20;BYHOUR=9;BYDAY=WE,MO ",
	} {
		r, err := parseRule(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got := r.String(); got != want {
			t.Errorf("%q canonical = %q, want %q", text, got, want)
		}
	}
	r, _ := parseRule("FREQ=MONTHLY;BYDAY=-1SU,+1FR;WKST=SU")
	if got := r.String(); got != "FREQ=MONTHLY;BYDAY=1FR,-1SU;WKST=SU" {
		t.Errorf("ordinal days canonical = %q", got)
	}
}

// TestIssueExample is the issue's command: weekly Monday and Wednesday at
// 09:00 in Europe/Berlin, 20 times, from Monday 30 November 2026 with
// -at left out (the series is anchored at the local midnight of the day).
func TestIssueExample(t *testing.T) {
	after := time.Date(2026, 11, 30, 7, 12, 0, 0, time.UTC).UnixMilli() // 08:12 CET
	day, err := StartOfDay(after, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(Input{Repeat: "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20", TZ: "Europe/Berlin", Start: day, NotBefore: after, Duration: 3 * 3_600_000}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	got := s.Occurrences(0, maxInt64)
	if len(got) != 20 {
		t.Fatalf("%d occurrences, want 20", len(got))
	}
	loc := s.Location()
	for i, o := range got {
		lt := time.UnixMilli(o.Start).In(loc)
		if lt.Hour() != 9 || lt.Minute() != 0 || (lt.Weekday() != time.Monday && lt.Weekday() != time.Wednesday) {
			t.Errorf("occurrence %d at %v, want Monday or Wednesday 09:00 local", i, lt)
		}
	}
	if first := time.UnixMilli(got[0].Start).UTC(); !first.Equal(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("first occurrence %v, want 2026-11-30T08:00Z", first)
	}
	// 20 occurrences, Mon and Wed: the last is Wednesday 3 February 2027.
	if last := time.UnixMilli(got[19].Start).UTC(); !last.Equal(time.Date(2027, 2, 3, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("last occurrence %v, want 2027-02-03T08:00Z", last)
	}
	if s.Spec().String() != "DTSTART;TZID=Europe/Berlin:20261130T000000 RRULE:FREQ=WEEKLY;COUNT=20;BYDAY=MO,WE;BYHOUR=9 duration=3h0m0s not_before=2026-11-30T07:12:00Z" {
		t.Errorf("Spec().String() = %q", s.Spec().String())
	}
}

// TestExpandWindowAndCap: Expand is half-open and returns at most
// MaxPerExpansion starts; asking again from the last start + 1 continues
// where it stopped.
func TestExpandWindowAndCap(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxPerExpansion = 7
	s, err := Compile(Spec{Rule: "FREQ=DAILY;BYHOUR=9", Zone: "America/New_York", Start: "20261020T000000", Duration: 60_000, Horizon: 86_400_000}, lim)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	from := int64(0)
	for len(all) < 30 {
		part := s.Expand(from, maxInt64)
		if len(part) != 7 {
			t.Fatalf("Expand returned %d, want the cap 7", len(part))
		}
		all = append(all, part...)
		from = part[len(part)-1] + 1
	}
	for i := 1; i < len(all); i++ {
		if d := all[i] - all[i-1]; d != 86_400_000 && d != 90_000_000 { // 25h across 1 November
			t.Fatalf("gap %d ms between occurrences %d and %d", d, i-1, i)
		}
	}
	if got := s.Expand(all[0], all[1]); len(got) != 1 || got[0] != all[0] {
		t.Fatalf("Expand(a, b) = %v, want [a]", got)
	}
}

// FuzzParse: any rule text and zone never panic, and every error names a
// field; what parses has a canonical rule that parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20", "FREQ=MONTHLY;BYDAY=-1SU;BYSETPOS=1", "FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO",
		"FREQ=DAILY;UNTIL=20270101T000000Z", "FREQ=HOURLY;INTERVAL=3;BYMINUTE=15", "FREQ=YEARLY;BYYEARDAY=-1,366",
		"RRULE:FREQ=MONTHLY;BYMONTHDAY=31", "FREQ=DAILY;;", "FREQ=DAILY;BYDAY=+53MO", "FREQ==",
	} {
		f.Add(s, "Europe/Berlin", int64(1_796_000_000_000), int64(3_600_000))
	}
	f.Fuzz(func(t *testing.T, rule, zone string, start, dur int64) {
		lim := DefaultLimits()
		s, err := Parse(Input{Repeat: rule, TZ: zone, Start: start, Duration: dur}, lim)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("Parse(%q, %q) error %v names no field", rule, zone, err)
			}
			return
		}
		r, err := parseRule(s.Spec().Rule)
		if err != nil || r.String() != s.Spec().Rule {
			t.Fatalf("canonical rule %q does not parse to itself: %v", s.Spec().Rule, err)
		}
		_ = s.Expand(start, start+30*86_400_000)
	})
}
