package fsm

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/rangesort"
	"github.com/ledgerd/ledgerd/planner"
)

// StageRunner runs stages of a restore (FSM.RestoreWith) and returns once
// every one has returned. The stages given in one call are independent:
// each builds its own part of the new state from data that none of them
// changes, so a runner may run them in any order or at the same time, on
// other goroutines, with the same outcome (the fsm package itself starts
// none). A restore calls its runner twice (scanning, then building). A
// stage never panics on bad input; it records its error, and the restore
// reports the first one in a fixed order, whatever the runner did.
//
// It is an alias, not a defined type, so that a caller such as the
// cluster's node can name the plain function type in an interface
// without importing this package.
type StageRunner = func(stages []func())

// runInOrder runs stages one after the other: the default StageRunner.
func runInOrder(stages []func()) {
	for _, f := range stages {
		f()
	}
}

// Restore stages. The rows are scanned in scanChunks slices and the
// idempotency results checked in checkChunks (first call of the runner);
// then the stores are built, one stage each (second call). The numbers
// are fixed, not taken from the machine, so that nothing a replica
// computes depends on where it runs (the outcome does not depend on them
// either).
const (
	scanChunks  = 4
	checkChunks = 2
	// packStages is the number of scan stages that pack the chunks of
	// the idempotency log (packSpans): a quarter of a second of CPU at a
	// million keys.
	packStages = 2
)

// restoreJob is a restore cut into stages:
//
//   - prepareRestore (in order): the resources, the limit table, the
//     idempotency log's chunks laid out from the records' offsets;
//   - the scan stages: the idempotency store; each scan stage scans a
//     slice of the rows (scanChunk) and collects what the stores are
//     built from; the check stages check that the idempotency results
//     decode; the pack stages pack the idempotency log's chunks
//     (idem_restore.go);
//   - the build stages: the planner and unit schedules, the timers, the
//     row table and IDs, the limits usage — each its own part of the
//     state;
//   - finish (in order): the first error, pins, scheduler, series,
//     counts.
//
// Each stage is deterministic and reads nothing another stage of the same
// call writes, so the state is the same whatever order or overlap they
// run in.
type restoreJob struct {
	s      *state
	split  splitSnapshot
	origin int64
	// hasUnits: some resource has units (unit bookings are collected).
	hasUnits bool
	// tracking: the limits table has entries (usage is collected).
	tracking bool
	// rows are the stored rows in ID order; scan chunk c fills
	// [bound(c), bound(c+1)). Their IDs are not listed beside them
	// (rows.go's rowID reads one again): a second list of a million strings was
	// 16 MB more at the restore's peak, and more for the collection
	// between the two calls to mark.
	rows []string
	// books holds the planner bookings: scan chunk c appends to its own
	// region [bound(c), bound(c+1)) (a chunk with more bookings than rows
	// moves to a list of its own), which is batch c of load.
	books    []planner.Booking
	chunks   [scanChunks]scanOut
	checkErr [checkChunks]idemErr
	addErr   idemErr
	// idemSpans lays the snapshot's idempotency records out in the log's
	// chunks (nil: not as the log holds them); the pack stages fill
	// idemChunks from it, and idemAliased says that the store's build
	// took that layout, its chunks aliasing the snapshot's bytes until
	// dropInput.
	idemSpans   []idemSpan
	idemChunks  []idemSeg
	idemAliased bool
	// load books the scan chunks' bookings (batch c each) and the unit
	// down windows (batch scanChunks) in the planner, in stages of its
	// own beside the other build stages.
	load *planner.StagedLoad
	// unitErr is the unit schedules' stage's error.
	unitErr error
}

// scanOut is what one scan stage collects from its rows, in row order.
type scanOut struct {
	err          error
	timers       []timer
	books        bookings
	unitBooks    map[string][]planner.UnitBooking
	scheduledIDs []string
	pinIDs       []string
	byState      map[fsmv1.Reservation_State]int
	pendingMods  int
	usage        *usageBuilder
}

// idemErr is the first bad idempotency record a stage found (at is its
// index; -1: none).
type idemErr struct {
	at  int
	err error
}

// prepareRestore checks the resources and limits of split and sets up
// the stages. The planner starts at the snapshot's log time; bookings and
// capacity windows that began earlier are entered from that instant on,
// which gives exactly the free profile the original planner has from its
// origin on (the only part it consults).
func prepareRestore(cfg Config, split splitSnapshot) (*restoreJob, error) {
	msg := split.msg
	s := newState(cfg)
	j := &restoreJob{s: s, split: split}
	s.index, s.now = msg.GetAppliedIndex(), msg.GetNowMillis()
	if s.now < 0 {
		return nil, badf("negative log time %d", s.now)
	}
	s.plan.Advance(s.now)
	j.origin = s.plan.Origin()

	prev := ""
	for i, r := range msg.GetResources() {
		name := r.GetName()
		if why := validResourceName(name); why != "" {
			return nil, badf("resources[%d].name: %s", i, why)
		}
		if i > 0 && name <= prev {
			return nil, badf("resources not sorted by name at %d (%q after %q)", i, name, prev)
		}
		prev = name
		if err := s.plan.AddResource(name, r.GetCapacity()); err != nil {
			return nil, badf("resources[%d]: %v", i, err)
		}
		for k, w := range r.GetWindows() {
			from := max(w.GetFromMillis(), j.origin)
			if w.GetToMillis() <= from {
				continue
			}
			if err := s.plan.SetCapacity(name, from, w.GetToMillis(), w.GetCapacity()); err != nil {
				return nil, badf("resources[%d].windows[%d]: %v", i, k, err)
			}
		}
		s.resources[name] = r
		if len(r.GetUnits()) > 0 {
			j.hasUnits = true
		}
	}
	if err := s.restoreLimitTable(msg); err != nil {
		return nil, err
	}
	if err := s.restoreRetention(msg); err != nil {
		return nil, err
	}
	j.tracking = len(s.lim.table) > 0
	n := split.rows.len()
	j.rows = make([]string, n)
	j.books = make([]planner.Booking, n)
	j.load = s.plan.NewStagedLoad(scanChunks + 1)
	if split.idem == nil {
		if j.idemSpans = planIdemChunks(split.idemRaw); j.idemSpans != nil {
			j.idemChunks = make([]idemSeg, len(j.idemSpans))
		}
	}
	return j, nil
}

// bound returns the first row of scan chunk c (bound(scanChunks) is the
// number of rows).
func (j *restoreJob) bound(c int) int { return len(j.rows) * c / scanChunks }

// scanStages returns the stages of the first call: the idempotency
// store, the row scans and the idempotency result checks. They copy out
// everything the state keeps of the snapshot's bytes, so that the file's
// buffer (hundreds of megabytes at 1M rows) can be collected while the
// build stages allocate the stores: see dropInput.
func (j *restoreJob) scanStages() []func() {
	out := []func(){j.buildIdem}
	for c := range scanChunks {
		out = append(out, func() { j.scanChunk(c) })
	}
	for c := range checkChunks {
		out = append(out, func() { j.checkIdem(c) })
	}
	if j.idemSpans != nil {
		for k := range packStages {
			out = append(out, func() { packSpans(j.split.idemRaw.body, j.idemSpans, j.idemChunks, k, packStages) })
		}
	}
	return out
}

// dropInput forgets the snapshot's bytes (the encoded rows and records
// alias the file's buffer), once the scan stages have copied what they
// keep: the idempotency store's chunks, which alias them when its build
// took the snapshot's layout, are replaced by the pack stages' copies.
func (j *restoreJob) dropInput() {
	if j.idemAliased {
		j.s.idem.adoptChunks(j.idemChunks)
	}
	j.idemSpans, j.idemChunks, j.idemAliased = nil, nil, false
	j.split.rows, j.split.idemRaw, j.split.idem = fieldList{}, fieldList{}, nil
}

// buildStages returns the stages of the second call, longest first (so
// that a runner with fewer workers than stages starts those first): the
// planner's load (its booking table, its timelines), the row table, the
// usage, the unit schedules, the timers. The scan stages resolved the
// rows' bookings; the down windows' are resolved here, first.
func (j *restoreJob) buildStages() []func() {
	j.load.Resolve(scanChunks, j.downBookings())
	out := append(j.load.Stages(), j.buildTable, j.buildUsage)
	if j.hasUnits {
		out = append(out, j.buildUnits)
	}
	return append(out, j.buildTimers)
}

// downBookings returns the count bookings of the unit down windows in
// effect (one unit each over the window from the log time on), by
// resource name (the snapshot's order, which prepareRestore checked),
// then in each resource's order: what the planner books beside the rows.
func (j *restoreJob) downBookings() []planner.Booking {
	if !j.hasUnits {
		return nil
	}
	s := j.s
	var out []planner.Booking
	for _, r := range j.split.msg.GetResources() {
		if len(r.GetUnits()) == 0 {
			continue
		}
		name := r.GetName()
		for _, d := range s.liveDowns(r.GetUnitDowns(), "") {
			out = append(out, planner.Booking{ID: downKey(name, d.GetId()),
				Parts: []planner.Part{{Resource: name, Amount: 1}}, Start: max(d.GetFromMillis(), s.now), End: d.GetToMillis()})
		}
	}
	return out
}

// scanChunk scans the rows of chunk c: it checks each (encoding, ID
// order, state), keeps its string in rows and its ID in ids, and collects
// its timers, planner and unit bookings, counts and usage. It stops at
// the first bad row, with the error a scan of every row in order reports
// first for it.
func (j *restoreJob) scanChunk(c int) {
	s, raw := j.s, j.split.rows
	lo, hi := j.bound(c), j.bound(c+1)
	out := &j.chunks[c]
	out.byState = make(map[fsmv1.Reservation_State]int)
	out.timers = make([]timer, 0, hi-lo)
	// Its own region of j.books, capped: a chunk with more bookings than
	// rows (pending modifications book twice) moves to a list of its own
	// rather than into the next region.
	out.books = bookings{list: j.books[lo:lo:hi], parts: make([]planner.Part, 0, hi-lo)}
	if j.hasUnits {
		out.unitBooks = make(map[string][]planner.UnitBooking)
	}
	if j.tracking {
		out.usage = newUsageBuilderFor(hi - lo)
	}
	var sc rowScan
	prev := ""
	if lo > 0 && lo < hi {
		// The ID before the chunk, for the order check of its first row
		// (if that row is bad, the chunk before reports it).
		if scanRow(string(raw.get(lo-1)), &sc) == nil {
			prev = sc.id
		}
	}
	for i := lo; i < hi; i++ {
		// One copy per row: the string is the stored row, and its ID
		// (a substring) the key.
		row := string(raw.get(i))
		if err := scanRow(row, &sc); err != nil {
			out.err = badf("reservations[%d]: %v", i, err)
			return
		}
		id := sc.id
		if i > 0 && id <= prev {
			out.err = badf("reservations not sorted by ID at %d (%q after %q)", i, id, prev)
			return
		}
		prev = id
		st := sc.state
		if _, known := fsmv1.Reservation_State_name[int32(st)]; !known || st == fsmv1.Reservation_STATE_UNKNOWN {
			out.err = badf("reservations[%d]: unknown state %d", i, int32(st))
			return
		}
		if sc.scheduled() {
			out.scheduledIDs = append(out.scheduledIDs, id)
		}
		// The parts' resource names are substrings of the row; nothing
		// keeps them: the planner resolves them to its resources, and the
		// usage and unit builders copy the names they keep.
		if !isTerminal(st) && !sc.scheduled() {
			// The planner keeps its own copy of the ID: a row substring
			// would keep this row's bytes alive after the row changes.
			key := strings.Clone(id)
			out.books.add(key, sc.parts, sc.start, sc.end, j.origin)
			if sc.hasPending {
				out.books.add(modKey(key), sc.pendParts, sc.pendStart, sc.pendEnd, j.origin)
			}
			if out.unitBooks != nil {
				collectUnits(out.unitBooks, key, sc.parts, sc.start, sc.end, j.origin)
				if sc.hasPending {
					collectUnits(out.unitBooks, modKey(key), sc.pendParts, sc.pendStart, sc.pendEnd, j.origin)
				}
			}
		}
		j.rows[i] = row
		out.timers = s.timersFor(out.timers, &sc.rowMeta)
		out.byState[st]++
		if sc.hasPending {
			out.pendingMods++
		}
		if sc.hasRecord && out.unitBooks != nil && !isTerminal(st) {
			out.pinIDs = append(out.pinIDs, id)
		}
		if out.usage != nil {
			out.usage.account(sc.owner, &sc.rowMeta, sc.parts, sc.pendParts)
		}
	}
	// Sorted here, in a stage of its own per chunk, so that buildTimers
	// merges the chunks and appends the timers in order, each without a
	// search.
	sortTimers(out.timers)
	// The planner checks and resolves the chunk's bookings here too,
	// reading only the resources prepareRestore gave it.
	j.load.Resolve(c, out.books.list)
}

// sortTimers orders ts by timerCmp: first into rangesort's ranges of
// their instants (one pass of swaps), then each range by comparisons.
// A quarter of a million timers take a fifth of the comparisons of one
// sort of the whole list, and each range's sort runs in cache. Instants
// crowded into few ranges leave those ranges to the comparison sort,
// which then does what it did alone.
func sortTimers(ts []timer) {
	if len(ts) < 1<<rangesort.Bits {
		slices.SortFunc(ts, timerCmp)
		return
	}
	lo, hi := ts[0].at, ts[0].at
	for _, t := range ts {
		lo, hi = min(lo, t.at), max(hi, t.at)
	}
	// The span as unsigned: hi-lo may exceed the int64 range.
	shift := max(bits.Len64(uint64(hi)-uint64(lo))-rangesort.Bits, 0)
	bounds := rangesort.Sort(ts, func(t timer) uint32 {
		return uint32((uint64(t.at) - uint64(lo)) >> shift)
	})
	for r := range 1 << rangesort.Bits {
		slices.SortFunc(ts[bounds[r]:bounds[r+1]], timerCmp)
	}
}

// timerCmp is timerLess as a three-way comparison, for sorting.
func timerCmp(a, b timer) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	if c := cmp.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// checkIdem checks that the results of check chunk c of the idempotency
// records decode (and that the records do), stopping at the first bad
// one.
func (j *restoreJob) checkIdem(c int) {
	raw := j.split.idemRaw
	lo, hi := raw.len()*c/checkChunks, raw.len()*(c+1)/checkChunks
	j.checkErr[c] = idemErr{at: -1}
	var check fsmv1.Result
	for i := lo; i < hi; i++ {
		if _, err := decodeIdemRecord(raw.get(i), &check); err != nil {
			j.checkErr[c] = idemErr{i, badf("idempotency[%d]: %v", i, err)}
			return
		}
	}
}

// scanErr returns the first error of the scan stages: the first bad row,
// then the first bad idempotency record. The build stages need every row.
func (j *restoreJob) scanErr() error {
	for c := range j.chunks {
		if err := j.chunks[c].err; err != nil {
			return err
		}
	}
	return j.idemError()
}

// idemError returns the error of the first bad idempotency record:
// undecodable (checkIdem) or a duplicate (buildIdem), whichever comes
// first; a record both refuse is reported as the check does (a scan of
// every record in order checks a record before it stores it).
func (j *restoreJob) idemError() error {
	for _, c := range j.checkErr {
		if c.err != nil && (j.addErr.err == nil || c.at <= j.addErr.at) {
			return c.err
		}
	}
	return j.addErr.err
}

// buildUnits rebuilds the unit schedules from the chunks' unit bookings
// and the resources: s.units.
func (j *restoreJob) buildUnits() {
	unitBooks := make(map[string][]planner.UnitBooking)
	for c := range j.chunks {
		for res, ubs := range j.chunks[c].unitBooks {
			unitBooks[res] = append(unitBooks[res], ubs...)
		}
	}
	j.unitErr = j.s.restoreUnits(unitBooks)
}

// buildIdem stores the idempotency records (checked by checkIdem):
// s.idem. A duplicate key stops it.
func (j *restoreJob) buildIdem() {
	j.addErr = idemErr{at: -1}
	if j.split.idem != nil {
		j.s.idem = *j.split.idem
		return
	}
	raw := j.split.idemRaw
	idem := &j.s.idem
	// One key more than the records: the index the first key a replayed
	// or new entry adds needs. At the key cap (the usual case on a busy
	// node) that key would otherwise rebuild the whole index on the FSM
	// goroutine, delaying the first apply after a restart.
	idem.grow(raw.len() + 1)
	i, aliased, err := idem.loadPlanned(raw, decodeIdemUnchecked, j.idemSpans)
	if err != nil {
		j.addErr = idemErr{i, badf("idempotency[%d]: %v", i, err)}
	}
	j.idemAliased = aliased
}

// decodeIdemUnchecked is decodeIdemRecord for buildIdem: checkIdem checks
// every record as decodeIdemRecord does, so the store's build checks
// neither the result nor (for a record as Persist writes it) the UTF-8 of
// owner and key again. A record that only those checks refuse is then
// refused by checkIdem at its index, which idemError reports unless the
// build refused an earlier one (a duplicate key: a scan in order would
// have refused it first too).
func decodeIdemUnchecked(b []byte) (idemRecord, error) {
	if e, ok := decodeIdemPersisted(b, false); ok {
		return e, nil
	}
	return decodeIdemAny(b)
}

// buildTimers merges the chunks' sorted timers into the timer list, in
// order: each is appended without a search.
func (j *restoreJob) buildTimers() {
	var heads [scanChunks][]timer
	for c := range j.chunks {
		heads[c] = j.chunks[c].timers
	}
	for {
		best := -1
		for c := range heads {
			if len(heads[c]) > 0 && (best < 0 || timerLess(heads[c][0], heads[best][0])) {
				best = c
			}
		}
		if best < 0 {
			return
		}
		t := heads[best][0]
		j.s.timerList(t).Append(t)
		heads[best] = heads[best][1:]
	}
}

// buildTable stores the rows by ID and in ID order: s.resv, s.byID.
func (j *restoreJob) buildTable() {
	s := j.s
	s.resv = newRowStore(len(j.rows))
	// IDs are new and ascending: no old row to unlink, and each row goes
	// at the end of byID.
	s.resv.fillNew(j.rows)
	for _, row := range j.rows {
		s.byID.Append(row)
	}
}

// buildUsage builds the usage the limits need of every row, in bulk
// (usageBuilder): s.lim.use.
func (j *restoreJob) buildUsage() {
	if !j.tracking {
		return
	}
	all := j.chunks[0].usage
	var rest [scanChunks - 1]*usageBuilder
	for c := 1; c < scanChunks; c++ {
		rest[c-1] = j.chunks[c].usage
	}
	all.merge(rest[:]...)
	j.s.lim.use = all.build()
}

// finish reports the error of the build stages (the unit schedules', then
// the planner's), restores what needs the stores
// built (pins, scheduler, series) and returns the state.
func (j *restoreJob) finish() (*state, error) {
	if j.unitErr != nil {
		return nil, j.unitErr
	}
	if err := j.load.Finish(); err != nil {
		return nil, badf("reservations: %v", err)
	}
	s, msg := j.s, j.split.msg
	var pinIDs, scheduledIDs []string
	for c := range j.chunks {
		out := &j.chunks[c]
		for st, n := range out.byState {
			s.byState[st] += n
		}
		s.pendingMods += out.pendingMods
		pinIDs = append(pinIDs, out.pinIDs...)
		scheduledIDs = append(scheduledIDs, out.scheduledIDs...)
	}
	if j.hasUnits {
		s.restorePins(pinIDs)
	}
	if err := s.restoreScheduler(msg, scheduledIDs); err != nil {
		return nil, err
	}
	if err := s.restoreSeries(msg); err != nil {
		return nil, err
	}
	// A snapshot written under a larger cap (or none) keeps only the
	// newest keys, as applying its log under this cap would have — but
	// not the young ones that version 3 entries keep past the cap (see
	// IdempotencyMinAge): before version 3 the cap was never exceeded, so
	// this is what applying the log gives.
	s.idem.trimKeeping(s.idemMaxKeys, s.now, s.cfg.IdempotencyMinAge)
	s.history = append(s.history, msg.GetHistory()...)
	if n := len(s.history) - s.cfg.HistoryLimit; n > 0 {
		s.history = s.history[n:]
	}
	return s, nil
}
