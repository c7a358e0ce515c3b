package replicated

import (
	"bytes"
	"log/slog"
	"sync"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/series"
)

// SeriesTicker is the leader's part of standing reservations: on the
// cluster's due-time tick it expands every live series from its
// replicated watermark with the leader's clock and proposes the batches
// in one TYPE_EXPAND_SERIES entry (which, like every entry, also expires
// holds). A leader that dies between two expansions leaves the watermark
// where the log has it; the next leader expands from there, and apply
// keeps only what is above it (series.Accept), so every occurrence is
// booked once.
//
// Tick and NextDue are cluster.Config.Tick and NextDue. They are called
// from the leader's tick goroutine; the cache is guarded for callers that
// read NextDue elsewhere.
type SeriesTicker struct {
	fsm    *fsm.FSM
	limits series.Limits
	now    func() time.Time
	log    *slog.Logger

	mu    sync.Mutex
	cache map[string]*tickEntry
	// The earliest due time of the series table as of changedAt (the
	// FSM's SeriesChangedAt); valid while that has not moved and the due
	// time lies ahead.
	changedAt uint64
	next      int64
	hasNext   bool
	valid     bool
}

// tickEntry is a compiled series and when it is next due, for the spec
// and watermark it was computed for.
type tickEntry struct {
	spec    []byte
	through int64
	s       *series.Series
	// due is when the next expansion books or passes something (Unix
	// ms); ok false: never (a bounded series that is done, or a spec
	// this release cannot compile).
	due int64
	ok  bool
}

// NewSeriesTicker returns the tick of f's series, expanding with limits
// (the horizon cap applies to specs already stored only through their own
// horizon) and the leader's clock now.
func NewSeriesTicker(f *fsm.FSM, limits series.Limits, now func() time.Time, log *slog.Logger) *SeriesTicker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SeriesTicker{fsm: f, limits: limits, now: now, log: log, cache: make(map[string]*tickEntry)}
}

// entry returns the cache entry of r, recomputed when its spec or
// watermark changed.
func (t *SeriesTicker) entry(r *fsmv1.Series, now int64) *tickEntry {
	e := t.cache[r.GetId()]
	if e != nil && bytes.Equal(e.spec, r.GetSpec()) && e.through == r.GetThroughKey() {
		return e
	}
	e = &tickEntry{spec: r.GetSpec(), through: r.GetThroughKey()}
	t.cache[r.GetId()] = e
	spec, err := series.Decode(r.GetSpec())
	if err == nil {
		// Stored specs passed the limits of the node that created them;
		// a node with smaller limits still expands them as stored.
		lim := t.limits
		lim.MaxHorizon = max(lim.MaxHorizon, time.Duration(spec.Horizon)*time.Millisecond)
		lim.MaxOccurrences = max(lim.MaxOccurrences, 1_000_000)
		e.s, err = series.Compile(spec, lim)
	}
	if err != nil {
		t.log.Warn("series cannot be expanded by this release", "series", r.GetId(), "err", err)
		return e
	}
	switch {
	case e.s.Done(e.through):
	case e.s.Next(e.through, now, 1).Through != e.through:
		// Something to book or to pass over now.
		e.due, e.ok = now, true
	case spec.Horizon != 0:
		// The first occurrence beyond the horizon is due when it enters it.
		from := now + spec.Horizon
		if os := e.s.Occurrences(from, from+int64(t.limits.MaxHorizon/time.Millisecond)+spec.Horizon); len(os) > 0 {
			e.due, e.ok = os[0].Start-spec.Horizon, true
		}
	}
	return e
}

// batches returns the batches due now, and the earliest due time of the
// others.
func (t *SeriesTicker) batches(now int64) (out []*fsmv1.SeriesBatch, next int64, has bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := t.fsm.SeriesChangedAt()
	if t.valid && changed == t.changedAt && (!t.hasNext || t.next > now) {
		// Nothing changed and nothing is due: no need to read the table.
		return nil, t.next, t.hasNext
	}
	defer func() {
		t.changedAt, t.next, t.hasNext, t.valid = changed, next, has, len(out) == 0
	}()
	live := t.fsm.LiveSeries()
	seen := make(map[string]bool, len(live))
	for _, r := range live {
		seen[r.GetId()] = true
		e := t.entry(r, now)
		if !e.ok {
			continue
		}
		if e.due <= now {
			b := e.s.Next(e.through, now, 0)
			if b.Through > e.through {
				out = append(out, batchToFSM(r.GetId(), b))
				continue
			}
		}
		if !has || e.due < next {
			next, has = e.due, true
		}
	}
	for id := range t.cache {
		if !seen[id] {
			delete(t.cache, id)
		}
	}
	return out, next, has
}

// Tick returns the entry the leader proposes when something is due: the
// due series' batches (at most 256 series per entry), or the plain
// expiry tick. It expands from the log time already reached when that is
// ahead of this leader's clock (an earlier leader's clock ran ahead): an
// occurrence between the two would be refused as past and counted as
// skipped, where Next passes it over.
func (t *SeriesTicker) Tick() []byte {
	bs, _, _ := t.batches(max(t.now().UnixMilli(), t.fsm.Now()))
	if len(bs) == 0 {
		return fsm.TickCommand()
	}
	if len(bs) > 256 {
		bs = bs[:256]
	}
	b, err := fsm.Encode(&fsmv1.Command{Type: fsmv1.Command_TYPE_EXPAND_SERIES,
		Payload: &fsmv1.Command_ExpandSeries{ExpandSeries: &fsmv1.ExpandSeries{Batches: bs}}})
	if err != nil {
		t.log.Warn("series tick", "err", err)
		return fsm.TickCommand()
	}
	return b
}

// NextDue is the FSM's next due time or a series', whichever is first.
func (t *SeriesTicker) NextDue() (int64, bool) {
	at, ok := t.fsm.NextDue()
	now := t.now().UnixMilli()
	bs, next, has := t.batches(now)
	if len(bs) > 0 {
		next, has = now, true
	}
	if has && (!ok || next < at) {
		return next, true
	}
	return at, ok
}
