package series

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkNext is one leader tick for one endless series (30-day
// horizon, up to 500 occurrences), by the age of the series, with the
// iterator that skips whole periods ahead (impl=skip) and with a walk from
// the series' first day (impl=full), side by side.
func BenchmarkNext(b *testing.B) {
	for _, c := range []struct{ name, rule string }{
		{"weekly", "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9"},
		{"hourly", "FREQ=HOURLY"},
	} {
		for _, years := range []int{0, 1, 5} {
			for _, impl := range []string{"skip", "full"} {
				b.Run(fmt.Sprintf("%s/age=%dy/impl=%s", c.name, years, impl), func(b *testing.B) {
					s := mustCompile(b, Spec{Rule: c.rule, Zone: "Europe/Berlin", Start: "20260101T000000", Duration: 60_000, Horizon: (30 * 24 * time.Hour).Milliseconds()})
					s.fullWalk = impl == "full"
					now := time.Date(2026+years, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
					through := wallKey(now, s.Location())
					b.ReportAllocs()
					for b.Loop() {
						s.Next(through, now, 0)
					}
				})
			}
		}
	}
}

// BenchmarkParse is the edge's cost of accepting the example.
func BenchmarkParse(b *testing.B) {
	in := Input{Repeat: "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20", TZ: "Europe/Berlin", Start: berlinMonday, Duration: 3_600_000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(in, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}
