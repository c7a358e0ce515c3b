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

// TestAheadOfWallExcusesOnlyTheJumpsReach: after a forward jump of the
// leader's clock, log time runs ahead of the wall clock until the wall
// clock catches up; a series whose first hour log time may reach early
// in that time may rightly be passed over, one whose first hour lies
// beyond the jump's reach may not. Backward jumps do not move log time
// at all. (The run that showed it: a +5m jump at 16:58:33, series
// created from 16:58:33 with a first hour of 17:00, and a +9m jump at
// 17:03:27 that did not reach 18:00.)
func TestAheadOfWallExcusesOnlyTheJumpsReach(t *testing.T) {
	start := time.Date(2026, 11, 28, 16, 55, 15, 0, time.UTC)
	at := func(s time.Duration) int64 { return int64(s) }
	faults := []Fault{
		{Kind: "clock", Start: at(198 * time.Second), End: at(202 * time.Second), ClockOffset: 5 * time.Minute},
		{Kind: "clock", Start: at(219 * time.Second), End: at(223 * time.Second), ClockOffset: -2 * time.Minute},
		{Kind: "kill", Start: at(221 * time.Second), End: at(225 * time.Second)},
		{Kind: "clock", Start: at(492 * time.Second), End: at(496 * time.Second), ClockOffset: 9 * time.Minute},
	}
	ahead := aheadOfWall(faults, start)
	if len(ahead) != 2 {
		t.Fatalf("windows %v, want the two forward jumps'", ahead)
	}
	if w := ahead[0]; !w.From.Equal(start.Add(198*time.Second)) || !w.Until.Equal(start.Add(202*time.Second+5*time.Minute)) || w.Ahead != 5*time.Minute {
		t.Fatalf("first window %+v", w)
	}
	hour := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	jump1 := start.Add(198 * time.Second)
	for _, tc := range []struct {
		name           string
		created, first time.Time
		excused        bool
	}{
		{"created in the first jump, first hour in its reach", jump1, hour, true},
		{"created just before the jump, booking due inside it", jump1.Add(-5 * time.Second), hour, true},
		{"booked before the jump", jump1.Add(-RecurringLead - recurringTickSlack - time.Second), hour, false},
		{"all before the jumps", start.Add(10 * time.Second), start.Add(150 * time.Second), false},
		{"first hour beyond the second jump's reach", start.Add(495 * time.Second), hour.Add(time.Hour), false},
		{"after the wall clock caught up", hour.Add(30 * time.Minute), hour.Add(2 * time.Hour), false},
	} {
		if got := mayPassOver(ahead, tc.created, tc.first); got != tc.excused {
			t.Errorf("%s: excused %v, want %v", tc.name, got, tc.excused)
		}
	}
}
