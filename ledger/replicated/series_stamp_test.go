package replicated

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/series"
)

// stampCase is a series created by a node whose clock reads receivedAt
// and applied by a leader that stamps stampAt, after the seed entries
// were applied at seedAt. t0 lies on the hour.
type stampCase struct {
	name                        string
	receivedAt, stampAt, seedAt int64
	args                        func() ledger.SeriesArgs
	// The starts booked with the leader's stamp, and how many
	// occurrences the plain stamp (the release before) skips.
	want         []int64
	plainSkips   int
	allOrNothing bool
}

func hourly(id, rule string) func() ledger.SeriesArgs {
	return func() ledger.SeriesArgs {
		a := seriesArgs(id, rule)
		a.TZ = "UTC"
		if rule == "FREQ=HOURLY;BYMINUTE=0" {
			a.Horizon = 3 * time.Hour.Milliseconds()
		}
		return a
	}
}

const hour = int64(3_600_000)

var stampCases = []stampCase{
	{name: "COUNT series across the hour", receivedAt: t0 - 10, stampAt: t0 + 10, seedAt: t0 + 10,
		args: hourly("count", "FREQ=HOURLY;BYMINUTE=0;COUNT=3"),
		want: []int64{t0 + hour, t0 + 2*hour, t0 + 3*hour}, plainSkips: 1},
	{name: "all or nothing across the hour", receivedAt: t0 - 10, stampAt: t0 + 10, seedAt: t0 + 10,
		args: func() ledger.SeriesArgs {
			a := hourly("aon", "FREQ=HOURLY;BYMINUTE=0;COUNT=3")()
			a.AllOrNothing = true
			return a
		},
		want: []int64{t0 + hour, t0 + 2*hour, t0 + 3*hour}, plainSkips: 1, allOrNothing: true},
	{name: "endless series across the hour", receivedAt: t0 - 10, stampAt: t0 + 10, seedAt: t0 + 10,
		args: hourly("endless", "FREQ=HOURLY;BYMINUTE=0"),
		want: []int64{t0 + hour, t0 + 2*hour, t0 + 3*hour}, plainSkips: 1},
	{name: "log time ahead of the leader's clock", receivedAt: t0 - 10, stampAt: t0 - 5, seedAt: t0 + 10,
		args: hourly("behind", "FREQ=HOURLY;BYMINUTE=0;COUNT=3"),
		want: []int64{t0 + hour, t0 + 2*hour, t0 + 3*hour}, plainSkips: 1},
	{name: "nothing past: the batch stays", receivedAt: t0 - 3_000, stampAt: t0 - 10, seedAt: t0 - 3_000,
		args: hourly("early", "FREQ=HOURLY;BYMINUTE=0;COUNT=3"),
		want: []int64{t0, t0 + hour, t0 + 2*hour}},
}

// TestSeriesStampExpandsAtLogTime: a series created a moment before an
// occurrence's start, whose entry applies a moment after it, books its
// occurrences from the log time on, whole: none skipped, a COUNT series
// complete, all or nothing not refused. The response names the booked
// rows as the ledger stores them. The release before (fsm.Stamp) skips
// the occurrence in between; that is what the case reproduces.
func TestSeriesStampExpandsAtLogTime(t *testing.T) {
	ctx := context.Background()
	for _, tc := range stampCases {
		for _, leader := range []bool{false, true} {
			name := tc.name + "/plain stamp"
			if leader {
				name = tc.name + "/series stamp"
			}
			t.Run(name, func(t *testing.T) {
				fl := newFake(t)
				fl.now = tc.seedAt
				l := New(fl, fl.f)
				l.ConfigureSeries(series.DefaultLimits(), func() time.Time { return time.UnixMilli(tc.receivedAt) })
				seed(t, l)
				if leader {
					fl.stamp = NewSeriesStamp(fl.f, series.DefaultLimits(), nil).Stamp
				}
				fl.now = tc.stampAt
				a := tc.args()
				out, err := l.ReserveSeries(ctx, a)
				if !leader && tc.plainSkips > 0 {
					// The problem: an occurrence nobody could book is refused.
					var rj *ledger.SeriesRejectedError
					switch {
					case tc.allOrNothing && !errors.As(err, &rj):
						t.Fatalf("plain stamp, all or nothing: %v, want a rejection", err)
					case !tc.allOrNothing && (err != nil || len(out.Skipped) != tc.plainSkips):
						t.Fatalf("plain stamp: %v, %v; want %d skipped", out, err, tc.plainSkips)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Skipped) != 0 || len(out.Booked) != len(tc.want) {
					t.Fatalf("booked %d, skipped %v; want %d booked, none skipped", len(out.Booked), out.Skipped, len(tc.want))
				}
				for i, r := range out.Booked {
					if got := r.GetStart().AsTime().UnixMilli(); got != tc.want[i] {
						t.Errorf("booked[%d] %s starts at %d, want %d", i, r.GetId(), got, tc.want[i])
					}
					stored, err := l.Get(ctx, r.GetId(), true)
					if err != nil || !stored.GetStart().AsTime().Equal(r.GetStart().AsTime()) || !stored.GetEnd().AsTime().Equal(r.GetEnd().AsTime()) {
						t.Errorf("booked[%d] %s: the ledger stores %v (%v); the response says %v–%v", i, r.GetId(), stored, err, r.GetStart().AsTime(), r.GetEnd().AsTime())
					}
				}
				row, ok := fl.f.Series(a.ID)
				if !ok || row.GetSkipped() != 0 || int(row.GetBooked()) != len(tc.want) {
					t.Fatalf("stored series: %v", row)
				}
			})
		}
	}
}

// TestSeriesStampModifyAcrossTheHour: ModifySeries from now, taken a
// moment before an occurrence and applied a moment after it, continues
// with the next occurrences and skips none.
func TestSeriesStampModifyAcrossTheHour(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	fl.now = t0 - 2*hour
	received := t0 - 2*hour
	l := New(fl, fl.f)
	l.ConfigureSeries(series.DefaultLimits(), func() time.Time { return time.UnixMilli(received) })
	seed(t, l)
	fl.stamp = NewSeriesStamp(fl.f, series.DefaultLimits(), nil).Stamp
	if _, err := l.ReserveSeries(ctx, hourly("lab", "FREQ=HOURLY;BYMINUTE=0;COUNT=6")()); err != nil {
		t.Fatal(err)
	}
	received, fl.now = t0-10, t0+10
	out, err := l.ModifySeries(ctx, ledger.ModifySeriesArgs{Write: op(), ID: "lab", NewID: "lab2", Duration: 30 * 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Skipped) != 0 || len(out.Booked) == 0 || out.Booked[0].GetStart().AsTime().UnixMilli() != t0+hour {
		t.Fatalf("modify across the hour: booked %v, skipped %v; want the first at %d, none skipped", out.Booked, out.Skipped, t0+hour)
	}
	for _, r := range out.Booked {
		if d := r.GetEnd().AsTime().Sub(r.GetStart().AsTime()); d != 30*time.Minute {
			t.Errorf("%s lasts %v, want the new 30m", r.GetId(), d)
		}
	}
}

// TestSeriesStampLeavesOtherCommands: every command but a series whose
// first batch lies partly before the log time is stamped byte for byte as
// fsm.Stamp stamps it; malformed bytes are refused as fsm.Stamp refuses
// them.
func TestSeriesStampLeavesOtherCommands(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	l.ConfigureSeries(series.DefaultLimits(), func() time.Time { return time.UnixMilli(t0) })
	seed(t, l)
	if _, err := l.ReserveSeries(ctx, hourly("s", "FREQ=HOURLY;BYMINUTE=0;COUNT=3")()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CancelSeries(ctx, ledger.CancelSeriesArgs{Write: op(), ID: "s"}); err != nil {
		t.Fatal(err)
	}
	st := NewSeriesStamp(fl.f, series.DefaultLimits(), nil)
	seenSeries := false
	for _, c := range append(fl.cmds, &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPIRE, Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}}) {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		seenSeries = seenSeries || c.GetType() == fsmv1.Command_TYPE_CREATE_SERIES
		for _, now := range []int64{0, t0 - hour, t0} {
			want, werr := fsm.Stamp(b, now)
			got, gerr := st.Stamp(b, now)
			if werr != nil || gerr != nil || !bytes.Equal(got, want) {
				t.Fatalf("%v at %d: series stamp %x (%v), fsm.Stamp %x (%v)", c.GetType(), now, got, gerr, want, werr)
			}
		}
	}
	if !seenSeries {
		t.Fatal("no series command was tried")
	}
	// Cut framing; a series type whose payload does not decode.
	for _, bad := range [][]byte{{0x08}, {0x08, 0x1a, 0x0a, 0x05}, {0x08, byte(fsmv1.Command_TYPE_CREATE_SERIES), 0x10, 0x04}} {
		if _, err := st.Stamp(bad, t0); !errors.Is(err, fsm.ErrMalformed) {
			t.Errorf("Stamp(%x): %v, want ErrMalformed", bad, err)
		}
	}
}

// BenchmarkLeaderStamp is the leader's stamp of a keyed hold with labels
// (a typical write), as fsm.Stamp makes it and as SeriesStamp does, which
// also needs the command's type: what the series rewrite costs every
// other write. Compare with: benchstat -col /impl.
func BenchmarkLeaderStamp(b *testing.B) {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	start := t0 + hour
	cmd, err := fsm.Encode(&fsmv1.Command{Type: fsmv1.Command_TYPE_HOLD, Owner: "acme", IdempotencyKey: "k-0123456789",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: "job-42",
			Parts:          []*fsmv1.Part{{Resource: "cpu", Amount: 16}, {Resource: "gpu", Amount: 2}},
			DurationMillis: hour, StartMillis: &start, Labels: map[string]string{"project": "climate", "queue": "batch"}}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name  string
		stamp func([]byte, int64) ([]byte, error)
	}{{"fsm", fsm.Stamp}, {"series", NewSeriesStamp(f, series.DefaultLimits(), nil).Stamp}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.stamp(cmd, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
