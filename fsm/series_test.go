package fsm

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/series"
	"google.golang.org/protobuf/proto"
)

// TestSeriesAllOrNothingLeavesNoTrace: a refused all-or-nothing series
// leaves the state byte-identical to a twin that applied a tick at the
// same index and time instead (no row, no event, no planner booking).
func TestSeriesAllOrNothingLeavesNoTrace(t *testing.T) {
	setup := func() *harness {
		h := newHarness(t, Config{})
		h.must(1_000, OK, createRes("gpu", 4))
		h.must(1_000, OK, reserve("blocker", "gpu", 3, hourMs, withStart(5*hourMs)))
		return h
	}
	a, b := setup(), setup()
	s := goldenSeries(t, "FREQ=HOURLY;COUNT=6", hourMs, 0, hourMs/2, 0)
	res := a.must(2_000, REJECTED, createSeriesCmd("s", "lab", s, 2_000, true, part("gpu", 2)))
	out := res.GetSeries()[0]
	if len(out.GetSkipped()) != 1 || out.GetSkipped()[0].GetId() != "s@19700101T050000" || len(out.GetBookedIds()) != 0 {
		t.Fatalf("outcome %v", out)
	}
	if sk := out.GetSkipped()[0]; !sk.GetLaterOk() || sk.GetLaterStartMillis() != 6*hourMs {
		t.Errorf("earliest alternative %v/%d, want %d", sk.GetLaterOk(), sk.GetLaterStartMillis(), 6*hourMs)
	}
	if !res.GetRejected().GetLaterOk() {
		t.Error("the rejection names no alternative")
	}
	b.must(2_000, OK, tick())
	if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, b.f)) {
		t.Fatal("a refused all-or-nothing series changed the state")
	}
	checkInvariants(t, a.f)
	// The same with skip conflicts books five and reports the sixth.
	res = a.must(3_000, OK, createSeriesCmd("s", "lab", s, 3_000, false, part("gpu", 2)))
	out = res.GetSeries()[0]
	if len(out.GetBookedIds()) != 5 || len(out.GetSkipped()) != 1 || out.GetSeries().GetBooked() != 5 || out.GetSeries().GetSkipped() != 1 {
		t.Fatalf("skip conflicts: %v", out)
	}
	checkInvariants(t, a.f)
	// Every occurrence produced its COMMITTED event, with the series in its ID.
	n := 0
	for _, e := range a.f.History(0, 0) {
		if strings.HasPrefix(e.GetReservation().GetId(), "s@") && e.GetType() == fsmv1.Event_TYPE_COMMITTED {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d COMMITTED events of occurrences, want 5", n)
	}
}

// TestSeriesAllOrNothingNeedsRejectResources: tentative bookings on a
// scheduler resource could move variable jobs, which cannot be undone.
func TestSeriesAllOrNothingNeedsRejectResources(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1_000, OK, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{
		Name: "batch", Capacity: 8, Policy: &fsmv1.PolicySpec{Policy: fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE}}}})
	s := goldenSeries(t, "FREQ=HOURLY;COUNT=2", hourMs, 0, hourMs/2, 0)
	res := h.must(2_000, INVALID, createSeriesCmd("s", "lab", s, 2_000, true, part("batch", 2)))
	if f := res.GetInvalid().GetField(); f != "create_series.parts[0].resource" {
		t.Errorf("field %q", f)
	}
	h.must(2_000, OK, createSeriesCmd("s", "lab", s, 2_000, false, part("batch", 2)))
	// Two parts with one on a policy resource: every occurrence would be
	// refused, so the series is.
	h.must(2_000, OK, createRes("cpu", 8))
	res = h.must(2_000, INVALID, createSeriesCmd("t", "lab", s, 2_000, false, part("batch", 1), part("cpu", 1)))
	if f := res.GetInvalid().GetField(); f != "create_series.parts" {
		t.Errorf("field %q", f)
	}
}

// TestSeriesExactlyOnce applies the batches of several leaders lost,
// repeated and reordered, and finds every occurrence booked once, none
// missing, and the replicas identical.
func TestSeriesExactlyOnce(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := goldenSeries(t, "FREQ=DAILY;BYHOUR=9,17", 0, 0, hourMs, 3*dayMs)
		h := newHarness(t, Config{})
		h.must(1_000, OK, createRes("room", 1))
		h.must(1_000, OK, createSeriesCmd("s", "lab", s, 1_000, false, part("room", 1)))
		var sent []*fsmv1.SeriesBatch
		now := int64(1_000)
		for step := 0; step < 30; step++ {
			now += int64(rng.IntN(int(dayMs / 2)))
			cur, _ := h.f.Series("s")
			// A leader expands from the replicated watermark, or a stale
			// one from an older one.
			through := cur.GetThroughKey()
			if len(sent) > 0 && rng.IntN(3) == 0 {
				through = sent[rng.IntN(len(sent))].GetThroughKey()
			}
			b := protoBatch("s", s.Next(through, now, 0))
			sent = append(sent, b)
			batches := []*fsmv1.SeriesBatch{b}
			if rng.IntN(3) == 0 {
				batches = append(batches, sent[rng.IntN(len(sent))]) // a repeat
			}
			if rng.IntN(4) == 0 {
				continue // lost: the leader died before it was applied
			}
			h.must(now, OK, &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPAND_SERIES,
				Payload: &fsmv1.Command_ExpandSeries{ExpandSeries: &fsmv1.ExpandSeries{Batches: batches}}})
		}
		// Every occurrence from the first to the watermark is booked once
		// (the room holds one, so a second booking would be refused and
		// counted as skipped).
		cur, _ := h.f.Series("s")
		if cur.GetSkipped() != 0 {
			t.Fatalf("seed %d: %d skipped", seed, cur.GetSkipped())
		}
		// Rows of past occurrences are dropped after their retention;
		// the history keeps one COMMITTED event per booking.
		seen := map[string]bool{}
		for _, e := range h.f.History(0, 0) {
			id := e.GetReservation().GetId()
			if e.GetType() != fsmv1.Event_TYPE_COMMITTED || !strings.HasPrefix(id, "s@") {
				continue
			}
			if seen[id] {
				t.Fatalf("seed %d: %s booked twice", seed, id)
			}
			seen[id] = true
			if _, key, err := series.ParseOccurrenceID(id); err != nil || key > cur.GetThroughKey() {
				t.Fatalf("seed %d: %s above the watermark", seed, id)
			}
		}
		if int(cur.GetBooked()) != len(seen) {
			t.Fatalf("seed %d: booked %d, %d booked events", seed, cur.GetBooked(), len(seen))
		}
		// None missing: every occurrence from the first booking to the
		// watermark that started after the series was created.
		want := 0
		for _, o := range s.Occurrences(1_000, 1<<50) {
			if o.Key <= cur.GetThroughKey() && seen[series.OccurrenceID("s", o.Key)] {
				want++
			}
		}
		if want != len(seen) {
			t.Fatalf("seed %d: %d of %d booked events are occurrences", seed, want, len(seen))
		}
		checkInvariants(t, h.f)
	}
}

// TestSeriesSnapshotRoundTrip: a state with series restores to the same
// bytes, and the restored replica applies the next batch as the original.
func TestSeriesSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1_000, OK, createRes("room", 2))
	s := goldenSeries(t, "FREQ=DAILY;BYHOUR=9", 0, 0, hourMs, 2*dayMs)
	h.must(1_000, OK, createSeriesCmd("s", "lab", s, 1_000, false, part("room", 1)))
	snap := snapshotBytes(t, h.f)
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g), snap) {
		t.Fatal("restored series state re-encodes differently")
	}
	cur, _ := g.Series("s")
	next := &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPAND_SERIES, Payload: &fsmv1.Command_ExpandSeries{ExpandSeries: &fsmv1.ExpandSeries{
		Batches: []*fsmv1.SeriesBatch{protoBatch("s", s.Next(cur.GetThroughKey(), 3*dayMs, 0))}}}}
	b, _ := Encode(next)
	b, _ = Stamp(b, 2*dayMs)
	r1 := h.f.ApplyCommand(h.index+1, b)
	r2 := g.ApplyCommand(h.index+1, b)
	if !bytes.Equal(r1, r2) || !bytes.Equal(snapshotBytes(t, h.f), snapshotBytes(t, g)) {
		t.Fatal("restored replica diverged")
	}
	// A corrupt series row is refused, naming it.
	msg, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	msg.Series[0].Spec = []byte{9}
	bad, err := EncodeSnapshot(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), "series[0].spec") {
		t.Errorf("corrupt spec: %v", err)
	}
}

// TestSeriesOccurrencesAreOrdinary: an occurrence is cancelled, and a
// series cancelled from a date on, through the ordinary commands; list
// by series; owner checks; '@' targets only from version 4 on.
func TestSeriesOccurrencesAreOrdinary(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1_000, OK, createRes("room", 1))
	s := goldenSeries(t, "FREQ=DAILY;BYHOUR=9;COUNT=4", 0, 0, hourMs, 0)
	h.must(1_000, OK, createSeriesCmd("s", "lab", s, 1_000, false, part("room", 1)))
	h.must(1_000, OK, reserve("other", "room", 1, hourMs, withStart(20*hourMs)))
	h.must(1_100, DENIED, cancel("s@19700102T090000", withOwner("mallory")))
	h.must(1_100, OK, cancel("s@19700102T090000", withOwner("lab")))
	old := cancel("s@19700103T090000", withOwner("lab"))
	old.Version = 3
	if res := h.must(1_100, INVALID, old); !strings.Contains(res.GetInvalid().GetReason(), "'@'") {
		t.Errorf("version 3 target with '@': %s", res.GetInvalid().GetReason())
	}
	rows, _, err := h.f.List(Filter{Series: "s"})
	if err != nil || len(rows) != 4 {
		t.Fatalf("list by series: %d rows, %v", len(rows), err)
	}
	cs := &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL_SERIES, Owner: "mallory",
		Payload: &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{Id: "s", FromMillis: 2 * dayMs}}}
	h.must(1_200, DENIED, cs)
	cs.Owner = "lab"
	res := h.must(1_200, OK, cs)
	if got := res.GetSeries()[0].GetCancelledIds(); len(got) != 2 || got[0] != "s@19700103T090000" {
		t.Errorf("cancelled %v", got)
	}
	for id, want := range map[string]fsmv1.Reservation_State{
		"s@19700101T090000": COMMITTED, "s@19700102T090000": CANCELLED, "s@19700103T090000": CANCELLED, "s@19700104T090000": CANCELLED, "other": COMMITTED,
	} {
		if got := h.state(id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	h.must(1_300, fsmv1.Result_STATUS_NOT_FOUND, &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL_SERIES, Owner: "lab",
		Payload: &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{Id: "nope"}}})
	h.must(1_300, CONFLICT, createSeriesCmd("s", "lab", s, 1_300, false, part("room", 1)))
	checkInvariants(t, h.f)
}

// TestCheckSeries: stateless refusals name the field.
func TestCheckSeries(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := goldenSeries(t, "FREQ=DAILY;COUNT=2", 0, 0, hourMs, 0)
	base := func() *fsmv1.Command { return createSeriesCmd("s", "lab", s, 0, false, part("room", 1)) }
	for name, tc := range map[string]struct {
		mut   func(c *fsmv1.CreateSeries)
		field string
	}{
		"long id":      {func(c *fsmv1.CreateSeries) { c.Id = strings.Repeat("a", 113); c.First.SeriesId = c.Id }, "create_series.id"},
		"at in id":     {func(c *fsmv1.CreateSeries) { c.Id = "a@b"; c.First.SeriesId = c.Id }, "create_series.id"},
		"bad spec":     {func(c *fsmv1.CreateSeries) { c.Spec = []byte{1, 2} }, "create_series.spec"},
		"no parts":     {func(c *fsmv1.CreateSeries) { c.Parts = nil }, "create_series.parts"},
		"zero amount":  {func(c *fsmv1.CreateSeries) { c.Parts[0].Amount = 0 }, "create_series.parts[0].amount"},
		"other series": {func(c *fsmv1.CreateSeries) { c.First.SeriesId = "t" }, "create_series.first.series_id"},
		"unordered": {func(c *fsmv1.CreateSeries) {
			c.First.Book[0], c.First.Book[1] = c.First.Book[1], c.First.Book[0]
		}, "create_series.first.book"},
	} {
		t.Run(name, func(t *testing.T) {
			c := base()
			tc.mut(c.GetCreateSeries())
			var fe *FieldError
			if err := f.Check(c); !errors.As(err, &fe) || fe.Path != tc.field {
				t.Fatalf("Check: %v, want a refusal of %s", err, tc.field)
			}
			h := newHarness(t, Config{})
			if res := h.apply(0, c); res.GetStatus() != INVALID || res.GetInvalid().GetField() != tc.field {
				t.Fatalf("Apply: %v", res)
			}
		})
	}
	if err := f.Check(base()); err != nil {
		t.Fatalf("good command refused: %v", err)
	}
	if MinVersion(base()) != 4 {
		t.Errorf("MinVersion %d, want 4", MinVersion(base()))
	}
	old := proto.CloneOf(base())
	old.Version = 3
	if _, err := Encode(old); !errors.Is(err, ErrMalformed) {
		t.Errorf("version 3 series entry encoded: %v", err)
	}
}

// FuzzApplySeries is FuzzApply seeded with series commands that apply to
// fuzzBase's resources (a bounded series, an endless one, all or nothing
// on a policy resource, a tick, a cancel with a replacement), so that the
// fuzzer mutates entries that reach the series code: whatever Decode
// accepts applies without panicking, twice, and overbooks nothing.
func FuzzApplySeries(f *testing.F) {
	bounded := goldenSeries(f, "FREQ=HOURLY;COUNT=3", 0, 0, 100, 0)
	endless := goldenSeries(f, "FREQ=DAILY;BYHOUR=1", 0, 0, 500, 2*dayMs)
	for _, c := range []*fsmv1.Command{
		createSeriesCmd("s", "o", bounded, 1000, false, part("cpu", 4)),
		createSeriesCmd("s", "o", bounded, 1000, true, part("cpu", 16)),
		createSeriesCmd("e", "o", endless, 1000, true, part("gpu", 1), part("cpu", 1)),
		createSeriesCmd("p", "o", endless, 1000, true, part("batch", 1)),
		{Type: fsmv1.Command_TYPE_EXPAND_SERIES, Payload: &fsmv1.Command_ExpandSeries{ExpandSeries: &fsmv1.ExpandSeries{
			Batches: []*fsmv1.SeriesBatch{protoBatch("e", endless.Next(series.NoneDecided, 3*dayMs, 0))}}}},
		{Type: fsmv1.Command_TYPE_CANCEL_SERIES, Owner: "o", Payload: &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{
			Id: "e", FromMillis: dayMs, Then: proto.CloneOf(createSeriesCmd("f", "o", endless, 1000, false, part("cpu", 2)).GetCreateSeries())}}},
	} {
		b, err := Encode(c)
		if err != nil {
			f.Fatal(err)
		}
		if b, err = Stamp(b, 1_000); err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Decode(data); err != nil {
			return
		}
		m := fuzzBase(t)
		for i := range 2 {
			res, err := DecodeResult(m.ApplyCommand(uint64(100+i), data))
			if err != nil || res.GetStatus() == fsmv1.Result_STATUS_UNKNOWN {
				t.Fatalf("result %v, %v", res, err)
			}
			checkInvariants(t, m)
		}
	})
}
