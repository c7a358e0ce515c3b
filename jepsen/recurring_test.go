package jepsen

import (
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/series"
)

// TestRecurringShapeNeedsTheTick: whenever the workload creates a series
// (around the hour in 50 ms steps, and elsewhere), an endless one books
// nothing at its creation and books First once it enters the horizon
// RecurringLead later, which the check demands of the leader's tick, on
// any tick in the slack it has before First starts; a bounded one has its
// 3 occurrences from First on. Near the hour only bounded series are
// made.
func TestRecurringShapeNeedsTheTick(t *testing.T) {
	hour := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	var at []time.Time
	for d := -2 * (RecurringLead + recurringTickSlack); d <= time.Second; d += 50 * time.Millisecond {
		at = append(at, hour.Add(d))
	}
	at = append(at, hour.Add(17*time.Minute+3*time.Millisecond), hour.Add(-30*time.Minute))
	endless := 0
	for _, created := range at {
		for _, want := range []bool{true, false} {
			isEndless, first, repeat, horizon := recurringShape(created, want)
			if isEndless && !want {
				t.Fatalf("%s: endless without asking", created.Format(time.RFC3339Nano))
			}
			now := created.UnixMilli()
			day, err := series.StartOfDay(now, "UTC")
			if err != nil {
				t.Fatal(err)
			}
			s, err := series.Parse(series.Input{Repeat: repeat, TZ: "UTC", Start: day, NotBefore: now,
				Duration: (30 * time.Minute).Milliseconds(), Horizon: horizon.Milliseconds()}, series.DefaultLimits())
			if err != nil {
				t.Fatalf("%s: %s: %v", created.Format(time.RFC3339Nano), repeat, err)
			}
			b := s.Next(series.NoneDecided, now, 0)
			if !isEndless {
				if len(b.Book) != 3 || b.Book[0].Start != first.UnixMilli() {
					t.Fatalf("%s: bounded series books %v, want 3 from %s", created.Format(time.RFC3339Nano), b.Book, first)
				}
				continue
			}
			endless++
			if len(b.Book) != 0 {
				t.Fatalf("%s: the endless series books %v at its creation; the check wants the tick to", created.Format(time.RFC3339Nano), b.Book)
			}
			// The tick books it whenever it runs in the slack after
			// the occurrence entered the horizon.
			for _, late := range []time.Duration{0, recurringTickSlack / 2, recurringTickSlack - time.Millisecond} {
				tick := created.Add(RecurringLead + late)
				later := s.Next(b.Through, tick.UnixMilli(), 0)
				if len(later.Book) != 1 || later.Book[0].Start != first.UnixMilli() {
					t.Fatalf("%s: a tick at %s books %v, want %s", created.Format(time.RFC3339Nano), tick, later.Book, first)
				}
			}
		}
	}
	if endless < len(at)/2 {
		t.Fatalf("only %d endless series among %d times", endless, len(at))
	}
}
