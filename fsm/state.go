package fsm

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/sortedlist"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// timerKind orders the work that log time triggers. At one instant, holds
// expire before reservations activate, and drops come last.
type timerKind uint8

const (
	timerHoldExpiry timerKind = iota
	timerModExpiry
	timerActivate
	timerComplete
	timerDrop
)

// timer is one piece of time-triggered work for reservation id.
type timer struct {
	at   int64
	kind timerKind
	id   string
}

func timerLess(a, b timer) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.id < b.id
}

// state is everything Apply changes. It is owned by the FSM and guarded by
// its lock.
//
// Records (the encoded rows of resv, *fsmv1.Resource, *fsmv1.Event, and
// the records of idem) are immutable once stored: a change stores a
// modified copy. Snapshots and readers can therefore share them. A row
// message that was stored (put) is not changed afterwards either: events
// and results share it.
type state struct {
	cfg Config

	// index and now are the last applied log index and log time.
	// Invariant: now never decreases.
	index uint64
	now   int64
	// ver is the envelope version of the entry being applied: what an
	// entry means may depend on it (see versionEdge).
	ver uint32

	resources map[string]*fsmv1.Resource
	resv      rowStore
	// byID holds the rows of resv ordered by ID (rowLess): the same
	// strings as resv's values, so it costs only its chunks. Walks in ID
	// order read rows from it without a lookup each, and a snapshot
	// clones it (copy on write) instead of copying every row under the
	// lock.
	byID *sortedlist.List[string]
	// timers and drops hold exactly timersFor(r) for every r in resv:
	// drops the drop timers (one per ended row, at the row's last
	// change: it is due retention later), timers the others.
	timers *sortedlist.List[timer]
	drops  *sortedlist.List[timer]
	// retention and maxEnded are the retention of ended rows in force,
	// retentionSet whether an entry set them; idemMaxKeys is the cap on
	// idempotency keys in force, idemMaxSet whether an entry set it
	// (retention.go).
	retention    int64
	maxEnded     int64
	retentionSet bool
	idemMaxKeys  int
	idemMaxSet   bool
	// dropBudget is how many more ended rows the entry being applied may
	// drop (maxDropsPerEntry at its start).
	dropBudget int
	// lastPut is the row put stored last (nil after a removal), so the
	// entry's result need not decode it again, and lastRow its encoding
	// as stored, so the result need not encode it again either (put's
	// rows are not changed once stored); scan is put's scratch.
	lastPut *fsmv1.Reservation
	lastRow string
	// gotRow is the row getForChange decoded last and gotMeta its
	// bookkeeping fields, read before the caller changed the message:
	// put takes them instead of scanning the row it replaces again.
	gotRow  string
	gotMeta rowMeta
	// gotScan says that gotOwner, gotParts and gotPend hold the owner
	// and parts of gotRow, read with it while usage is tracked, so that
	// put's accounting need not scan the row it replaces.
	gotScan           bool
	gotOwner          string
	gotParts, gotPend []scanPart
	// absent is an ID newID has just found missing from resv, so that
	// put, which usually stores it next, need not look it up again. Only
	// put changes resv, and every put clears it.
	absent string
	scan   rowScan

	// idem remembers each idempotency key, scoped by owner, with its
	// encoded first Result, in apply order (so also in log time order):
	// the oldest is pruned first, by the window and by the count cap.
	idem idemStore

	// history is the retained tail of events, oldest first.
	history []*fsmv1.Event

	// plan books every live reservation under its ID and every pending
	// modification under modKey(ID).
	plan *planner.Planner

	// byState counts reservations per state; pendingMods counts pending
	// modifications.
	byState     map[fsmv1.Reservation_State]int
	pendingMods int

	// Per-entry scratch: next event seq and the number of expirations.
	seq     uint32
	expired int64
	// autoN is, while a group member is applied, how many members before
	// it took their reservation ID from the index (0 for a lone entry):
	// the member's own is then GroupAutoID(index, autoN).
	autoN int

	// pol is the admission scheduler and its counters (policy.go).
	pol policyState

	// units holds the unit schedule of every resource with units (units.go).
	units map[string]*planner.UnitSchedule
	// unitsAdvanced says that every schedule of units has been advanced
	// to unitsNow; installing a schedule clears it.
	unitsAdvanced bool
	unitsNow      int64
	// ser is the series table and the scratch of booking occurrences
	// (series.go).
	ser seriesState
	// lim is the tenant limit table and the usage it needs (limits.go).
	lim limitState

	// pinTouched lists the rows with a materialization record the
	// current entry stored (materialization.go).
	pinTouched []string
}

func newState(cfg Config) *state {
	return &state{
		cfg:       cfg,
		resources: make(map[string]*fsmv1.Resource),
		resv:      newRowStore(0),
		byID:      sortedlist.New(rowLess),
		timers:    sortedlist.New(timerLess),
		drops:     sortedlist.New(timerLess),
		retention: cfg.Retention,
		// The configured cap until an entry sets one.
		idemMaxKeys: cfg.IdempotencyMaxKeys,
		plan:        planner.New(cfg.Timelines),
		byState:     make(map[fsmv1.Reservation_State]int),
	}
}

// modSuffix marks the planner booking of a pending modification. Client IDs
// cannot contain '~', so it never collides with a reservation ID.
const modSuffix = "~mod"

func modKey(id string) string { return id + modSuffix }

// addSat returns a+b, saturating at math.MaxInt64 (b >= 0).
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func isTerminal(s fsmv1.Reservation_State) bool {
	switch s {
	case fsmv1.Reservation_STATE_COMPLETED, fsmv1.Reservation_STATE_ABORTED,
		fsmv1.Reservation_STATE_EXPIRED, fsmv1.Reservation_STATE_CANCELLED,
		fsmv1.Reservation_STATE_DENIED:
		return true
	}
	return false
}

// timersFor appends to buf the time-triggered work a reservation in its
// current state is waiting for (at most two timers, so a caller's [2]timer
// array keeps this off the heap).
func (s *state) timersFor(buf []timer, m *rowMeta) []timer {
	id := m.id
	switch st := m.state; {
	case st == fsmv1.Reservation_STATE_HELD, st == fsmv1.Reservation_STATE_PENDING_APPROVAL:
		return append(buf, timer{m.holdExp, timerHoldExpiry, id})
	case (st == fsmv1.Reservation_STATE_COMMITTED || st == fsmv1.Reservation_STATE_ACTIVE) && m.scheduled():
		// The scheduler starts and finishes its rows (advance).
		return buf
	case st == fsmv1.Reservation_STATE_COMMITTED:
		buf = append(buf, timer{m.start, timerActivate, id})
		if m.hasPending {
			buf = append(buf, timer{m.pendExp, timerModExpiry, id})
		}
		return buf
	case st == fsmv1.Reservation_STATE_ACTIVE, st == fsmv1.Reservation_STATE_DEGRADED:
		return append(buf, timer{m.end, timerComplete, id})
	case isTerminal(st):
		return append(buf, timer{m.update, timerDrop, id})
	}
	return buf
}

// put stores r under its ID (r == nil removes id), keeping ids, timers and
// the counters consistent. r must not be changed afterwards.
func (s *state) put(id string, r *fsmv1.Reservation) {
	var (
		old string
		had bool
	)
	switch {
	case s.absent != "" && id == s.absent:
		// newID found it missing, and nothing has been stored since.
		if verifyCodec {
			if _, ok := s.resv.raw(id); ok {
				panic(fmt.Sprintf("fsm: reservation %q noted absent is stored", id))
			}
		}
	case s.gotRow != "" && id == s.gotMeta.id:
		// The row getForChange read, still stored: put clears gotRow.
		old, had = s.gotRow, true
		if verifyCodec {
			if cur, _ := s.resv.raw(id); cur != old {
				panic(fmt.Sprintf("fsm: reservation %q changed since getForChange read it", id))
			}
		}
	default:
		old, had = s.resv.raw(id)
	}
	s.absent = ""
	if had {
		if s.lim.limited() && s.gotScan && old == s.gotRow {
			// The row the command decoded, with its owner and parts.
			s.scan.rowMeta, s.scan.owner = s.gotMeta, s.gotOwner
			s.scan.parts = append(s.scan.parts[:0], s.gotParts...)
			s.scan.pendParts = append(s.scan.pendParts[:0], s.gotPend...)
			if verifyCodec {
				verifyScan(old, &s.scan)
			}
		} else if s.lim.limited() {
			// The usage accounting needs the owner and the parts too.
			if err := scanRow(old, &s.scan); err != nil {
				panic(fmt.Sprintf("fsm: stored reservation %q: %v", id, err))
			}
		} else if old == s.gotRow {
			// The row the command decoded: its fields are known.
			s.scan.rowMeta = s.gotMeta
			if verifyCodec {
				verifyMeta(old, s.scan.rowMeta)
			}
		} else if err := scanMeta(old, &s.scan.rowMeta); err != nil {
			panic(fmt.Sprintf("fsm: stored reservation %q: %v", id, err))
		} else if verifyCodec {
			verifyMeta(old, s.scan.rowMeta)
		}
		s.unlink(&s.scan.rowMeta)
		if s.lim.limited() {
			s.lim.account(s.scan.owner, &s.scan.rowMeta, s.scan.parts, s.scan.pendParts, -1)
		}
	}
	// Whatever getForChange read is replaced now (see above).
	s.gotRow = ""
	if s.gotScan {
		s.gotScan, s.gotOwner = false, ""
		clear(s.gotParts)
		clear(s.gotPend)
	}
	if r == nil {
		if had {
			s.resv.del(id)
			s.byID.Delete(old)
		}
		s.lastPut, s.lastRow = nil, ""
		return
	}
	row, key := s.resv.set(r)
	if had {
		// The new row replaces the old one of the same ID in byID too.
		s.byID.ReplaceOrInsert(row)
	} else {
		// A new ID: one the state machine assigns sorts after every
		// stored one (AutoID), so Append's one comparison with the last
		// row usually replaces the search.
		s.byID.Append(row)
	}
	m := metaOf(r)
	m.id = key
	s.link(&m)
	s.lim.accountRow(r, &m, 1)
	s.lastPut, s.lastRow = r, row
	if r.Materialization != nil {
		s.notePin(key)
	}
}

// unlink removes the timers and counts of a row about to be replaced.
func (s *state) unlink(m *rowMeta) {
	var buf [2]timer
	for _, t := range s.timersFor(buf[:0], m) {
		s.timerList(t).Delete(t)
	}
	s.byState[m.state]--
	if m.hasPending {
		s.pendingMods--
	}
}

// link enters the timers and counts of a row that has just been stored.
func (s *state) link(m *rowMeta) {
	var buf [2]timer
	for _, t := range s.timersFor(buf[:0], m) {
		s.timerList(t).ReplaceOrInsert(t)
	}
	s.byState[m.state]++
	if m.hasPending {
		s.pendingMods++
	}
}

// change stamps r, the caller's own copy of a row (get decodes a fresh
// one), with the current index and log time, ready to be modified and
// stored, and returns it. A row that was already stored must be cloned
// first.
func (s *state) change(r *fsmv1.Reservation) *fsmv1.Reservation {
	r.UpdatedVersion = s.index
	r.UpdatedMillis = s.now
	return r
}

// emit appends an event for the current entry.
func (s *state) emit(t fsmv1.Event_Type, r *fsmv1.Reservation, res *fsmv1.Resource) {
	if s.cfg.HistoryLimit == 0 {
		return
	}
	if s.ser.buffering {
		// An all-or-nothing series books its occurrences tentatively;
		// their events are kept until it is known they stand.
		s.ser.events = append(s.ser.events, heldEvent{t, r, res})
		return
	}
	s.history = append(s.history, &fsmv1.Event{
		Version:     s.index,
		Seq:         s.seq,
		Type:        t,
		AtMillis:    s.now,
		Reservation: r,
		Resource:    res,
	})
	s.seq++
	if n := len(s.history) - s.cfg.HistoryLimit; n > 0 {
		// Re-slicing keeps the backing array bounded: append reallocates
		// from the current length once capacity runs out.
		clear(s.history[:n])
		s.history = s.history[n:]
	}
}

// release frees a planner booking that the table says exists. A missing
// booking is tolerated: the planner forgets bookings that ended before its
// origin on its own.
func (s *state) release(key string) {
	_ = s.plan.Remove(key)
	if s.units != nil {
		s.releaseUnits(key)
	}
}

// timerList returns the list that holds t: drops or timers.
func (s *state) timerList(t timer) *sortedlist.List[timer] {
	if t.kind == timerDrop {
		return s.drops
	}
	return s.timers
}

// nextTimer returns the first timer of both lists in (time, kind, id)
// order, a drop timer counted as due at its row's last change plus the
// retention, and key, the timer as stored. With drops false, or once
// the entry's drop budget is spent, the drop timers are left out.
func (s *state) nextTimer(drops bool) (due, key timer, ok bool) {
	t, ok := s.timers.Min()
	if drops {
		if d, has := s.drops.Min(); has {
			if dd := (timer{addSat(d.at, s.retention), timerDrop, d.id}); !ok || timerLess(dd, t) {
				return dd, d, true
			}
		}
	}
	return t, t, ok
}

// take removes the stored timer key before it fires, counting a drop
// against the entry's budget.
func (s *state) take(key timer) {
	s.timerList(key).Delete(key)
	if key.kind == timerDrop {
		s.dropBudget--
	}
}

// runTimers performs all time-triggered work due at or before now, in
// (time, kind, id) order (drops within the entry's budget).
func (s *state) runTimers() {
	for {
		due, key, ok := s.nextTimer(s.dropBudget > 0)
		if !ok || due.at > s.now {
			return
		}
		s.take(key)
		s.fire(key)
	}
}

// fire performs one timer's work (the timer is already removed).
func (s *state) fire(t timer) {
	if t.kind == timerDrop {
		// Garbage collection: the row need not be decoded (put reads
		// the fields it unlinks).
		s.put(t.id, nil)
		return
	}
	r, _ := s.getForChange(t.id)
	switch t.kind {
	case timerHoldExpiry:
		s.releaseRow(r)
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_EXPIRED
		n.HoldExpiresMillis = 0
		s.put(t.id, n)
		s.expired++
		s.emit(fsmv1.Event_TYPE_EXPIRED, n, nil)
	case timerModExpiry:
		s.release(modKey(t.id))
		n := s.change(r)
		n.Pending = nil
		s.put(t.id, n)
		s.expired++
		s.emit(fsmv1.Event_TYPE_MODIFY_EXPIRED, n, nil)
	case timerActivate:
		n := s.change(r)
		if n.Pending != nil {
			// A pending modification cannot move a reservation that
			// has begun; it lapses with the start.
			s.release(modKey(t.id))
			n.Pending = nil
			s.expired++
			s.emit(fsmv1.Event_TYPE_MODIFY_EXPIRED, n, nil)
			n = proto.CloneOf(n)
		}
		n.State = fsmv1.Reservation_STATE_ACTIVE
		s.put(t.id, n)
		s.emit(fsmv1.Event_TYPE_ACTIVATED, n, nil)
	case timerComplete:
		s.releaseOwn(r)
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_COMPLETED
		s.put(t.id, n)
		s.emit(fsmv1.Event_TYPE_COMPLETED, n, nil)
	}
}

// pruneIdem forgets idempotency records older than the window.
func (s *state) pruneIdem() { s.idem.prune(s.now, s.cfg.IdempotencyWindow) }

// applyEncoded applies one decoded command at log index index. It also
// returns the deterministic encoding of the result when it had to make one
// (to remember an idempotency key), so the caller need not encode it
// again; otherwise the bytes are nil.
func (s *state) applyEncoded(index uint64, cmd *fsmv1.Command) (*fsmv1.Result, []byte) {
	s.seq, s.autoN = 0, 0
	return s.applyMember(index, cmd)
}

// applyMember is applyEncoded without starting the event sequence over:
// the events it emits continue from s.seq, and a reservation ID taken
// from the index is GroupAutoID(index, s.autoN). A group entry applies
// each of its members with it (applyGroup); everything else it resets per
// call, so a member is applied exactly as if it were the entry alone.
func (s *state) applyMember(index uint64, cmd *fsmv1.Command) (*fsmv1.Result, []byte) {
	s.index = index
	s.now = max(s.now, cmd.GetNowMillis())
	s.ver = cmd.GetVersion()
	s.dropBudget = maxDropsPerEntry
	s.expired, s.pol.moves = 0, nil
	s.lastPut, s.lastRow, s.gotRow, s.absent = nil, "", "", ""
	defer s.syncPins()

	// Time first: whatever log time makes due happens before the command,
	// so a command never sees a hold that should already have expired.
	s.advance()
	s.plan.Advance(s.now)
	s.advanceUnits()
	// Rows that time ended count against the limit even when the command
	// turns out to be a replay that changes nothing else.
	s.trimEnded()
	s.pruneIdem()
	// Keys kept past the cap for their youth (version 3) are forgotten
	// once they are old enough, at every entry, so that the remembered
	// keys after an entry depend only on the state and the log time —
	// what a replica restored from a snapshot computes (rebuild). Before
	// version 3 the cap is never exceeded and this does nothing.
	s.idem.trimKeeping(s.idemMaxKeys, s.now, s.cfg.IdempotencyMinAge)

	owner, key := cmd.GetOwner(), cmd.GetIdempotencyKey()
	if key != "" {
		if enc, ok := s.idem.get(owner, key); ok {
			r := new(fsmv1.Result)
			if err := proto.Unmarshal(enc, r); err != nil {
				// The bytes were made by encodeResult or verified by
				// Restore; failing to read them back is a bug.
				panic(fmt.Sprintf("fsm: stored idempotency result: %v", err))
			}
			if mismatch := idemMismatch(key, cmd.GetFingerprint(), r); mismatch != nil {
				// Not stored: the key keeps answering its first request.
				mismatch.Version, mismatch.NowMillis = index, s.now
				return mismatch, nil
			}
			r.Replayed = true
			return r, nil
		}
	}

	res := s.dispatch(cmd)
	// Work made due by the command itself (a reservation made for "now"
	// activates at once).
	s.advance()
	s.trimEnded()
	res.Moved = s.takeMoves()
	if r := res.GetReservation(); r != nil {
		// Report the row as it stands after this entry.
		if cur, ok := s.current(r.GetId()); ok {
			res.Reservation = cur
		}
	}
	for _, p := range res.GetCoAdmission().GetPlacements() {
		if cur, ok := s.current(p.GetReservation().GetId()); ok {
			p.Reservation = cur
		}
	}
	res.Version = index
	res.NowMillis = s.now
	res.Expired = s.expired

	if fp := cmd.GetFingerprint(); len(fp) > 0 && key != "" {
		res.Fingerprint = fp
	}
	if key != "" {
		enc := s.encodeResult(res)
		s.idem.add([]byte(owner), []byte(key), s.now, enc)
		if s.ver >= versionEdge {
			// A key younger than IdempotencyMinAge may belong to a
			// request still in flight: its client retries until it
			// learns the outcome, and must then get this result.
			s.idem.trimKeeping(s.idemMaxKeys, s.now, s.cfg.IdempotencyMinAge)
		} else {
			s.idem.trim(s.idemMaxKeys)
		}
		return res, enc
	}
	return res, nil
}

// getForChange is resv.get for a row the current entry is about to
// change: it remembers the row and its bookkeeping fields for put. The
// row put stored last (a timer due in the entry that stored it: a
// reservation made for now activates at once) is copied from the message
// put kept instead of decoded again.
func (s *state) getForChange(id string) (*fsmv1.Reservation, bool) {
	if p := s.lastPut; p != nil && p.Id == id && len(p.ProtoReflect().GetUnknown()) == 0 {
		r := cloneRow(p)
		if verifyCodec {
			verifyDecodedRow(s.lastRow, r)
		}
		s.gotRow, s.gotMeta = s.lastRow, metaOf(p)
		s.noteGot(p)
		return r, true
	}
	row, ok := s.resv.raw(id)
	if !ok {
		return nil, false
	}
	r := decodeRow(row)
	s.gotRow, s.gotMeta = row, metaOf(r)
	s.noteGot(r)
	return r, true
}

// noteGot keeps the owner and parts of the row getForChange read, r as
// stored, while usage is tracked (see gotScan).
func (s *state) noteGot(r *fsmv1.Reservation) {
	if !s.lim.limited() {
		s.gotScan = false
		return
	}
	s.gotScan, s.gotOwner = true, r.GetOwner()
	s.gotParts = scanParts(r.GetParts(), s.gotParts[:0])
	s.gotPend = s.gotPend[:0]
	if p := r.GetPending(); p != nil {
		s.gotPend = scanParts(p.GetParts(), s.gotPend)
	}
}

// current returns row id as stored: the message put stored last when it
// is that row (usually the command's own), decoded otherwise.
func (s *state) current(id string) (*fsmv1.Reservation, bool) {
	if r := s.lastPut; r != nil && r.GetId() == id {
		return r, true
	}
	return s.resv.get(id)
}

func (s *state) dispatch(cmd *fsmv1.Command) *fsmv1.Result {
	switch cmd.GetType() {
	case fsmv1.Command_TYPE_CREATE_RESOURCE:
		return s.createResource(cmd.GetCreateResource())
	case fsmv1.Command_TYPE_UPDATE_RESOURCE:
		return s.updateResource(cmd.GetUpdateResource())
	case fsmv1.Command_TYPE_DELETE_RESOURCE:
		return s.deleteResource(cmd.GetDeleteResource())
	case fsmv1.Command_TYPE_HOLD:
		return s.hold(cmd, false)
	case fsmv1.Command_TYPE_RESERVE:
		return s.hold(cmd, true)
	case fsmv1.Command_TYPE_COMMIT:
		return s.commit(cmd)
	case fsmv1.Command_TYPE_ABORT:
		return s.abort(cmd)
	case fsmv1.Command_TYPE_MODIFY:
		return s.modify(cmd)
	case fsmv1.Command_TYPE_CANCEL:
		return s.cancel(cmd)
	case fsmv1.Command_TYPE_EXPIRE:
		return &fsmv1.Result{Status: fsmv1.Result_STATUS_OK}
	case fsmv1.Command_TYPE_COMPLETE:
		return s.complete(cmd)
	case fsmv1.Command_TYPE_SET_POLICY:
		return s.setPolicy(cmd.GetSetPolicy())
	case fsmv1.Command_TYPE_SUBMIT_JOB:
		return s.submitJob(cmd)
	case fsmv1.Command_TYPE_CO_RESERVE:
		return s.coReserve(cmd)
	case fsmv1.Command_TYPE_UNIT_DOWN:
		return s.unitDown(cmd)
	case fsmv1.Command_TYPE_UNIT_UP:
		return s.unitUp(cmd)
	case fsmv1.Command_TYPE_CREATE_SERIES, fsmv1.Command_TYPE_EXPAND_SERIES, fsmv1.Command_TYPE_CANCEL_SERIES:
		return s.dispatchSeries(cmd)
	case fsmv1.Command_TYPE_SET_LIMITS:
		return s.setLimits(cmd)
	case fsmv1.Command_TYPE_APPROVE:
		return s.decide(cmd, true)
	case fsmv1.Command_TYPE_DENY:
		return s.decide(cmd, false)
	case fsmv1.Command_TYPE_SET_MATERIALIZATION:
		return s.setMaterialization(cmd)
	case fsmv1.Command_TYPE_CHANGE_UNITS:
		return s.changeUnits(cmd)
	case fsmv1.Command_TYPE_SET_RETENTION:
		return s.setRetention(cmd)
	}
	// Decode admits only the types above.
	panic("fsm: unreachable command type " + cmd.GetType().String())
}

// capture returns the state as a Snapshot message sharing the immutable
// records, without its reservations and idempotency records, and the
// encoded reservations in ID order and a view of the idempotency records
// that go with it (encodeSnapshotIdem writes all three).
func (s *state) capture() (*fsmv1.Snapshot, *sortedlist.List[string], idemView) {
	msg := &fsmv1.Snapshot{
		AppliedIndex: s.index,
		NowMillis:    s.now,
		Resources:    make([]*fsmv1.Resource, 0, len(s.resources)),
		History:      slices.Clone(s.history),
	}
	for _, name := range slices.Sorted(maps.Keys(s.resources)) {
		msg.Resources = append(msg.Resources, s.resources[name])
	}
	// A lazy copy: Persist walks it while Apply changes the original.
	rows := s.byID.Clone()
	s.captureScheduler(msg)
	s.captureSeries(msg)
	s.captureLimits(msg)
	s.captureRetention(msg)
	return msg, rows, s.idem.view()
}

// sortedParts returns planner parts converted to proto parts, sorted by
// resource.
func sortedParts(ps []planner.Part) []*fsmv1.Part {
	out := make([]*fsmv1.Part, len(ps))
	for i, p := range ps {
		out[i] = &fsmv1.Part{Resource: p.Resource, Amount: p.Amount}
	}
	slices.SortFunc(out, func(a, b *fsmv1.Part) int { return cmp.Compare(a.GetResource(), b.GetResource()) })
	return out
}

// plannerParts converts proto parts, keeping their order.
func plannerParts(ps []*fsmv1.Part) []planner.Part {
	out := make([]planner.Part, len(ps))
	for i, p := range ps {
		out[i] = planner.Part{Resource: p.GetResource(), Amount: p.GetAmount()}
	}
	return out
}
