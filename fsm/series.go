package fsm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/series"
	"google.golang.org/protobuf/proto"
)

// Standing reservations (issue #20): the series table and the three
// series commands. The proposer expands a series' rule into instants
// (package series, with its own zone database); entries carry the
// instants, and apply only decodes the stored spec (series.Decode, no
// zone data), checks each batch (series.CheckBatch), keeps what is above
// the series' watermark (series.Accept), and books every fresh
// occurrence through hold, the admission of a single one-phase
// reservation, with the ID series.OccurrenceID(series, key). Nothing here
// expands a rule, reads a clock or a zone database.

// MaxSeriesIDLen is the longest series ID: occurrence IDs add '@' and a
// 15-byte local start and must stay within the 128 bytes of an ID.
const MaxSeriesIDLen = 112

// MaxSeriesBatch is the most occurrences one batch may carry (a bounded
// series has at most series.DefaultLimits().MaxOccurrences, 1,000).
const MaxSeriesBatch = 1000

// maxSeriesBatches is the most batches one TYPE_EXPAND_SERIES may carry.
const maxSeriesBatches = 256

// seriesState is the series table and the scratch of booking
// occurrences.
type seriesState struct {
	// rows holds every series by ID. Records are immutable once stored.
	rows map[string]*fsmv1.Series
	// occurrence is the ID of the occurrence hold is booking right now
	// ("" otherwise): newID accepts it although it contains '@'.
	occurrence string
	// buffering holds back the events of tentative bookings (all or
	// nothing) in events.
	buffering bool
	events    []heldEvent
	// changedAt is the log index of the last change of rows (the
	// snapshot's index after a restore): a cache key for readers, not
	// replicated state. The table at an index is the log's up to it.
	changedAt uint64
}

// heldEvent is an event emit held back while buffering.
type heldEvent struct {
	t   fsmv1.Event_Type
	r   *fsmv1.Reservation
	res *fsmv1.Resource
}

// ValidSeriesID returns why id can be no series' ID, or "": 1 to 112
// bytes of A-Z a-z 0-9 . _ : -, not starting with the reserved prefix.
func ValidSeriesID(id string) string {
	if len(id) > MaxSeriesIDLen {
		return fmt.Sprintf("longer than %d bytes (occurrence IDs add 16)", MaxSeriesIDLen)
	}
	return validID(id)
}

// checkCreateSeries runs the stateless checks of a series creation.
func checkCreateSeries(cfg *Config, field string, c *fsmv1.CreateSeries) *FieldError {
	if why := ValidSeriesID(c.GetId()); why != "" {
		return fieldErr(field+".id", why)
	}
	spec, err := series.Decode(c.GetSpec())
	if err != nil {
		return fieldErr(field+".spec", err.Error())
	}
	if spec.Duration <= 0 {
		return fieldErr(field+".spec", "duration must be > 0")
	}
	if fe := checkParts(field+".parts", c.GetParts()); fe != nil {
		return fe
	}
	if len(c.GetParts()) == 0 {
		return fieldErr(field+".parts", "at least one part is required")
	}
	seen := make(map[string]bool, len(c.GetParts()))
	for i, p := range c.GetParts() {
		f := fmt.Sprintf("%s.parts[%d]", field, i)
		if why := validResourceName(p.GetResource()); why != "" {
			return fieldErr(f+".resource", why)
		}
		if seen[p.GetResource()] {
			return fieldErr(f+".resource", fmt.Sprintf("resource %q named twice", p.GetResource()))
		}
		seen[p.GetResource()] = true
		if p.GetAmount() <= 0 {
			return fieldErr(f+".amount", "must be > 0")
		}
	}
	if fe := checkLabels(field+".labels", c.GetLabels()); fe != nil {
		return fe
	}
	if b := c.GetFirst(); b != nil {
		if b.GetSeriesId() != c.GetId() {
			return fieldErr(field+".first.series_id", fmt.Sprintf("must be the series ID %q", c.GetId()))
		}
		if fe := checkSeriesBatch(field+".first", b, spec.Duration); fe != nil {
			return fe
		}
	}
	return nil
}

// seriesPublicField renames the paths of the series commands to the
// fields of the public SeriesService requests: create_series.parts[0] →
// parts[0], cancel_series.from_millis → from, cancel_series.then.id →
// new_id (ModifySeries). The batches are the server's own.
func seriesPublicField(path string) (string, bool) {
	switch {
	case path == "cancel_series.from_millis":
		return "from", true
	case path == "cancel_series.then.id":
		return "new_id", true
	}
	for _, prefix := range []string{"create_series.", "cancel_series.then.", "cancel_series."} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

// checkSeriesBatch checks a batch without the state: its size, key order
// and that every occurrence lies before the end of time.
func checkSeriesBatch(field string, b *fsmv1.SeriesBatch, dur int64) *FieldError {
	if len(b.GetBook()) > MaxSeriesBatch {
		return fieldErr(field+".book", fmt.Sprintf("more than %d occurrences", MaxSeriesBatch))
	}
	if err := series.CheckBatch(batchOf(b)); err != nil {
		return fieldErr(field+".book", err.Error())
	}
	for i, o := range b.GetBook() {
		if o.GetStartMillis() < 0 || o.GetStartMillis() > MaxTimeMillis-dur {
			return fieldErr(fmt.Sprintf("%s.book[%d].start_millis", field, i), "outside 1970 .. the end of time less the duration")
		}
	}
	return nil
}

// checkSeriesCommand runs the stateless checks of the series commands.
func checkSeriesCommand(cfg *Config, cmd *fsmv1.Command) *FieldError {
	switch cmd.GetType() {
	case fsmv1.Command_TYPE_CREATE_SERIES:
		if fe := checkNewRow(cmd, "create_series.id", ""); fe != nil {
			return fe
		}
		return checkCreateSeries(cfg, "create_series", cmd.GetCreateSeries())
	case fsmv1.Command_TYPE_EXPAND_SERIES:
		e := cmd.GetExpandSeries()
		if len(e.GetBatches()) > maxSeriesBatches {
			return fieldErr("expand_series.batches", fmt.Sprintf("more than %d batches", maxSeriesBatches))
		}
		return nil
	case fsmv1.Command_TYPE_CANCEL_SERIES:
		c := cmd.GetCancelSeries()
		if why := ValidSeriesID(c.GetId()); why != "" {
			return fieldErr("cancel_series.id", why)
		}
		if c.GetFromMillis() < 0 || c.GetFromMillis() > MaxTimeMillis {
			return fieldErr("cancel_series.from_millis", "outside 1970 .. the end of time")
		}
		if t := c.GetThen(); t != nil {
			if t.GetAllOrNothing() {
				return fieldErr("cancel_series.then.all_or_nothing", "a replacement series books what fits (skip conflicts)")
			}
			if t.GetId() == c.GetId() {
				return fieldErr("cancel_series.then.id", "must differ from the series it replaces")
			}
			return checkCreateSeries(cfg, "cancel_series.then", t)
		}
	}
	return nil
}

// batchOf converts a batch for the series package.
func batchOf(b *fsmv1.SeriesBatch) series.Batch {
	out := series.Batch{Through: b.GetThroughKey(), Book: make([]series.Occurrence, len(b.GetBook()))}
	for i, o := range b.GetBook() {
		out.Book[i] = series.Occurrence{Key: o.GetKey(), Start: o.GetStartMillis()}
	}
	return out
}

func (s *state) dispatchSeries(cmd *fsmv1.Command) *fsmv1.Result {
	if fe := checkSeriesCommand(&s.cfg, cmd); fe != nil {
		return fe.result()
	}
	switch cmd.GetType() {
	case fsmv1.Command_TYPE_CREATE_SERIES:
		res := &fsmv1.Result{Status: fsmv1.Result_STATUS_OK}
		return s.createSeries(cmd, cmd.GetCreateSeries(), res)
	case fsmv1.Command_TYPE_EXPAND_SERIES:
		return s.expandSeries(cmd.GetExpandSeries())
	default:
		return s.cancelSeries(cmd)
	}
}

// createSeries creates a series and books its first batch, adding its
// outcome to res. An all-or-nothing series whose first batch does not fit
// whole is not created and books nothing (REJECTED, with the occurrences
// that do not fit).
func (s *state) createSeries(cmd *fsmv1.Command, c *fsmv1.CreateSeries, res *fsmv1.Result) *fsmv1.Result {
	id := c.GetId()
	if _, dup := s.ser.rows[id]; dup {
		return conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, fmt.Sprintf("series %q already exists", id))
	}
	for _, p := range c.GetParts() {
		if _, ok := s.resources[p.GetResource()]; !ok {
			return notFound(fmt.Sprintf("resource %q not found", p.GetResource()))
		}
	}
	if _, bad := s.routeScheduled(plannerParts(c.GetParts())); bad != nil {
		// Every occurrence would be refused for it: say so once.
		return invalid("create_series.parts", bad.GetInvalid().GetReason())
	}
	if c.GetAllOrNothing() {
		for i, p := range c.GetParts() {
			if pol := s.resources[p.GetResource()].GetPolicy().GetPolicy(); pol != fsmv1.AdmissionPolicy_ADMISSION_POLICY_UNSPECIFIED && pol != fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT {
				return invalid(fmt.Sprintf("create_series.parts[%d].resource", i),
					fmt.Sprintf("resource %q has policy %s: all or nothing needs REJECT resources (book with skip conflicts)", p.GetResource(), pol))
			}
		}
	}
	row := &fsmv1.Series{
		Id:             id,
		Owner:          cmd.GetOwner(),
		Spec:           c.GetSpec(),
		Parts:          sortedParts(plannerParts(c.GetParts())),
		Labels:         maps.Clone(c.GetLabels()),
		AllOrNothing:   c.GetAllOrNothing(),
		ThroughKey:     series.NoneDecided,
		CreatedVersion: s.index,
		UpdatedVersion: s.index,
		CreatedMillis:  s.now,
		UpdatedMillis:  s.now,
	}
	first := c.GetFirst()
	if first == nil {
		first = &fsmv1.SeriesBatch{SeriesId: id, ThroughKey: series.NoneDecided}
	}
	if !c.GetAllOrNothing() {
		out := s.bookBatch(row, first)
		res.Series = append(res.Series, out)
		return res
	}
	s.ser.buffering = true
	out := s.bookBatch(row, first)
	s.ser.buffering = false
	held := s.ser.events
	s.ser.events = nil
	if len(out.Skipped) == 0 {
		for _, e := range held {
			s.emit(e.t, e.r, e.res)
		}
		res.Series = append(res.Series, out)
		return res
	}
	// Undo the tentative bookings, newest first: plain rows on REJECT
	// resources, so releasing the booking and dropping the row restores
	// the planner and the table exactly.
	for _, rid := range slices.Backward(out.BookedIds) {
		s.release(rid)
		s.put(rid, nil)
	}
	delete(s.ser.rows, id)
	sk := out.Skipped[0]
	rj := &fsmv1.Result{
		Status: fsmv1.Result_STATUS_REJECTED,
		Message: fmt.Sprintf("%d of %d occurrences cannot be booked (first: %s: %s); nothing was booked",
			len(out.Skipped), len(out.Skipped)+len(out.BookedIds), sk.GetId(), sk.GetMessage()),
		Detail: &fsmv1.Result_Rejected{Rejected: &fsmv1.Rejected{LaterOk: sk.GetLaterOk(), LaterStartMillis: sk.GetLaterStartMillis()}},
	}
	row.Booked, row.Skipped, row.ThroughKey = 0, 0, series.NoneDecided
	out.Series, out.BookedIds = row, nil
	rj.Series = append(rj.Series, out)
	return rj
}

// bookBatch books the fresh occurrences of batch b for the series row
// (not yet stored, or a copy) and stores the row with its new watermark
// and counts. Occurrences at or after the series' end are dropped: a
// batch proposed before a cancel was applied books nothing after it.
func (s *state) bookBatch(row *fsmv1.Series, b *fsmv1.SeriesBatch) *fsmv1.SeriesOutcome {
	out := &fsmv1.SeriesOutcome{}
	fresh, through := series.Accept(row.GetThroughKey(), batchOf(b))
	spec, err := series.Decode(row.GetSpec())
	if err != nil {
		// Stored specs were decoded when they were stored.
		panic(fmt.Sprintf("fsm: stored series %q: %v", row.GetId(), err))
	}
	for _, o := range fresh {
		if spec.End != 0 && o.Start >= spec.End {
			continue
		}
		occID := series.OccurrenceID(row.GetId(), o.Key)
		start := o.Start
		sub := &fsmv1.Command{
			Type:      fsmv1.Command_TYPE_RESERVE,
			Version:   s.ver,
			NowMillis: s.now,
			Owner:     row.GetOwner(),
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Id:             occID,
				Parts:          row.GetParts(),
				DurationMillis: spec.Duration,
				StartMillis:    &start,
				Labels:         row.GetLabels(),
			}},
		}
		// The same admission as a single one-phase reservation.
		s.ser.occurrence = occID
		r := s.hold(sub, true)
		s.ser.occurrence = ""
		if r.GetStatus() == fsmv1.Result_STATUS_OK {
			out.BookedIds = append(out.BookedIds, occID)
			row.Booked++
			continue
		}
		row.Skipped++
		out.Skipped = append(out.Skipped, &fsmv1.SeriesSkip{
			Id:               occID,
			StartMillis:      start,
			Status:           r.GetStatus(),
			Message:          r.GetMessage(),
			LaterOk:          r.GetRejected().GetLaterOk(),
			LaterStartMillis: r.GetRejected().GetLaterStartMillis(),
		})
	}
	row.ThroughKey = through
	row.UpdatedVersion, row.UpdatedMillis = s.index, s.now
	s.ser.changedAt = s.index
	if s.ser.rows == nil {
		s.ser.rows = make(map[string]*fsmv1.Series)
	}
	s.ser.rows[row.GetId()] = row
	out.Series = row
	return out
}

// expandSeries applies the leader's batches. A batch for a series that
// does not exist, or that fails its checks, changes nothing; the others
// still apply (the entry is one tick for many series).
func (s *state) expandSeries(e *fsmv1.ExpandSeries) *fsmv1.Result {
	res := &fsmv1.Result{Status: fsmv1.Result_STATUS_OK}
	for _, b := range e.GetBatches() {
		old, ok := s.ser.rows[b.GetSeriesId()]
		if !ok || old.GetCancelledFromMillis() != 0 {
			continue
		}
		spec, err := series.Decode(old.GetSpec())
		if err != nil {
			panic(fmt.Sprintf("fsm: stored series %q: %v", old.GetId(), err))
		}
		if checkSeriesBatch("expand_series.batches", b, spec.Duration) != nil {
			continue
		}
		if b.GetThroughKey() <= old.GetThroughKey() {
			continue // nothing new: a repeat or a stale leader's batch
		}
		res.Series = append(res.Series, s.bookBatch(proto.CloneOf(old), b))
	}
	return res
}

// cancelSeries ends a series at from (the log time when earlier or
// unset): the stored spec ends there, every occurrence starting at or
// after it is cancelled (committed) or aborted (held) through the normal
// commands, and no later batch books anything there. With then set, the
// replacing series is created in the same entry.
func (s *state) cancelSeries(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetCancelSeries()
	old, ok := s.ser.rows[c.GetId()]
	if !ok {
		return notFound(fmt.Sprintf("series %q not found", c.GetId()))
	}
	if !cmd.GetPrivileged() && cmd.GetOwner() != old.GetOwner() {
		return &fsmv1.Result{Status: fsmv1.Result_STATUS_PERMISSION_DENIED, Message: fmt.Sprintf("series %q belongs to another owner", c.GetId())}
	}
	if t := c.GetThen(); t != nil {
		if _, dup := s.ser.rows[t.GetId()]; dup {
			return conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, fmt.Sprintf("series %q already exists", t.GetId()))
		}
		for _, p := range t.GetParts() {
			if _, ok := s.resources[p.GetResource()]; !ok {
				return notFound(fmt.Sprintf("resource %q not found", p.GetResource()))
			}
		}
	}
	from := max(c.GetFromMillis(), s.now)
	spec, err := series.Decode(old.GetSpec())
	if err != nil {
		panic(fmt.Sprintf("fsm: stored series %q: %v", old.GetId(), err))
	}
	row := proto.CloneOf(old)
	if (spec.End == 0 || from < spec.End) && from > spec.NotBefore {
		// As series.Split's first half: bounded by End, no horizon. A
		// series cancelled before its first instant keeps its spec;
		// cancelled_from_millis stops it all the same.
		spec.End, spec.Horizon = from, 0
		row.Spec = spec.Encode()
	}
	if row.CancelledFromMillis == 0 || from < row.CancelledFromMillis {
		row.CancelledFromMillis = from
	}
	row.UpdatedVersion, row.UpdatedMillis = s.index, s.now
	out := &fsmv1.SeriesOutcome{Series: row}
	prefix := c.GetId() + "@"
	var ids []string
	s.byID.AscendGreaterOrEqual(idPivot(prefix), func(row string) bool {
		id := rowID(row)
		if !strings.HasPrefix(id, prefix) {
			return false
		}
		ids = append(ids, strings.Clone(id))
		return true
	})
	for _, id := range ids {
		r, _ := s.resv.get(id)
		if r.GetStartMillis() < from {
			continue
		}
		sub := &fsmv1.Command{Owner: r.GetOwner(), Privileged: true,
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}}
		var done *fsmv1.Result
		switch r.GetState() {
		case fsmv1.Reservation_STATE_HELD:
			done = s.abort(sub)
		case fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_STATE_ACTIVE, fsmv1.Reservation_STATE_DEGRADED:
			done = s.cancel(sub)
		default:
			continue
		}
		if done.GetStatus() == fsmv1.Result_STATUS_OK {
			out.CancelledIds = append(out.CancelledIds, id)
		}
	}
	s.ser.rows[row.GetId()] = row
	s.ser.changedAt = s.index
	res := &fsmv1.Result{Status: fsmv1.Result_STATUS_OK, Series: []*fsmv1.SeriesOutcome{out}}
	if t := c.GetThen(); t != nil {
		return s.createSeries(cmd, t, res)
	}
	return res
}

// captureSeries adds the series table to a snapshot, sorted by ID.
func (s *state) captureSeries(msg *fsmv1.Snapshot) {
	for _, id := range slices.Sorted(maps.Keys(s.ser.rows)) {
		msg.Series = append(msg.Series, s.ser.rows[id])
	}
}

// restoreSeries reads the series table of a snapshot.
func (s *state) restoreSeries(msg *fsmv1.Snapshot) error {
	s.ser.changedAt = msg.GetAppliedIndex()
	prev := ""
	for i, r := range msg.GetSeries() {
		id := r.GetId()
		if why := ValidSeriesID(id); why != "" {
			return badf("series[%d].id: %s", i, why)
		}
		if i > 0 && id <= prev {
			return badf("series not sorted by ID at %d (%q after %q)", i, id, prev)
		}
		prev = id
		if _, err := series.Decode(r.GetSpec()); err != nil {
			return badf("series[%d].spec: %v", i, err)
		}
		if s.ser.rows == nil {
			s.ser.rows = make(map[string]*fsmv1.Series, len(msg.GetSeries()))
		}
		s.ser.rows[id] = r
	}
	return nil
}

// Series returns a copy of series id.
func (f *FSM) Series(id string) (*fsmv1.Series, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.ser.rows[id]
	if !ok {
		return nil, false
	}
	return proto.CloneOf(r), true
}

// SeriesChangedAt returns the log index of the last change of the series
// table (the restored snapshot's index after a restore). Readers that
// cache what they derive from LiveSeries recompute when it moves.
func (f *FSM) SeriesChangedAt() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.ser.changedAt
}

// LiveSeries returns copies of the series that may still book
// occurrences (not cancelled), sorted by ID: what the leader's tick
// expands. Whether a bounded one is done is for the caller to decide
// (series.Series.Done needs the compiled rule).
func (f *FSM) LiveSeries() []*fsmv1.Series {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*fsmv1.Series
	for _, r := range f.st.ser.rows {
		if r.GetCancelledFromMillis() == 0 {
			out = append(out, proto.CloneOf(r))
		}
	}
	slices.SortFunc(out, func(a, b *fsmv1.Series) int { return cmp.Compare(a.GetId(), b.GetId()) })
	return out
}
