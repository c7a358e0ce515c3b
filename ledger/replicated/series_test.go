package replicated

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/series"
)

func seriesArgs(id, repeat string) ledger.SeriesArgs {
	return ledger.SeriesArgs{Write: op(), ID: id, Parts: []ledger.Part{{Resource: "gpu", Amount: 10}},
		Duration: time.Hour.Milliseconds(), Repeat: repeat, TZ: "Europe/Berlin"}
}

// TestSeriesRefusedMidUpgrade: while a server cannot apply envelope
// version 4, series are refused as unavailable, naming the upgrade, and
// nothing is proposed.
func TestSeriesRefusedMidUpgrade(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	vl := &versionedLog{fakeLog: fl, common: 3}
	l := New(vl, fl.f)
	l.ConfigureSeries(series.DefaultLimits(), func() time.Time { return time.UnixMilli(t0) })
	seed(t, l)
	before := len(fl.cmds)
	_, err := l.ReserveSeries(ctx, seriesArgs("lab", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;COUNT=3"))
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, ErrMidUpgrade) || !strings.Contains(err.Error(), "needs version 4") {
		t.Fatalf("reserve series at common version 3: %v", err)
	}
	if _, err := l.CancelSeries(ctx, ledger.CancelSeriesArgs{Write: op(), ID: "lab"}); !errors.Is(err, ErrMidUpgrade) {
		t.Fatalf("cancel series at common version 3: %v", err)
	}
	if len(fl.cmds) != before {
		t.Fatalf("%d commands proposed mid-upgrade", len(fl.cmds)-before)
	}
	// Once every server runs version 4 the same request books.
	vl.common = 4
	out, err := l.ReserveSeries(ctx, seriesArgs("lab", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;COUNT=3"))
	if err != nil || len(out.Booked) != 3 || out.Booked[0].SeriesId != "lab" {
		t.Fatalf("at version 4: %v, %v", out, err)
	}
	if fl.cmds[len(fl.cmds)-1].GetVersion() != 4 {
		t.Errorf("written as version %d", fl.cmds[len(fl.cmds)-1].GetVersion())
	}
}

// TestReserveSeriesBadInput: every refusal names the request's field.
func TestReserveSeriesBadInput(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	l.ConfigureSeries(series.DefaultLimits(), func() time.Time { return time.UnixMilli(t0) })
	seed(t, l)
	for _, tc := range []struct {
		name  string
		mut   func(a *ledger.SeriesArgs)
		field string
	}{
		{"bad rule", func(a *ledger.SeriesArgs) { a.Repeat = "FREQ=WEEKLY;BYHOUR=25" }, "repeat"},
		{"unknown zone", func(a *ledger.SeriesArgs) { a.TZ = "Europe/Berlinn" }, "tz"},
		{"horizon too far", func(a *ledger.SeriesArgs) { a.Repeat = "FREQ=DAILY"; a.Horizon = 400 * 24 * time.Hour.Milliseconds() }, "horizon"},
		{"count too large", func(a *ledger.SeriesArgs) { a.Repeat = "FREQ=DAILY;COUNT=5000" }, "repeat"},
		{"overlaps itself", func(a *ledger.SeriesArgs) {
			a.Repeat = "FREQ=DAILY;COUNT=3"
			a.Duration = 25 * time.Hour.Milliseconds()
		}, "duration"},
		{"bad id", func(a *ledger.SeriesArgs) { a.ID = "a@b" }, "id"},
		{"no parts", func(a *ledger.SeriesArgs) { a.Parts = nil }, "parts"},
		{"zero amount", func(a *ledger.SeriesArgs) { a.Parts[0].Amount = 0 }, "parts[0].amount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := seriesArgs("s", "FREQ=DAILY;BYHOUR=9;COUNT=3")
			tc.mut(&a)
			_, err := l.ReserveSeries(ctx, a)
			var fe *ledger.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("%v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}

// TestSeriesTickAcrossLeaderChanges: two leaders take turns expanding an
// endless series; one of them dies between expanding and applying (its
// entry never reaches the log). Every occurrence is booked exactly once
// and none inside the horizon is missing.
func TestSeriesTickAcrossLeaderChanges(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	now := time.UnixMilli(t0)
	clock := func() time.Time { return now }
	l.ConfigureSeries(series.DefaultLimits(), clock)
	seed(t, l)
	a := seriesArgs("daily", "FREQ=DAILY;BYHOUR=9,15")
	a.Horizon = 2 * 24 * time.Hour.Milliseconds()
	a.Parts[0].Amount = 100 // the whole resource: a second booking would be refused
	first, err := l.ReserveSeries(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Booked) != 5 {
		// 09:00 now, 15:00, then 09:00 and 15:00, and 09:00 exactly at
		// the end of the horizon.
		t.Fatalf("first expansion booked %d, want 5 (two days)", len(first.Booked))
	}
	leaders := []*SeriesTicker{NewSeriesTicker(fl.f, series.DefaultLimits(), clock, nil), NewSeriesTicker(fl.f, series.DefaultLimits(), clock, nil)}
	for step := 0; step < 40; step++ {
		now = now.Add(3 * time.Hour)
		fl.now = now.UnixMilli()
		at, ok := leaders[step%2].NextDue()
		if !ok {
			t.Fatal("nothing due with an endless series")
		}
		if at > now.UnixMilli() {
			continue // not due yet: a tick now would expand nothing
		}
		cmd := leaders[step%2].Tick()
		if step%5 == 0 {
			continue // this leader died before its entry was committed
		}
		if _, err := fl.Apply(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := fl.f.Series("daily")
	if s.GetSkipped() != 0 {
		t.Fatalf("%d occurrences skipped (booked twice?)", s.GetSkipped())
	}
	seen := map[string]int{}
	for _, e := range fl.f.History(0, 0) {
		if e.GetType() == fsmv1.Event_TYPE_COMMITTED && strings.HasPrefix(e.GetReservation().GetId(), "daily@") {
			seen[e.GetReservation().GetId()]++
		}
	}
	// Two a day for the first day (created at t0, 2027-01-15T08:00Z =
	// 09:00 Berlin) on: up to the horizon after the last tick.
	end := now.Add(48 * time.Hour)
	want := 0
	for d := time.UnixMilli(t0); !d.After(end); d = d.Add(time.Hour) {
		loc, _ := series.LoadZone("Europe/Berlin")
		lt := d.In(loc)
		if lt.Minute() == 0 && (lt.Hour() == 9 || lt.Hour() == 15) && !d.Before(time.UnixMilli(t0)) {
			want++
			id := series.OccurrenceID("daily", time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, 0, time.UTC).Unix())
			if seen[id] != 1 {
				t.Errorf("%s booked %d times", id, seen[id])
			}
		}
	}
	if len(seen) != want || int(s.GetBooked()) != want {
		t.Errorf("booked %d (%d events), want %d", s.GetBooked(), len(seen), want)
	}
}

// TestSeriesTickFromLogTime: a leader whose clock is behind the log time
// an earlier leader reached expands from the log time, so the occurrence
// in between is passed over, not refused as past and counted as skipped.
func TestSeriesTickFromLogTime(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	// Created half an hour before t0-3h, with a 3h horizon: booked up to
	// t0-1h.
	fl.now = t0 - 3*hour - hour/2
	l := New(fl, fl.f)
	l.ConfigureSeries(series.DefaultLimits(), func() time.Time { return time.UnixMilli(t0 - 3*hour - hour/2) })
	seed(t, l)
	if _, err := l.ReserveSeries(ctx, hourly("tick", "FREQ=HOURLY;BYMINUTE=0")()); err != nil {
		t.Fatal(err)
	}
	// An earlier leader stamped t0+10; this one's clock reads t0-10.
	fl.now = t0 + 10
	if _, err := fl.Apply(ctx, fsm.TickCommand()); err != nil {
		t.Fatal(err)
	}
	behind := NewSeriesTicker(fl.f, series.DefaultLimits(), func() time.Time { return time.UnixMilli(t0 - 10) }, nil)
	fl.now = t0 - 10
	if _, err := fl.Apply(ctx, behind.Tick()); err != nil {
		t.Fatal(err)
	}
	row, _ := fl.f.Series("tick")
	if row.GetSkipped() != 0 {
		t.Fatalf("%d occurrences skipped; the one at the hour lies before the log time and is passed over", row.GetSkipped())
	}
	if _, err := l.Get(ctx, series.OccurrenceID("tick", time.UnixMilli(t0+3*hour).UTC().Unix()), true); err != nil {
		t.Fatalf("the occurrence that entered the horizon at the log time: %v", err)
	}
}
