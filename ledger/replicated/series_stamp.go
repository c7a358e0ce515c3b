package replicated

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/series"
)

// SeriesStamp is the leader's stamp (cluster.Config.Stamp) for a ledger
// with standing reservations.
//
// The node that takes a ReserveSeries or ModifySeries request expands the
// new series' first occurrences with its own clock, but the entry is
// applied at the log time the leader stamps a moment later. An occurrence
// that starts in between was in the future when the caller asked and is
// in the past when the entry applies: the FSM refuses it as past and
// counts it as skipped, and a COUNT series comes out one short, although
// nobody could have booked it. So when the first batch of a new series
// holds an occurrence that starts before the time the entry will apply
// at, the leader expands that batch again from that time: the series'
// not-before becomes that time and COUNT counts from there, exactly as
// if the request had arrived then.
//
// The rewrite is the leader's choice of what to propose, not a change
// to how entries apply, so replicas of any release apply it alike. Every
// other command is stamped as fsm.Stamp stamps it.
type SeriesStamp struct {
	fsm    *fsm.FSM
	limits series.Limits
	log    *slog.Logger
}

// NewSeriesStamp returns the stamp of f's leader, expanding with limits
// (those of ConfigureSeries; a spec a creator with larger limits stored
// is expanded within its own horizon, as SeriesTicker does).
func NewSeriesStamp(f *fsm.FSM, limits series.Limits, log *slog.Logger) *SeriesStamp {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SeriesStamp{fsm: f, limits: limits, log: log}
}

// Stamp returns cmd stamped with the leader's clock nowMillis, its first
// series batch expanded again when part of it would start in the past
// (see SeriesStamp). Like fsm.Stamp it assumes cmd is well formed and
// refuses what is not with fsm.ErrMalformed.
func (s *SeriesStamp) Stamp(cmd []byte, nowMillis int64) ([]byte, error) {
	stamped, t, err := fsm.StampType(cmd, nowMillis)
	if err != nil || (t != fsmv1.Command_TYPE_CREATE_SERIES && t != fsmv1.Command_TYPE_CANCEL_SERIES) {
		return stamped, err
	}
	c, err := fsm.Decode(cmd)
	if err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	cs := c.GetCreateSeries()
	if t == fsmv1.Command_TYPE_CANCEL_SERIES {
		cs = c.GetCancelSeries().GetThen()
	}
	// The entry applies at the later of this stamp and the log time
	// already reached (an earlier leader's clock may have been ahead).
	at := max(nowMillis, s.fsm.Now())
	if cs == nil || !s.expandFrom(cs, at) {
		return stamped, nil
	}
	c.NowMillis = nowMillis
	out, err := fsm.Encode(c)
	if err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	return out, nil
}

// expandFrom replaces the first batch of cs, and its spec's not-before,
// with an expansion from at when the batch holds an occurrence starting
// before at. It reports whether it changed cs; a spec this leader cannot
// compile (limits smaller than its creator's) is left as it is, and the
// FSM then reports the past occurrences as skipped.
func (s *SeriesStamp) expandFrom(cs *fsmv1.CreateSeries, at int64) bool {
	late := false
	for _, o := range cs.GetFirst().GetBook() {
		late = late || o.GetStartMillis() < at
	}
	if !late {
		return false
	}
	spec, err := series.Decode(cs.GetSpec())
	if err != nil {
		return false
	}
	spec.NotBefore = max(spec.NotBefore, at)
	lim := firstBatchLimits(s.limits)
	lim.MaxHorizon = max(lim.MaxHorizon, time.Duration(spec.Horizon)*time.Millisecond)
	ser, err := series.Compile(spec, lim)
	if err != nil {
		s.log.Warn("series: first occurrences not expanded again at log time; those already past will be skipped",
			"series", cs.GetId(), "log_time", time.UnixMilli(at).UTC(), "err", err)
		return false
	}
	cs.Spec = ser.Spec().Encode()
	cs.First = batchToFSM(cs.GetId(), ser.Next(series.NoneDecided, at, 0))
	return true
}
