package series_test

import (
	"fmt"
	"time"

	"github.com/ledgerd/ledgerd/series"
)

// The issue's example: every Monday and Wednesday at 09:00 in
// Europe/Berlin, 20 times, asked for on Thursday 22 October 2026 at
// 10:00 UTC without -at. The series is anchored at the local midnight of
// that day; 09:00 stays 09:00 local across the change to winter time on
// 25 October, so the instant moves from 07:00Z to 08:00Z.
func ExampleParse() {
	after := time.Date(2026, 10, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	day, _ := series.StartOfDay(after, "Europe/Berlin")
	s, err := series.Parse(series.Input{
		Repeat:    "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20",
		TZ:        "Europe/Berlin",
		Start:     day,
		NotBefore: after,
		Duration:  (3 * time.Hour).Milliseconds(),
	}, series.DefaultLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Spec())
	for i, o := range s.Occurrences(0, 1<<62) {
		if i < 4 || i == 19 {
			fmt.Println(series.OccurrenceID("lab-gpus", o.Key), time.UnixMilli(o.Start).UTC().Format(time.RFC3339))
		}
	}
	// Output:
	// DTSTART;TZID=Europe/Berlin:20261022T000000 RRULE:FREQ=WEEKLY;COUNT=20;BYDAY=MO,WE;BYHOUR=9 duration=3h0m0s not_before=2026-10-22T10:00:00Z
	// lab-gpus@20261026T090000 2026-10-26T08:00:00Z
	// lab-gpus@20261028T090000 2026-10-28T08:00:00Z
	// lab-gpus@20261102T090000 2026-11-02T08:00:00Z
	// lab-gpus@20261104T090000 2026-11-04T08:00:00Z
	// lab-gpus@20261230T090000 2026-12-30T08:00:00Z
}

// Errors name the field and the rule part at fault.
func ExampleParse_errors() {
	for _, in := range []series.Input{
		{Repeat: "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=25", TZ: "Europe/Berlin"},
		{Repeat: "FREQ=WEEKLY;BYDAY=MO", TZ: "Europe/Berlinn"},
		{Repeat: "FREQ=DAILY;BYHOUR=9,10", TZ: "Europe/Berlin"},
	} {
		in.Start = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMilli()
		in.Duration = (90 * time.Minute).Milliseconds()
		_, err := series.Parse(in, series.DefaultLimits())
		fmt.Println(err)
	}
	// Output:
	// repeat: BYHOUR: 25 is out of range 0..23
	// tz: unknown time zone "Europe/Berlinn" (IANA names such as Europe/Berlin, tzdata 2025c)
	// duration: 1h30m0s is longer than the 1h0m0s between two starts: the series would overlap itself
}

// A leader's tick for an endless series, and a leader that dies: the new
// leader expands again from the replicated watermark, and Accept keeps
// the repeated entry from booking anything twice.
func ExampleSeries_Next() {
	spec := series.Spec{
		Rule:     "FREQ=WEEKLY;BYDAY=TU;BYHOUR=14",
		Zone:     "America/New_York",
		Start:    "20261020T000000",
		Duration: time.Hour.Milliseconds(),
		Horizon:  (21 * 24 * time.Hour).Milliseconds(),
	}
	s, err := series.Compile(spec, series.DefaultLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 10, 19, 12, 0, 0, 0, time.UTC).UnixMilli()
	through := series.NoneDecided // replicated: nothing decided yet

	first := s.Next(through, now, 0) // leader 1 proposes this, then dies
	retry := s.Next(through, now, 0) // leader 2 did not see it commit
	for _, b := range []series.Batch{first, retry} {
		fresh, next := series.Accept(through, b) // apply, on every replica
		for _, o := range fresh {
			fmt.Println("book", series.OccurrenceID("standup", o.Key), time.UnixMilli(o.Start).UTC().Format(time.RFC3339))
		}
		fmt.Println("fresh", len(fresh))
		through = next
	}
	// A week later the horizon has moved on by one occurrence.
	later := s.Next(through, now+7*24*time.Hour.Milliseconds(), 0)
	fmt.Println("next tick books", len(later.Book), series.OccurrenceID("standup", later.Book[0].Key))
	// Output:
	// book standup@20261020T140000 2026-10-20T18:00:00Z
	// book standup@20261027T140000 2026-10-27T18:00:00Z
	// book standup@20261103T140000 2026-11-03T19:00:00Z
	// fresh 3
	// fresh 0
	// next tick books 1 standup@20261110T140000
}
