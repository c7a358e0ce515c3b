package fsm

import (
	"slices"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/series"
)

// Golden entries of standing reservations (envelope version 4): files
// 40_ to 49_. The log times of the golden script are a few seconds after
// the epoch, so the series run on 1 and 2 January 1970, in UTC.

const (
	hourMs = int64(time.Hour / time.Millisecond)
	dayMs  = 24 * hourMs
)

// goldenSeries parses a series for a golden entry or a test.
func goldenSeries(t testing.TB, repeat string, start, notBefore, dur, horizon int64) *series.Series {
	t.Helper()
	s, err := series.Parse(series.Input{Repeat: repeat, TZ: "UTC", Start: start, NotBefore: notBefore, Duration: dur, Horizon: horizon},
		series.DefaultLimits())
	if err != nil {
		t.Fatalf("parse %q: %v", repeat, err)
	}
	return s
}

// protoBatch is a series.Batch as the log carries it.
func protoBatch(id string, b series.Batch) *fsmv1.SeriesBatch {
	out := &fsmv1.SeriesBatch{SeriesId: id, ThroughKey: b.Through}
	for _, o := range b.Book {
		out.Book = append(out.Book, &fsmv1.SeriesOccurrence{Key: o.Key, StartMillis: o.Start})
	}
	return out
}

// createSeriesCmd is the command the edge writes for s: its spec and the
// first batch expanded at now.
func createSeriesCmd(id, owner string, s *series.Series, now int64, allOrNothing bool, parts ...*fsmv1.Part) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_SERIES, Owner: owner,
		Payload: &fsmv1.Command_CreateSeries{CreateSeries: &fsmv1.CreateSeries{
			Id: id, Spec: s.Spec().Encode(), Parts: parts, AllOrNothing: allOrNothing,
			First: protoBatch(id, s.Next(series.NoneDecided, now, 0)),
		}}}
}

// fixedSeries builds the golden series without a testing.T (the golden
// list is built outside tests too); a failure is a bug in the list.
func fixedSeries(repeat string, start, notBefore, dur, horizon int64) *series.Series {
	s, err := series.Parse(series.Input{Repeat: repeat, TZ: "UTC", Start: start, NotBefore: notBefore, Duration: dur, Horizon: horizon},
		series.DefaultLimits())
	if err != nil {
		panic(err)
	}
	return s
}

func seriesGoldenCommands() []goldenEntry {
	labels := map[string]string{"team": "physics"}
	standup := fixedSeries("FREQ=HOURLY;COUNT=3", hourMs, 0, hourMs/2, 0)
	clash := fixedSeries("FREQ=HOURLY;COUNT=2", 2*hourMs, 0, hourMs, 0)
	nightly := fixedSeries("FREQ=DAILY;BYHOUR=22", 0, 0, hourMs, 2*dayMs)
	// The leader's tick a day later: the third night enters the horizon.
	tick := nightly.Next(nightly.Next(series.NoneDecided, 3_220, 0).Through, dayMs, 0)
	// series modify: standup from 02:30 on is replaced by standup-short
	// (15 minutes), in the same rhythm.
	_, rest := standup.Split(2*hourMs + hourMs/2)
	rest.Duration = hourMs / 4
	short, err := series.Compile(*rest, series.DefaultLimits())
	if err != nil {
		panic(err)
	}
	create := func(id, owner string, s *series.Series, now int64, aon bool, amount int64) *fsmv1.Command {
		c := createSeriesCmd(id, owner, s, now, aon, &fsmv1.Part{Resource: "cluster/cores", Amount: amount})
		c.GetCreateSeries().Labels = labels
		return c
	}
	stale := protoBatch("standup", standup.Next(series.NoneDecided, 3_200, 1))
	return []goldenEntry{
		{"40_create_series.bin", 3_200, create("standup", "lab", standup, 3_200, false, 100)},
		// All or nothing: 02:00 fits beside standup, 03:00 does not
		// (100 + 64 > 128), so nothing is booked.
		{"41_create_series_all_or_nothing.bin", 3_210, create("clash", "lab", clash, 3_210, true, 64)},
		{"42_create_series_endless.bin", 3_220, create("nightly", "ops", nightly, 3_220, false, 8)},
		{"43_expand_series.bin", 3_230, &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPAND_SERIES,
			Payload: &fsmv1.Command_ExpandSeries{ExpandSeries: &fsmv1.ExpandSeries{Batches: []*fsmv1.SeriesBatch{
				protoBatch("nightly", tick), stale,
			}}}}},
		{"44_cancel_series.bin", 3_240, &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL_SERIES, Owner: "ops",
			Payload: &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{Id: "nightly", FromMillis: dayMs}}}},
		{"45_cancel_series_then.bin", 3_250, &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL_SERIES, Owner: "lab",
			Payload: &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{Id: "standup", FromMillis: 2*hourMs + hourMs/2,
				Then: &fsmv1.CreateSeries{Id: "standup-short", Spec: short.Spec().Encode(),
					Parts:  []*fsmv1.Part{{Resource: "cluster/cores", Amount: 100}},
					Labels: labels,
					First:  protoBatch("standup-short", short.Next(series.NoneDecided, 3_250, 0))}}}}},
	}
}

// seriesGoldenStatuses are the results of entries 40_ on.
var seriesGoldenStatuses = []fsmv1.Result_Status{OK, REJECTED, OK, OK, OK, OK}

// seriesGoldenEntries is the replay of snapshot-v1-series.golden: the
// entries 01 to 25 and the series' own 40_ to 49_, named explicitly so
// that entries other features add later do not change it.
func seriesGoldenEntries(t *testing.T) ([]goldenEntry, []fsmv1.Result_Status) {
	all := goldenCommands()
	entries := slices.Clone(all[:edgeGolden])
	statuses := slices.Clone(goldenStatuses[:edgeGolden])
	n := 0
	for _, g := range all {
		if g.file >= "40_" && g.file < "50_" {
			entries = append(entries, g)
			n++
		}
	}
	if n != len(seriesGoldenStatuses) {
		t.Fatalf("%d series golden entries, %d statuses", n, len(seriesGoldenStatuses))
	}
	return entries, append(statuses, seriesGoldenStatuses...)
}

// TestGoldenSeriesSnapshot pins the state after the series entries: the
// series table in the snapshot, the occurrences booked as ordinary rows,
// the all-or-nothing series that booked nothing, the tick's batch with a
// stale repeat that booked nothing twice, the cancel from a date on and
// the modification that continued a series under a new ID.
func TestGoldenSeriesSnapshot(t *testing.T) {
	entries, statuses := seriesGoldenEntries(t)
	g := goldenReplayOf(t, entries, statuses, "snapshot-v1-series.golden")
	want := map[string]fsmv1.Reservation_State{
		"standup@19700101T010000":       COMMITTED,
		"standup@19700101T020000":       COMMITTED,
		"standup@19700101T030000":       CANCELLED,
		"standup-short@19700101T030000": COMMITTED,
		"nightly@19700101T220000":       COMMITTED,
		"nightly@19700102T220000":       CANCELLED,
		"nightly@19700103T220000":       CANCELLED,
	}
	for id, st := range want {
		r, ok := g.Get(id)
		if !ok || r.GetState() != st {
			t.Errorf("%s: %v, want %s", id, r.GetState(), st)
		}
	}
	if r, _ := g.Get("standup-short@19700101T030000"); r.GetEndMillis()-r.GetStartMillis() != hourMs/4 {
		t.Errorf("the modified occurrence lasts %d ms, want %d", r.GetEndMillis()-r.GetStartMillis(), hourMs/4)
	}
	for _, id := range []string{"clash@19700101T020000", "clash@19700101T030000"} {
		if _, ok := g.Get(id); ok {
			t.Errorf("%s booked by an all-or-nothing series that did not fit", id)
		}
	}
	if _, ok := g.Series("clash"); ok {
		t.Error("the refused all-or-nothing series was created")
	}
	up, _ := g.Series("standup")
	if up.GetBooked() != 3 || up.GetCancelledFromMillis() != 2*hourMs+hourMs/2 {
		t.Errorf("standup: %v", up)
	}
	night, _ := g.Series("nightly")
	if night.GetBooked() != 3 || night.GetCancelledFromMillis() != dayMs {
		t.Errorf("nightly: %v", night)
	}
	spec, err := series.Decode(night.GetSpec())
	if err != nil || spec.End != dayMs || spec.Horizon != 0 {
		t.Errorf("nightly's spec after the cancel: %+v, %v", spec, err)
	}
	if live := g.LiveSeries(); len(live) != 1 || live[0].GetId() != "standup-short" {
		t.Errorf("live series %v, want standup-short only", live)
	}
}
