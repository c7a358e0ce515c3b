package replicated

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/series"
)

// Standing reservations on the replicated ledger. The node that takes the
// request parses the rule and expands the first occurrences with its
// clock and the zone database embedded in package series; the log
// carries the instants (fsm/series.go). The leader's stamp expands them
// again when the log time has overtaken one (SeriesStamp). Later
// occurrences of an endless series are expanded by the leader's tick
// (SeriesTicker).

var _ ledger.SeriesLedger = (*Ledger)(nil)

// seriesConfig is a ledger's series settings.
type seriesConfig struct {
	limits series.Limits
	now    func() time.Time
	set    bool
}

// ConfigureSeries sets the limits of new series (the horizon an endless
// series gets by default and the most it may ask for) and the clock the
// first expansion on this node uses (the node's stamping clock; the
// leader expands again from the log time if that has overtaken an
// occurrence, see SeriesStamp). Call it before serving; without it the
// ledger uses series.DefaultLimits and time.Now.
func (l *Ledger) ConfigureSeries(lim series.Limits, now func() time.Time) {
	l.series = seriesConfig{limits: lim, now: now, set: true}
}

func (l *Ledger) seriesLimits() series.Limits {
	if l.series.set {
		return l.series.limits
	}
	return series.DefaultLimits()
}

func (l *Ledger) seriesNow() int64 {
	if l.series.now != nil {
		return l.series.now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// seriesFieldErr maps the series package's errors to the API's fields.
func seriesFieldErr(op string, err error) error {
	var fe *series.FieldError
	if errors.As(err, &fe) {
		reason := fe.Reason
		if fe.Part != "" {
			reason = fe.Part + ": " + reason
		}
		return fmt.Errorf("%s: %w", op, &ledger.FieldError{Field: fe.Field, Reason: reason})
	}
	return fmt.Errorf("%s: %w", op, err)
}

// seriesOf returns the series an occurrence ID belongs to ("" for any
// other reservation).
func seriesOf(id string) string {
	if !strings.Contains(id, "@") {
		return ""
	}
	s, _, err := series.ParseOccurrenceID(id)
	if err != nil {
		return ""
	}
	return s
}

// ReserveSeries implements SeriesLedger.
func (l *Ledger) ReserveSeries(ctx context.Context, a ledger.SeriesArgs) (*ledgerdv1.ReserveSeriesResponse, error) {
	const op = "reserve series"
	if why := fsm.ValidSeriesID(a.ID); why != "" {
		return nil, fmt.Errorf("%s: %w", op, &ledger.FieldError{Field: "id", Reason: why})
	}
	now := l.seriesNow()
	in := series.Input{Repeat: a.Repeat, TZ: a.TZ, Start: a.Start, NotBefore: now, Duration: a.Duration, Horizon: a.Horizon}
	if in.TZ == "" {
		in.TZ = "UTC"
	}
	if !a.HasStart {
		day, err := series.StartOfDay(now, in.TZ)
		if err != nil {
			return nil, seriesFieldErr(op, err)
		}
		in.Start = day
	}
	s, err := series.Parse(in, firstBatchLimits(l.seriesLimits()))
	if err != nil {
		return nil, seriesFieldErr(op, err)
	}
	cs := &fsmv1.CreateSeries{Id: a.ID, Spec: s.Spec().Encode(), Parts: fsmParts(a.Parts), Labels: a.Labels,
		AllOrNothing: a.AllOrNothing, First: batchToFSM(a.ID, s.Next(series.NoneDecided, now, 0))}
	cmd := envelope(fsmv1.Command_TYPE_CREATE_SERIES, a.Write)
	cmd.Payload = &fsmv1.Command_CreateSeries{CreateSeries: cs}
	res, err := l.applyResult(ctx, op, cmd)
	if err != nil {
		var rj *ledger.RejectedError
		if res != nil && len(res.GetSeries()) == 1 && errors.As(err, &rj) {
			return nil, fmt.Errorf("%s: %w", op, &ledger.SeriesRejectedError{Rejected: rj, Skipped: skippedToAPI(res.GetSeries()[0].GetSkipped())})
		}
		return nil, err
	}
	out := res.GetSeries()[0]
	booked, err := bookedToAPI(res, out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return &ledgerdv1.ReserveSeriesResponse{Series: seriesToAPI(out.GetSeries()), Booked: booked,
		Skipped: skippedToAPI(out.GetSkipped())}, nil
}

// GetSeries implements SeriesLedger.
func (l *Ledger) GetSeries(ctx context.Context, id string, stale bool) (*ledgerdv1.Series, error) {
	if why := fsm.ValidSeriesID(id); why != "" {
		return nil, &ledger.FieldError{Field: "id", Reason: why}
	}
	if err := l.barrier(ctx, "get series", stale); err != nil {
		return nil, err
	}
	r, ok := l.fsm.Series(id)
	if !ok {
		return nil, outcome{fmt.Sprintf("series %q not found", id), ledger.ErrNotFound}
	}
	return seriesToAPI(r), nil
}

// CancelSeries implements SeriesLedger.
func (l *Ledger) CancelSeries(ctx context.Context, a ledger.CancelSeriesArgs) (*ledgerdv1.CancelSeriesResponse, error) {
	cmd := envelope(fsmv1.Command_TYPE_CANCEL_SERIES, a.Write)
	cmd.Payload = &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{Id: a.ID, FromMillis: a.From}}
	res, err := l.apply(ctx, "cancel series", cmd)
	if err != nil {
		return nil, err
	}
	out := res.GetSeries()[0]
	return &ledgerdv1.CancelSeriesResponse{Series: seriesToAPI(out.GetSeries()), CancelledIds: out.GetCancelledIds()}, nil
}

// ModifySeries implements SeriesLedger: the occurrences from a.From on
// are cancelled and a series a.NewID continues the rule in the same
// rhythm (series.Series.Split) with the new duration or parts, booking
// what fits, in one log entry.
func (l *Ledger) ModifySeries(ctx context.Context, a ledger.ModifySeriesArgs) (*ledgerdv1.ModifySeriesResponse, error) {
	const op = "modify series"
	if why := fsm.ValidSeriesID(a.NewID); why != "" {
		return nil, fmt.Errorf("%s: %w", op, &ledger.FieldError{Field: "new_id", Reason: why})
	}
	if err := l.barrier(ctx, op, false); err != nil {
		return nil, err
	}
	old, ok := l.fsm.Series(a.ID)
	if !ok {
		return nil, outcome{fmt.Sprintf("series %q not found", a.ID), ledger.ErrNotFound}
	}
	spec, err := series.Decode(old.GetSpec())
	if err != nil {
		return nil, fmt.Errorf("%s: stored series: %w", op, err)
	}
	cur, err := series.Compile(spec, l.seriesLimits())
	if err != nil {
		return nil, seriesFieldErr(op, err)
	}
	now := l.seriesNow()
	from := max(a.From, now)
	_, rest := cur.Split(from)
	if rest == nil {
		return nil, fmt.Errorf("%s: %w", op, &ledger.FieldError{Field: "from", Reason: "the series has no occurrence at or after it"})
	}
	if a.Duration != 0 {
		rest.Duration = a.Duration
	}
	next, err := series.Compile(*rest, l.seriesLimits())
	if err != nil {
		return nil, seriesFieldErr(op, err)
	}
	parts := old.GetParts()
	if len(a.Parts) > 0 {
		parts = fsmParts(a.Parts)
	}
	cmd := envelope(fsmv1.Command_TYPE_CANCEL_SERIES, a.Write)
	then := &fsmv1.CreateSeries{Id: a.NewID, Spec: next.Spec().Encode(), Parts: parts, Labels: old.GetLabels(),
		First: batchToFSM(a.NewID, next.Next(series.NoneDecided, now, 0))}
	cmd.Payload = &fsmv1.Command_CancelSeries{CancelSeries: &fsmv1.CancelSeries{Id: a.ID, FromMillis: from, Then: then}}
	res, err := l.apply(ctx, op, cmd)
	if err != nil {
		return nil, err
	}
	outs := res.GetSeries()
	if len(outs) != 2 {
		return nil, fmt.Errorf("%s: %d series outcomes, want 2", op, len(outs))
	}
	booked, err := bookedToAPI(res, outs[1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return &ledgerdv1.ModifySeriesResponse{Old: seriesToAPI(outs[0].GetSeries()), CancelledIds: outs[0].GetCancelledIds(),
		Series: seriesToAPI(outs[1].GetSeries()), Booked: booked,
		Skipped: skippedToAPI(outs[1].GetSkipped())}, nil
}

// firstBatchLimits are lim for a new series' first batch, here and when
// the leader expands it again (SeriesStamp): it holds a whole bounded
// series (at most MaxOccurrences, which all or nothing is about, and no
// more than a batch of the log may); an endless one gets the rest of its
// horizon from the leader's tick.
func firstBatchLimits(lim series.Limits) series.Limits {
	lim.MaxPerExpansion = max(lim.MaxPerExpansion, min(lim.MaxOccurrences, fsm.MaxSeriesBatch))
	return lim
}

func batchToFSM(id string, b series.Batch) *fsmv1.SeriesBatch {
	out := &fsmv1.SeriesBatch{SeriesId: id, ThroughKey: b.Through}
	for _, o := range b.Book {
		out.Book = append(out.Book, &fsmv1.SeriesOccurrence{Key: o.Key, StartMillis: o.Start})
	}
	return out
}

// bookedToAPI describes the occurrences an entry booked: committed
// reservations made by the entry res answers. Each start comes from the
// occurrence's ID and the series' zone (series.KeyStart), not from the
// batch this node proposed: the leader may have expanded the batch again
// from the log time (SeriesStamp). The result names them only (it may be
// kept for an idempotency window); the rows are ordinary ones for Get and
// List.
func bookedToAPI(res *fsmv1.Result, out *fsmv1.SeriesOutcome) ([]*ledgerdv1.Reservation, error) {
	s := out.GetSeries()
	spec, err := series.Decode(s.GetSpec())
	if err != nil {
		return nil, fmt.Errorf("stored series %q: %w", s.GetId(), err)
	}
	rs := make([]*ledgerdv1.Reservation, 0, len(out.GetBookedIds()))
	for _, id := range out.GetBookedIds() {
		_, key, err := series.ParseOccurrenceID(id)
		if err != nil {
			return nil, fmt.Errorf("booked occurrence: %w", err)
		}
		start, err := series.KeyStart(key, spec.Zone)
		if err != nil {
			return nil, fmt.Errorf("booked occurrence %q: %w", id, err)
		}
		rs = append(rs, reservationToAPI(&fsmv1.Reservation{
			Id: id, Owner: s.GetOwner(), Labels: s.GetLabels(), Parts: s.GetParts(),
			StartMillis: start, EndMillis: start + spec.Duration, State: fsmv1.Reservation_STATE_COMMITTED,
			CreatedVersion: res.GetVersion(), UpdatedVersion: res.GetVersion(),
			CreatedMillis: res.GetNowMillis(), UpdatedMillis: res.GetNowMillis(),
		}))
	}
	return rs, nil
}

// skipReason names why an occurrence could not be booked.
var skipReason = map[fsmv1.Result_Status]string{
	fsmv1.Result_STATUS_REJECTED:          ledger.ReasonNoCapacity,
	fsmv1.Result_STATUS_INVALID:           "INVALID",
	fsmv1.Result_STATUS_CONFLICT:          "CONFLICT",
	fsmv1.Result_STATUS_NOT_FOUND:         "NOT_FOUND",
	fsmv1.Result_STATUS_PERMISSION_DENIED: "PERMISSION_DENIED",
}

func skippedToAPI(ss []*fsmv1.SeriesSkip) []*ledgerdv1.SkippedOccurrence {
	out := make([]*ledgerdv1.SkippedOccurrence, len(ss))
	for i, s := range ss {
		o := &ledgerdv1.SkippedOccurrence{Id: s.GetId(), Start: ledger.MsToTimestamp(s.GetStartMillis()),
			Reason: skipReason[s.GetStatus()], Message: s.GetMessage()}
		if o.Reason == "" {
			o.Reason = s.GetStatus().String()
		}
		if s.GetLaterOk() {
			o.EarliestAlternative = ledger.MsToTimestamp(s.GetLaterStartMillis())
		}
		out[i] = o
	}
	return out
}

// seriesToAPI converts a series row; its spec was checked when stored.
func seriesToAPI(r *fsmv1.Series) *ledgerdv1.Series {
	if r == nil {
		return nil
	}
	out := &ledgerdv1.Series{Id: r.GetId(), Tenant: r.GetOwner(), Booked: r.GetBooked(), Skipped: r.GetSkipped(),
		Cancelled: r.GetCancelledFromMillis() != 0, Labels: r.GetLabels(), CreatedVersion: r.GetCreatedVersion(), Version: r.GetUpdatedVersion(),
		Conflicts: ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_SKIP_CONFLICTS}
	if r.GetAllOrNothing() {
		out.Conflicts = ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_ALL_OR_NOTHING
	}
	for _, p := range r.GetParts() {
		out.Parts = append(out.Parts, &ledgerdv1.ResourceAmount{Resource: p.GetResource(), Amount: p.GetAmount()})
	}
	if t := r.GetThroughKey(); t != series.NoneDecided {
		out.DecidedThrough = time.Unix(t, 0).UTC().Format("20060102T150405")
	}
	if spec, err := series.Decode(r.GetSpec()); err == nil {
		out.Repeat, out.Tz, out.StartLocal = spec.Rule, spec.Zone, spec.Start
		out.Duration = ledger.MsToDuration(spec.Duration)
		if spec.Horizon != 0 {
			out.Horizon = ledger.MsToDuration(spec.Horizon)
		}
		if spec.End != 0 {
			out.End = ledger.MsToTimestamp(spec.End)
		}
	}
	return out
}
