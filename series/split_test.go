package series

import (
	"fmt"
	"testing"
	"time"
)

// TestSplitKeepsEveryOccurrence: splitting at any occurrence (or between
// two) of a bounded or an endless series gives two specs whose
// occurrences together are the original's, with the same keys and
// instants, and COUNT carried over.
func TestSplitKeepsEveryOccurrence(t *testing.T) {
	for _, spec := range []Spec{
		{Rule: "FREQ=WEEKLY;COUNT=20;BYDAY=MO,WE;BYHOUR=9", Zone: "Europe/Berlin", Start: "20261019T000000", Duration: 3_600_000},
		{Rule: "FREQ=DAILY;UNTIL=20261231T000000Z;BYHOUR=2;BYMINUTE=30", Zone: "Europe/Berlin", Start: "20261001T000000", Duration: 3_600_000},
		{Rule: "FREQ=WEEKLY;BYDAY=TU;BYHOUR=14", Zone: "America/New_York", Start: "20200101T000000", Duration: 3_600_000, Horizon: 30 * 86_400_000},
	} {
		s := mustCompile(t, spec)
		all := s.Occurrences(0, time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
		for i := 0; i <= len(all); i += 1 + len(all)/7 {
			at := all[0].Start - 1
			if i > 0 {
				at = all[i-1].Start + 1 // between i-1 and i
			}
			if i < len(all) && i%2 == 0 {
				at = all[i].Start // exactly at occurrence i
			}
			before, after := s.Split(at)
			var got []Occurrence
			for _, part := range []*Spec{before, after} {
				if part == nil {
					continue
				}
				ps, err := Compile(*part, DefaultLimits())
				if err != nil {
					t.Fatalf("%s split at %d: %s: %v", spec.Rule, i, part, err)
				}
				got = append(got, ps.Occurrences(0, time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli())...)
			}
			if fmt.Sprint(got) != fmt.Sprint(all) {
				t.Fatalf("%s split at %s: %d occurrences, want %d\nbefore %v\nafter %v", spec.Rule, time.UnixMilli(at).UTC(), len(got), len(all), before, after)
			}
			if (before == nil) != (i == 0) {
				t.Errorf("%s split before occurrence %d: before = %v", spec.Rule, i, before)
			}
		}
	}
}

// TestSplitCarriesCount: the tail of a COUNT series counts what is left.
func TestSplitCarriesCount(t *testing.T) {
	s := mustCompile(t, Spec{Rule: "FREQ=WEEKLY;COUNT=20;BYDAY=MO,WE;BYHOUR=9", Zone: "Europe/Berlin", Start: "20261019T000000", Duration: 3_600_000})
	all := s.Occurrences(0, maxInt64)
	before, after := s.Split(all[7].Start)
	if before.End != all[7].Start || before.Horizon != 0 {
		t.Errorf("before = %v", before)
	}
	if after.Rule != "FREQ=WEEKLY;COUNT=13;BYDAY=MO,WE;BYHOUR=9" || after.NotBefore != all[7].Start || after.Start != s.Spec().Start {
		t.Errorf("after = %v", after)
	}
	if b, a := s.Split(all[19].Start + 1); a != nil || b == nil {
		t.Errorf("split after the last occurrence: %v, %v", b, a)
	}
}

// TestEndedSeriesIsNotCapped: an old endless series ended from a date on
// has more occurrences than MaxOccurrences and still compiles.
func TestEndedSeriesIsNotCapped(t *testing.T) {
	s := mustCompile(t, Spec{Rule: "FREQ=DAILY;BYHOUR=9", Zone: "Europe/Berlin", Start: "20200101T000000", Duration: 3_600_000, Horizon: 86_400_000})
	before, _ := s.Split(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	b := mustCompile(t, *before)
	if n, ok := b.Bounded(); !ok || n != 2192 {
		t.Fatalf("Bounded() = %d, %v; want 2192 days of 2020-2025", n, ok)
	}
	if !b.Done(wallKey(before.End, b.Location())) {
		t.Errorf("not done at its end")
	}
}
