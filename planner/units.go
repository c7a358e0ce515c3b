package planner

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Concrete units: the two-level schedule of seed 000 (§3, §6). A resource
// made of named units (the nodes of a cluster) keeps a global timeline of
// summed free capacity, which answers the count question quickly, and one
// schedule per unit, which says which booking holds which unit when. Every
// booking that holds capacity is mapped to a set of units that are free
// over its whole window; admission never accepts a request that cannot be
// mapped. UNITS.md explains the choices (the fit rule, the two policies,
// the costs measured).

// UnitPolicy says what admission does with a request whose count fits but
// for which no set of units is free for the whole window.
type UnitPolicy uint8

const (
	// UnitPolicyUnspecified is the zero value and is rejected as invalid.
	UnitPolicyUnspecified UnitPolicy = iota
	// UnitRefuse leaves every existing mapping as it is: a start is
	// admissible only if enough units are free over its whole window.
	UnitRefuse
	// UnitRemap may move movable bookings (not materialized, not running)
	// to other units to make room; pinned bookings never move. Every move
	// is reported as a Remap.
	UnitRemap
)

// String names the policy as the API and logs spell it.
func (p UnitPolicy) String() string {
	switch p {
	case UnitRefuse:
		return "REFUSE"
	case UnitRemap:
		return "REMAP"
	}
	return fmt.Sprintf("UnitPolicy(%d)", uint8(p))
}

// FitRule chooses which of the free units a new booking gets when more are
// free than it needs.
type FitRule uint8

const (
	// FitBest picks the units whose idle gap around the window is the
	// smallest (best fit), ties broken by the smaller gap before the start
	// and then by the lower unit index. It keeps long idle stretches whole
	// for long requests. The default.
	FitBest FitRule = iota
	// FitLowest picks the lowest-indexed free units.
	FitLowest
)

// String names the rule.
func (f FitRule) String() string {
	switch f {
	case FitBest:
		return "best-fit"
	case FitLowest:
		return "lowest-index"
	}
	return fmt.Sprintf("FitRule(%d)", uint8(f))
}

// DefaultSearchBudget bounds the work of one re-mapping search, in unit
// checks (see UnitConfig.SearchBudget): a placement on 1,024 units with
// 100k live bookings costs about 75 µs of CPU on the machine of the
// committed benchmarks (75 ns per unit), so a search stops after about
// 30 ms there.
const DefaultSearchBudget = 400_000

// UnitConfig configures a UnitSchedule.
type UnitConfig struct {
	// Fit is the rule that picks units among the free ones.
	Fit FitRule
	// Factory makes the global timeline of summed capacity; nil selects
	// NewIndexed.
	Factory TimelineFactory
	// SearchBudget bounds the work of the re-mapping search of one
	// admission or down window, in unit checks: every candidate start and
	// every placement of a booking (greedy or exhaustive) costs the number
	// of units, every combination the exhaustive search tries costs one;
	// 0 selects DefaultSearchBudget. When it runs out, the
	// remaining candidate starts are treated as unmappable and the
	// decision says so (UnitDecision.Exhausted). The greedy search alone is
	// exact whenever no pinned booking or down window lies wholly in the
	// future (UNITS.md); the exhaustive one is needed only otherwise.
	SearchBudget int
}

// UnitRequest asks for Amount whole units for Duration, starting at some s
// with NotBefore <= s and s+Duration <= Deadline (Deadline = MaxTime: no
// deadline). Movable is the new booking's flag: whether a later admission
// under UnitRemap may move it to other units (true until the booking is
// materialized in a resource manager; it never moves once running).
type UnitRequest struct {
	Amount    int64
	Duration  int64
	NotBefore int64
	Deadline  int64
	Movable   bool
}

// Remap is one booking moved to other units: From and To are the unit names
// before and after, each sorted by unit index.
type Remap struct {
	ID   string
	From []string
	To   []string
}

// UnitDecision is the outcome of a unit admission.
type UnitDecision struct {
	// Fits reports whether a start inside the booking window maps.
	Fits bool
	// Start and Units: the earliest start that maps and the units chosen,
	// sorted by unit index, when Fits.
	Start int64
	Units []string
	// Remaps lists, sorted by ID, the bookings moved to make room (only
	// under UnitRemap). The caller logs each one and emits an event.
	Remaps []Remap
	// CountFits and CountStart: the earliest start in the window at which
	// the summed free capacity suffices. When !Fits but CountFits, the
	// request was count-feasible and refused only because no set of units
	// is free for a whole window.
	CountFits  bool
	CountStart int64
	// LaterOK and LaterStart: when !Fits, the earliest start after the
	// window (ignoring the deadline) that maps under the same policy.
	LaterOK    bool
	LaterStart int64
	// Exhausted reports that the re-mapping search ran out of its budget
	// at some candidate start, which was then treated as unmappable.
	Exhausted bool
}

// Reason is a one-line explanation of a refusal ("" when Fits).
func (d UnitDecision) Reason() string {
	if d.Fits {
		return ""
	}
	var b strings.Builder
	if d.CountFits {
		fmt.Fprintf(&b, "enough units are free in sum from %d, but no set of units is free for the whole window", d.CountStart)
	} else {
		b.WriteString("not enough units are free at any start in the window")
	}
	if d.Exhausted {
		b.WriteString(" (the re-mapping search ran out of budget)")
	}
	if d.LaterOK {
		fmt.Fprintf(&b, "; earliest start that maps: %d", d.LaterStart)
	} else {
		b.WriteString("; no later start maps either")
	}
	return b.String()
}

// UnitBooking is a booking of a UnitSchedule as the caller sees it.
type UnitBooking struct {
	ID    string
	Start int64
	End   int64
	// Units are the unit names, sorted by unit index.
	Units []string
	// Movable is the flag set by the caller (not materialized).
	Movable bool
}

// UnitDown is a window [From, To) during which a unit is down or drained.
type UnitDown struct {
	ID   string
	Unit string
	From int64
	To   int64
}

// ErrUnmappable marks a refusal of a count-feasible request for which no
// set of units is free for the whole window; the error is an
// *UnmappableError. A request that does not fit even in sum wraps
// ErrNoCapacity instead.
var ErrUnmappable = errors.New("no set of units free for the whole window")

// ErrUnitConflict marks a down window that would take a unit from bookings
// that cannot be moved elsewhere; the error is a *UnitConflictError.
var ErrUnitConflict = errors.New("unit window conflicts with bookings")

// UnmappableError carries the decision of a refused admission. It wraps
// ErrUnmappable when the request was count-feasible, else ErrNoCapacity.
type UnmappableError struct {
	ID       string
	Decision UnitDecision
}

// Error says which booking was refused and why.
func (e *UnmappableError) Error() string {
	return fmt.Sprintf("reserve %q: %s", e.ID, e.Decision.Reason())
}

// Unwrap makes errors.Is work with ErrUnmappable or ErrNoCapacity.
func (e *UnmappableError) Unwrap() error {
	if e.Decision.CountFits {
		return ErrUnmappable
	}
	return ErrNoCapacity
}

// UnitConflictError lists, sorted, the bookings (and other down windows) on
// Unit that a down window would overlap and that could not be moved. It
// wraps ErrUnitConflict.
type UnitConflictError struct {
	Unit     string
	Bookings []string
	Downs    []string
}

// Error lists the unit and what the window would overlap.
func (e *UnitConflictError) Error() string {
	s := fmt.Sprintf("unit %q: window would overbook %d booking(s) %v", e.Unit, len(e.Bookings), e.Bookings)
	if len(e.Downs) > 0 {
		s += fmt.Sprintf(" and overlaps down window(s) %v", e.Downs)
	}
	return s
}

// Unwrap makes errors.Is(err, ErrUnitConflict) true.
func (e *UnitConflictError) Unwrap() error { return ErrUnitConflict }

// urec is one booking or down window as held by the unit schedules.
type urec struct {
	id         string
	start, end int64
	// units are unit indices, ascending. Invariant: len(units) is the
	// booking's amount (1 for a down window).
	units   []int32
	movable bool
	down    bool
	// gone is set when the record leaves the schedule (the end heap
	// drops such entries lazily); mark is scratch for set building.
	gone bool
	mark uint64
}

// span is one record's occupation of one unit.
type span struct {
	start, end int64
	r          *urec
}

// unitLine is the schedule of one unit. Invariant: spans sorted by start,
// pairwise disjoint (hence also sorted by end), each with start < end.
type unitLine struct {
	spans chunkList[span]
}

// UnitSchedule is the two-level schedule of one resource made of named
// units: a global timeline of summed free capacity (admission) plus one
// schedule per unit (the mapping). Every mutating method checks before it
// changes anything: on error the state is as it was. Not safe for
// concurrent use.
type UnitSchedule struct {
	names []string
	index map[string]int32
	cfg   UnitConfig
	// origin only grows (Advance); a booking with start <= origin is
	// running and never moves.
	origin int64
	// global is the free-capacity profile in sum: len(names) minus the
	// booked units minus the down units at every instant.
	global Timeline
	lines  []unitLine
	// recs indexes every record by duration class and start, so that a
	// search visits the records overlapping its window, not every unit.
	recs  recIndex
	books map[string]*urec
	downs map[string]*urec
	ends  endRecHeap
	epoch uint64
	// scratch for the searches.
	es      []int64
	cs      []cand
	best    []cand
	busy    []uint64 // bitmap of units held in the window (all clear between searches)
	lb      []int64  // per unit: the end of its last span in the window
	touched []int32  // the units set in busy
}

// NewUnitSchedule returns an empty schedule over the named units (in the
// order given, which is the unit index order) with the given origin.
// Names must be non-empty and distinct; at least one is needed.
func NewUnitSchedule(names []string, origin int64, cfg UnitConfig) (*UnitSchedule, error) {
	if len(names) == 0 {
		return nil, &FieldError{Field: "units", Reason: "must name at least one unit"}
	}
	if len(names) > 1<<24 {
		return nil, &FieldError{Field: "units", Reason: fmt.Sprintf("%d units: at most %d", len(names), 1<<24)}
	}
	if origin < 0 || origin >= MaxTime {
		return nil, &FieldError{Field: "origin", Reason: "must be in [0, MaxTime)"}
	}
	if cfg.Fit != FitBest && cfg.Fit != FitLowest {
		return nil, &FieldError{Field: "fit", Reason: fmt.Sprintf("unknown rule %d", cfg.Fit)}
	}
	if cfg.SearchBudget < 0 {
		return nil, &FieldError{Field: "search_budget", Reason: "must be >= 0"}
	}
	if cfg.SearchBudget == 0 {
		cfg.SearchBudget = DefaultSearchBudget
	}
	if cfg.Factory == nil {
		cfg.Factory = NewIndexed
	}
	u := &UnitSchedule{
		names:  slices.Clone(names),
		index:  make(map[string]int32, len(names)),
		cfg:    cfg,
		origin: origin,
		lines:  make([]unitLine, len(names)),
		books:  make(map[string]*urec),
		downs:  make(map[string]*urec),
	}
	for i, n := range names {
		if n == "" {
			return nil, &FieldError{Field: fmt.Sprintf("units[%d]", i), Reason: "must not be empty"}
		}
		if _, dup := u.index[n]; dup {
			return nil, &FieldError{Field: fmt.Sprintf("units[%d]", i), Reason: fmt.Sprintf("duplicate unit %q", n)}
		}
		u.index[n] = int32(i)
	}
	u.global = cfg.Factory(int64(len(names)), origin)
	u.busy = make([]uint64, (len(names)+63)/64)
	u.lb = make([]int64, len(names))
	return u, nil
}

// Units returns the unit names in index order.
func (u *UnitSchedule) Units() []string { return slices.Clone(u.names) }

// Origin returns the largest now passed to Advance (or the initial origin).
func (u *UnitSchedule) Origin() int64 { return u.origin }

// Len returns the number of live bookings (down windows not counted).
func (u *UnitSchedule) Len() int { return len(u.books) }

// Get returns the booking id.
func (u *UnitSchedule) Get(id string) (UnitBooking, bool) {
	r, ok := u.books[id]
	if !ok {
		return UnitBooking{}, false
	}
	return UnitBooking{ID: r.id, Start: r.start, End: r.end, Units: u.unitNames(r.units), Movable: r.movable}, true
}

// FreeUnits returns the names of the units free over [start, end), in index
// order (an availability report for one window).
func (u *UnitSchedule) FreeUnits(start, end int64) ([]string, error) {
	if start < u.origin {
		return nil, &FieldError{Field: "start", Reason: fmt.Sprintf("must be >= origin %d", u.origin)}
	}
	if end <= start {
		return nil, &FieldError{Field: "end", Reason: "must be after start"}
	}
	var out []string
	for i := range u.lines {
		if u.lines[i].free(start, end) {
			out = append(out, u.names[i])
		}
	}
	return out, nil
}

func (u *UnitSchedule) unitNames(idx []int32) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = u.names[x]
	}
	return out
}

// pinned reports whether r may not move: a down window, a booking the
// caller marked unmovable (materialized), or one already running.
func (u *UnitSchedule) pinned(r *urec) bool {
	return r.down || !r.movable || r.start <= u.origin
}

// checkRequest validates req and returns the latest admissible start.
func (u *UnitSchedule) checkRequest(req UnitRequest, policy UnitPolicy) (int64, error) {
	switch {
	case policy != UnitRefuse && policy != UnitRemap:
		return 0, &FieldError{Field: "policy", Reason: fmt.Sprintf("unknown unit policy %d", policy)}
	case req.Amount <= 0:
		return 0, &FieldError{Field: "amount", Reason: "must be > 0"}
	case req.Amount > int64(len(u.names)):
		return 0, &FieldError{Field: "amount", Reason: fmt.Sprintf("%d units requested, the resource has %d", req.Amount, len(u.names))}
	case req.Duration <= 0:
		return 0, &FieldError{Field: "duration", Reason: "must be > 0"}
	case req.NotBefore < u.origin:
		return 0, &FieldError{Field: "not_before", Reason: fmt.Sprintf("must be >= origin %d", u.origin)}
	case req.NotBefore > MaxTime-req.Duration:
		return 0, &FieldError{Field: "duration", Reason: "not_before + duration overflows"}
	case req.Deadline < req.NotBefore+req.Duration:
		return 0, &FieldError{Field: "deadline", Reason: "must be >= not_before + duration"}
	}
	return req.Deadline - req.Duration, nil
}

// Find returns the decision Reserve would make, without changing anything.
func (u *UnitSchedule) Find(req UnitRequest, policy UnitPolicy) (UnitDecision, error) {
	latest, err := u.checkRequest(req, policy)
	if err != nil {
		return UnitDecision{}, err
	}
	d, _ := u.decide(req, latest, policy)
	return d, nil
}

// Reserve admits req under id at the earliest start that maps under the
// policy, books it on the chosen units and applies the re-mappings the
// decision lists. When nothing maps in the window it returns the decision
// (with the reason and the earliest later start that maps) and an
// *UnmappableError, and changes nothing.
func (u *UnitSchedule) Reserve(id string, req UnitRequest, policy UnitPolicy) (UnitDecision, error) {
	if err := u.checkNewID(id); err != nil {
		return UnitDecision{}, err
	}
	latest, err := u.checkRequest(req, policy)
	if err != nil {
		return UnitDecision{}, err
	}
	d, p := u.decide(req, latest, policy)
	if !d.Fits {
		return d, &UnmappableError{ID: id, Decision: d}
	}
	u.applyPlan(p)
	r := &urec{id: id, start: d.Start, end: d.Start + req.Duration, units: p.units, movable: req.Movable}
	u.insertRec(r)
	u.books[id] = r
	return d, nil
}

func (u *UnitSchedule) checkNewID(id string) error {
	if id == "" {
		return &FieldError{Field: "id", Reason: "must not be empty"}
	}
	if _, ok := u.books[id]; ok {
		return fmt.Errorf("booking %q: %w", id, ErrDuplicateID)
	}
	return nil
}

// Book records the exact booking b (units by name) as given, for replay
// and restore. It fails, changing nothing, if a unit is unknown or
// repeated, or if a unit is not free over [b.Start, b.End).
func (u *UnitSchedule) Book(b UnitBooking) error {
	if err := u.checkNewID(b.ID); err != nil {
		return err
	}
	r, err := u.checkRecord(b.ID, b.Start, b.End, b.Units)
	if err != nil {
		return err
	}
	r.movable = b.Movable
	for _, x := range r.units {
		if !u.lines[x].free(r.start, r.end) {
			return fmt.Errorf("book %q: unit %q is not free over [%d,%d): %w", b.ID, u.names[x], r.start, r.end, ErrNoCapacity)
		}
	}
	u.insertRec(r)
	u.books[b.ID] = r
	return nil
}

// checkRecord validates a window and unit names and builds the record.
func (u *UnitSchedule) checkRecord(id string, start, end int64, units []string) (*urec, error) {
	if end <= start {
		return nil, &FieldError{Field: "end", Reason: "must be after start"}
	}
	if end <= u.origin {
		return nil, &FieldError{Field: "end", Reason: fmt.Sprintf("must be after origin %d", u.origin)}
	}
	if start < 0 {
		return nil, &FieldError{Field: "start", Reason: "must be >= 0"}
	}
	if len(units) == 0 {
		return nil, &FieldError{Field: "units", Reason: "must name at least one unit"}
	}
	r := &urec{id: id, start: start, end: end, units: make([]int32, 0, len(units))}
	for i, n := range units {
		x, ok := u.index[n]
		if !ok {
			return nil, &FieldError{Field: fmt.Sprintf("units[%d]", i), Reason: fmt.Sprintf("unknown unit %q", n)}
		}
		r.units = append(r.units, x)
	}
	slices.Sort(r.units)
	for i := 1; i < len(r.units); i++ {
		if r.units[i] == r.units[i-1] {
			return nil, &FieldError{Field: "units", Reason: fmt.Sprintf("unit %q named twice", u.names[r.units[i]])}
		}
	}
	return r, nil
}

// Release removes the booking id and frees its units.
func (u *UnitSchedule) Release(id string) (UnitBooking, error) {
	b, ok := u.Get(id)
	if !ok {
		return UnitBooking{}, fmt.Errorf("release %q: %w", id, ErrUnknownBooking)
	}
	u.Forget(id)
	return b, nil
}

// Forget removes the booking id and frees its units, like Release, and
// reports whether it was there. It builds neither the booking nor an
// error, for callers that release a key on every schedule that might hold
// it (most do not).
func (u *UnitSchedule) Forget(id string) bool {
	r, ok := u.books[id]
	if !ok {
		return false
	}
	u.removeRec(r)
	delete(u.books, id)
	return true
}

// SetMovable sets the movable flag of booking id: false once the booking
// is materialized in a resource manager (it then never moves), true again
// if that materialization is withdrawn.
func (u *UnitSchedule) SetMovable(id string, movable bool) error {
	r, ok := u.books[id]
	if !ok {
		return fmt.Errorf("set movable %q: %w", id, ErrUnknownBooking)
	}
	r.movable = movable
	return nil
}

// Advance moves the origin to now (never back): bookings and down windows
// that end at or before now are forgotten, and bookings that start at or
// before now count as running (pinned).
func (u *UnitSchedule) Advance(now int64) {
	now = min(now, MaxTime-1)
	if now <= u.origin {
		return
	}
	u.origin = now
	u.global.Advance(now)
	for len(u.ends) > 0 && u.ends[0].end <= now {
		r := u.ends.pop()
		if r.gone {
			continue
		}
		r.gone = true
		u.recs.remove(r)
		for _, x := range r.units {
			u.lines[x].remove(r)
		}
		if r.down {
			delete(u.downs, r.id)
		} else {
			delete(u.books, r.id)
		}
	}
}

// insertRec puts r on its units and books it in the global timeline.
func (u *UnitSchedule) insertRec(r *urec) {
	for _, x := range r.units {
		u.lines[x].insert(span{start: r.start, end: r.end, r: r})
	}
	if s := max(r.start, u.origin); s < r.end {
		if err := u.global.Book(s, r.end, int64(len(r.units))); err != nil {
			// Every unit of r is free over its window, so the sum is.
			panic(fmt.Sprintf("planner: unit schedule out of step with its global timeline: %v", err))
		}
	}
	r.gone = false
	u.ends.push(r)
	u.recs.add(r)
}

// removeRec takes r off its units and the global timeline.
func (u *UnitSchedule) removeRec(r *urec) {
	for _, x := range r.units {
		u.lines[x].remove(r)
	}
	if s := max(r.start, u.origin); s < r.end {
		if err := u.global.Release(s, r.end, int64(len(r.units))); err != nil {
			panic(fmt.Sprintf("planner: unit schedule out of step with its global timeline: %v", err))
		}
	}
	r.gone = true
	u.recs.remove(r)
}

// --- per-unit lines ---

// at returns the position of the first span that ends after t (spans
// are sorted by end too, being disjoint).
// It is chunkList.find written out for spans: the inner loop of every
// unit check, where the call through a func value per probe showed.
func (l *unitLine) at(t int64) (int, int) {
	cs := l.spans.chunks
	lo, hi := 0, len(cs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ch := cs[m]; ch[len(ch)-1].end > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == len(cs) {
		return lo, 0
	}
	ch := cs[lo]
	a, b := 0, len(ch)
	for a < b {
		m := int(uint(a+b) >> 1)
		if ch[m].end > t {
			b = m
		} else {
			a = m + 1
		}
	}
	return lo, a
}

// free reports whether no span intersects [s, e).
func (l *unitLine) free(s, e int64) bool {
	sp, ok := l.spans.at(l.at(s))
	return !ok || sp.start >= e
}

// around returns the idle stretch [prev, next) of the unit around s, which
// must be free: prev is the end of the span before (or origin), next the
// start of the span after (or MaxTime).
func (l *unitLine) around(s, origin int64) (prev, next int64) {
	ci, i := l.at(s)
	prev, next = origin, MaxTime
	if sp, ok := l.spans.before(ci, i); ok {
		prev = sp.end
	}
	if sp, ok := l.spans.at(ci, i); ok {
		next = sp.start
	}
	return prev, next
}

// each calls fn for the spans that intersect [s, e), in order.
func (l *unitLine) each(s, e int64, fn func(span)) {
	for ci, i := l.at(s); ; ci, i = l.spans.next(ci, i) {
		sp, ok := l.spans.at(ci, i)
		if !ok || sp.start >= e {
			return
		}
		fn(sp)
	}
}

// insert adds sp, whose window must be free.
func (l *unitLine) insert(sp span) {
	ci, i := l.at(sp.start)
	l.spans.insert(ci, i, sp)
}

// remove deletes r's span.
func (l *unitLine) remove(r *urec) {
	ci, i := l.at(r.start)
	if sp, ok := l.spans.at(ci, i); !ok || sp.r != r {
		panic(fmt.Sprintf("planner: booking %q missing from its unit", r.id))
	}
	l.spans.delete(ci, i)
}

// --- admission ---

// plan is what an admission will do: the units of the new booking and the
// moves of existing ones.
type plan struct {
	units []int32
	moves []move
}

type move struct {
	r         *urec
	from, to  []int32
	fromNames []string
}

// decide computes the decision and its plan; it leaves the state as it was.
func (u *UnitSchedule) decide(req UnitRequest, latest int64, policy UnitPolicy) (UnitDecision, plan) {
	var d UnitDecision
	d.CountStart, d.CountFits = u.global.Earliest(req.Amount, req.Duration, req.NotBefore, latest)
	start, p, ok, exhausted := u.search(req.Amount, req.Duration, req.NotBefore, latest, policy)
	d.Exhausted = exhausted
	if ok {
		d.Fits, d.Start, d.Units = true, start, u.unitNames(p.units)
		for _, m := range p.moves {
			d.Remaps = append(d.Remaps, Remap{ID: m.r.id, From: m.fromNames, To: u.unitNames(m.to)})
		}
		slices.SortFunc(d.Remaps, func(a, b Remap) int { return strings.Compare(a.ID, b.ID) })
		return d, p
	}
	if latest < MaxTime-req.Duration {
		var ex bool
		d.LaterStart, _, d.LaterOK, ex = u.search(req.Amount, req.Duration, latest+1, MaxTime-req.Duration, policy)
		d.Exhausted = d.Exhausted || ex
	}
	return d, plan{}
}

// search returns the earliest start in [nb, latest] that maps under the
// policy, with its plan.
func (u *UnitSchedule) search(amount, d, nb, latest int64, policy UnitPolicy) (int64, plan, bool, bool) {
	sa, okA := u.earliestFixed(amount, d, nb, latest)
	var unitsA []int32
	if okA {
		// earliestFixed left the free units at sa in u.cs.
		unitsA = u.pick(u.cs, amount)
	}
	if policy == UnitRefuse {
		if !okA {
			return 0, plan{}, false, false
		}
		return sa, plan{units: unitsA}, true, false
	}
	// UnitRemap: every start before sa needs moves. Candidates are nb and
	// every span end (an earliest mapping start is one of them); the
	// global timeline skips the count-infeasible stretches.
	budget := u.cfg.SearchBudget
	exhausted := false
	cur := nb
	last := latest
	if okA {
		last = sa - 1
	}
	for cur <= last {
		if budget <= 0 {
			// Every candidate costs work; a search that has spent its
			// budget stops here and says so rather than stall the log.
			exhausted = true
			break
		}
		s, ok := u.global.Earliest(amount, d, cur, last)
		if !ok {
			break
		}
		budget -= len(u.lines) // a candidate costs a visit to every unit (nextEnd)
		p, ok, ex := u.remapAt(s, s+d, amount, nil, &budget)
		exhausted = exhausted || ex
		if ok {
			return s, p, true, exhausted
		}
		next, ok := u.nextEnd(s)
		if !ok {
			break
		}
		cur = next
	}
	if okA {
		return sa, plan{units: unitsA}, true, exhausted
	}
	return 0, plan{}, false, exhausted
}

// earliestFixed is the search without moves: the earliest s in
// [nb, latest] at which amount units are free over [s, s+d). Each round
// asks the global timeline for a count-feasible start s and marks the
// units held by the records overlapping [s, s+d) (found through the
// record index, not by visiting every unit): if amount units are left
// free, s maps and u.cs holds them for pick. Otherwise every held unit
// gives a lower bound on the earliest start at which it is free for d,
// the end of its last record in the window; no start before the bound
// that ranks amount-th among the units (free ones count as s) can map,
// so the next round starts there.
func (u *UnitSchedule) earliestFixed(amount, d, nb, latest int64) (int64, bool) {
	s := nb
	for {
		g, ok := u.global.Earliest(amount, d, s, latest)
		if !ok {
			return 0, false
		}
		s = g
		u.mark(s, s+d)
		free := int64(len(u.names) - len(u.touched))
		if free >= amount {
			u.cs = u.freeCands(s, s+d, amount, u.cs[:0])
			u.unmark()
			return s, true
		}
		es := u.es[:0]
		for _, x := range u.touched {
			if lb := u.lb[x]; lb <= latest {
				es = append(es, lb)
			}
		}
		u.es = es
		u.unmark()
		need := amount - free
		if int64(len(es)) < need {
			return 0, false
		}
		slices.Sort(es)
		s = es[need-1]
	}
}

// mark sets in u.busy the units held by a record overlapping [s, e) and
// in u.lb the end of the last such record per unit.
func (u *UnitSchedule) mark(s, e int64) {
	u.recs.each(s, e, func(r *urec) {
		for _, x := range r.units {
			w, bit := x>>6, uint64(1)<<(x&63)
			if u.busy[w]&bit == 0 {
				u.busy[w] |= bit
				u.touched = append(u.touched, x)
				u.lb[x] = r.end
			} else if r.end > u.lb[x] {
				u.lb[x] = r.end
			}
		}
	})
}

// unmark clears what mark set.
func (u *UnitSchedule) unmark() {
	for _, x := range u.touched {
		u.busy[x>>6] = 0
	}
	u.touched = u.touched[:0]
}

// freeCands appends the units left free by mark, in index order, with
// their fit data; under FitLowest it stops after amount of them.
func (u *UnitSchedule) freeCands(s, e, amount int64, cs []cand) []cand {
	n := len(u.names)
	for w, word := range u.busy {
		free := ^word
		for free != 0 {
			x := w*64 + bits.TrailingZeros64(free)
			free &= free - 1
			if x >= n {
				break
			}
			if u.cfg.Fit == FitLowest {
				cs = append(cs, cand{x: int32(x)})
				if int64(len(cs)) >= amount {
					return cs
				}
				continue
			}
			cs = append(cs, u.fitData(x, s, e))
		}
	}
	return cs
}

// fitData returns the best-fit data of unit x, free over [s, e).
func (u *UnitSchedule) fitData(x int, s, e int64) cand {
	prev, next := u.lines[x].around(s, u.origin)
	return cand{x: int32(x), hole: next - prev, front: s - prev}
}

// nextEnd returns the earliest span end after t on any unit.
func (u *UnitSchedule) nextEnd(t int64) (int64, bool) {
	best, ok := MaxTime, false
	for i := range u.lines {
		l := &u.lines[i]
		if sp, found := l.spans.at(l.at(t)); found && sp.end < best {
			best, ok = sp.end, true
		}
	}
	return best, ok
}

// cand is a unit free over a window, with what the fit rule weighs.
type cand struct {
	x           int32
	pref        bool
	hole, front int64
}

// pick returns amount units of cs (which must hold that many), sorted by
// index: preferred ones first, then by the fit rule (smallest hole,
// smallest gap before, lowest index; all zero under FitLowest). It keeps
// the best amount in a sorted buffer instead of sorting all of cs, which
// is mostly far longer.
func (u *UnitSchedule) pick(cs []cand, amount int64) []int32 {
	k := int(amount)
	best := u.best[:0]
	for _, c := range cs {
		if len(best) == k && !c.before(best[k-1]) {
			continue
		}
		i := len(best)
		for i > 0 && c.before(best[i-1]) {
			i--
		}
		if len(best) < k {
			best = append(best, cand{})
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = c
	}
	u.best = best
	out := make([]int32, k)
	for i := range out {
		out[i] = best[i].x
	}
	slices.Sort(out)
	return out
}

// before is the fit order: preferred first, then smaller hole, smaller
// gap before, lower index.
func (a cand) before(b cand) bool {
	if a.pref != b.pref {
		return a.pref
	}
	if a.hole != b.hole {
		return a.hole < b.hole
	}
	if a.front != b.front {
		return a.front < b.front
	}
	return a.x < b.x
}

// choose picks amount of the units free over [s, e) by the fit rule,
// preferring the units in prefer (a moved booking's old units) first. It
// returns nil when fewer than amount are free. The result is sorted.
func (u *UnitSchedule) choose(s, e, amount int64, prefer []int32) []int32 {
	u.cs = u.freeUnits(s, e, prefer, u.cs[:0])
	if int64(len(u.cs)) < amount {
		return nil
	}
	return u.pick(u.cs, amount)
}

// freeUnits appends to cs every unit free over [s, e), in index order,
// with its fit data and whether prefer (sorted) lists it. It finds the
// held units through the record index, as earliestFixed does.
func (u *UnitSchedule) freeUnits(s, e int64, prefer []int32, cs []cand) []cand {
	u.mark(s, e)
	n := len(u.names)
	for w, word := range u.busy {
		free := ^word
		for free != 0 {
			x := w*64 + bits.TrailingZeros64(free)
			free &= free - 1
			if x >= n {
				break
			}
			c := cand{x: int32(x)}
			if u.cfg.Fit == FitBest {
				c = u.fitData(x, s, e)
			}
			if len(prefer) > 0 {
				_, c.pref = slices.BinarySearch(prefer, int32(x))
			}
			cs = append(cs, c)
		}
	}
	u.unmark()
	return cs
}

// applyPlan performs the moves of p (the new booking is inserted by the
// caller).
func (u *UnitSchedule) applyPlan(p plan) {
	for _, m := range p.moves {
		for _, x := range m.from {
			u.lines[x].remove(m.r)
		}
	}
	for _, m := range p.moves {
		m.r.units = m.to
		for _, x := range m.to {
			u.lines[x].insert(span{start: m.r.start, end: m.r.end, r: m.r})
		}
	}
}

// --- re-mapping ---

// item is one booking to (re)place in a re-mapping search; r is nil for
// the new booking.
type item struct {
	r          *urec
	start, end int64
	amount     int64
	old        []int32
}

// movableOverlapping returns the movable bookings that overlap [s, e) on
// any unit, sorted by ID, excluding those marked with epoch ep already;
// it marks the ones it returns.
func (u *UnitSchedule) movableOverlapping(s, e int64, ep uint64, out []*urec) []*urec {
	first := len(out)
	u.recs.each(s, e, func(r *urec) {
		if r.mark == ep || u.pinned(r) {
			return
		}
		r.mark = ep
		out = append(out, r)
	})
	slices.SortFunc(out[first:], func(a, b *urec) int { return strings.Compare(a.id, b.id) })
	return out
}

// remapAt looks for a mapping of a new booking of amount units over
// [s, e) that moves movable bookings. It starts with the movable bookings
// overlapping the window and widens the set to those overlapping the span
// of the set until it stops growing: at that point every movable booking
// connected to the window by a chain of overlaps may move, and nothing
// else could help (a booking outside the chain overlaps none of them in
// time). The state is left as it was; the plan lists the moves.
//
// With amount = 0 there is no new booking: fixed, a down window that is
// not yet on its unit, must find room instead (AddDown).
func (u *UnitSchedule) remapAt(s, e, amount int64, fixed *urec, budget *int) (plan, bool, bool) {
	u.epoch++
	ep := u.epoch
	set := u.movableOverlapping(s, e, ep, nil)
	if len(set) == 0 {
		return plan{}, false, false
	}
	for {
		p, ok, ex := u.solve(set, s, e, amount, fixed, false, budget)
		if ok || ex {
			return p, ok, ex
		}
		lo, hi := s, e
		for _, r := range set {
			lo, hi = min(lo, r.start), max(hi, r.end)
		}
		n := len(set)
		set = u.movableOverlapping(lo, hi, ep, set)
		if len(set) == n {
			// The set is closed: only now is the exhaustive search worth
			// its cost, since a failure here is final.
			return u.solve(set, s, e, amount, fixed, true, budget)
		}
	}
}

// solve places the bookings of set and a new one over [s, e) with every
// other record fixed: first greedily in order of start, each booking on
// its old units where they are still free, else by the fit rule; if that
// fails and exhaustive is set, by an exhaustive search bounded by budget.
// fixed, when not nil, is put on its unit while the set is lifted. State
// is restored before it returns.
func (u *UnitSchedule) solve(set []*urec, s, e, amount int64, fixed *urec, exhaustive bool, budget *int) (plan, bool, bool) {
	items := make([]item, 0, len(set)+1)
	if amount > 0 {
		items = append(items, item{start: s, end: e, amount: amount})
	}
	for _, r := range set {
		items = append(items, item{r: r, start: r.start, end: r.end, amount: int64(len(r.units)), old: r.units})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end), cmp.Compare(idOf(a), idOf(b)))
	})
	// Lift the set off its units (and the index, which choose reads).
	for _, r := range set {
		for _, x := range r.units {
			u.lines[x].remove(r)
		}
		u.recs.remove(r)
	}
	if fixed != nil {
		for _, x := range fixed.units {
			if !u.lines[x].free(fixed.start, fixed.end) {
				panic(fmt.Sprintf("planner: window %q still overlaps a fixed record", fixed.id))
			}
			u.lines[x].insert(span{start: fixed.start, end: fixed.end, r: fixed})
		}
		u.recs.add(fixed)
	}
	tmp := make([]*urec, len(items))
	for i := range items {
		tmp[i] = &urec{id: idOf(items[i]), start: items[i].start, end: items[i].end}
	}
	assign := make([][]int32, len(items))
	place := func(i int, units []int32) {
		assign[i] = units
		tmp[i].units = units
		for _, x := range units {
			u.lines[x].insert(span{start: items[i].start, end: items[i].end, r: tmp[i]})
		}
		u.recs.add(tmp[i])
	}
	unplace := func(i int) {
		for _, x := range assign[i] {
			u.lines[x].remove(tmp[i])
		}
		u.recs.remove(tmp[i])
		assign[i] = nil
	}
	ok := true
	exhausted := false
	for i, it := range items {
		// Every placement looks at every unit: that is what the budget
		// counts, so that wide sets and many candidates stay bounded.
		if *budget <= 0 {
			ok, exhausted = false, true
			break
		}
		*budget -= len(u.lines)
		units := u.choose(it.start, it.end, it.amount, it.old)
		if units == nil {
			ok = false
			break
		}
		place(i, units)
	}
	if !ok && exhaustive && !exhausted {
		for i := range items {
			if assign[i] != nil {
				unplace(i)
			}
		}
		var bt func(i int) bool
		bt = func(i int) bool {
			if i == len(items) {
				return true
			}
			it := items[i]
			if *budget <= 0 {
				exhausted = true
				return false
			}
			*budget -= len(u.lines)
			var free []int32
			for _, c := range u.freeUnits(it.start, it.end, nil, u.cs[:0]) {
				free = append(free, c.x)
			}
			if int64(len(free)) < it.amount {
				return false
			}
			found := false
			combinations(len(free), int(it.amount), func(pick []int) bool {
				if *budget <= 0 {
					exhausted = true
					return false
				}
				*budget--
				units := make([]int32, len(pick))
				for k, p := range pick {
					units[k] = free[p]
				}
				place(i, units)
				if bt(i + 1) {
					found = true
					return false
				}
				unplace(i)
				return true
			})
			return found
		}
		ok = bt(0)
	}
	var p plan
	if ok {
		for i, it := range items {
			if it.r == nil {
				p.units = assign[i]
			} else if !slices.Equal(assign[i], it.old) {
				p.moves = append(p.moves, move{r: it.r, from: it.old, to: assign[i], fromNames: u.unitNames(it.old)})
			}
		}
	}
	// Restore: take the tentative spans off, put the set back.
	for i := range items {
		if assign[i] != nil {
			unplace(i)
		}
	}
	if fixed != nil {
		for _, x := range fixed.units {
			u.lines[x].remove(fixed)
		}
		u.recs.remove(fixed)
	}
	for _, r := range set {
		for _, x := range r.units {
			u.lines[x].insert(span{start: r.start, end: r.end, r: r})
		}
		u.recs.add(r)
	}
	return p, ok, exhausted
}

func idOf(it item) string {
	if it.r == nil {
		return ""
	}
	return it.r.id
}

// combinations calls f with every k-subset of [0, n) in lexicographic
// order until f returns false.
func combinations(n, k int, f func([]int) bool) {
	pick := make([]int, k)
	for i := range pick {
		pick[i] = i
	}
	for {
		if !f(pick) {
			return
		}
		i := k - 1
		for i >= 0 && pick[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		pick[i]++
		for j := i + 1; j < k; j++ {
			pick[j] = pick[j-1] + 1
		}
	}
}

// --- end heap ---

// endRecHeap is a min-heap of records by end; released records stay in it
// (marked gone) until their end passes.
type endRecHeap []*urec

func (h *endRecHeap) push(r *urec) {
	*h = append(*h, r)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].end <= s[i].end {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *endRecHeap) pop() *urec {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = nil
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s[l].end < s[m].end {
			m = l
		}
		if l+1 < n && s[l+1].end < s[m].end {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// --- record index ---

// recIndex holds every record of a schedule in duration classes: class c
// holds the records whose length is in [2^(c-1), 2^c), sorted by start. A
// record overlapping [s, e) starts in (s-2^c, e), so a query looks at one
// range per class instead of at every unit.
type recIndex struct {
	classes [64]chunkList[*urec]
}

func durClass(r *urec) int { return bits.Len64(uint64(r.end - r.start)) }

func (x *recIndex) add(r *urec) {
	c := &x.classes[durClass(r)]
	ci, i := c.find(func(o *urec) bool { return o.start > r.start })
	c.insert(ci, i, r)
}

func (x *recIndex) remove(r *urec) {
	c := &x.classes[durClass(r)]
	for ci, i := c.find(func(o *urec) bool { return o.start >= r.start }); ; ci, i = c.next(ci, i) {
		o, ok := c.at(ci, i)
		if !ok || o.start != r.start {
			break
		}
		if o == r {
			c.delete(ci, i)
			return
		}
	}
	panic(fmt.Sprintf("planner: record %q missing from the index", r.id))
}

// each calls fn for every record overlapping [s, e), in no particular
// order that a caller may depend on.
func (x *recIndex) each(s, e int64, fn func(*urec)) {
	for c := range x.classes {
		list := &x.classes[c]
		if list.n == 0 {
			continue
		}
		lo := int64(-1) << 63
		if c < 63 && s > lo+int64(1)<<c {
			lo = s - int64(1)<<c
		}
		for ci, i := list.find(func(o *urec) bool { return o.start > lo }); ; ci, i = list.next(ci, i) {
			r, ok := list.at(ci, i)
			if !ok || r.start >= e {
				break
			}
			if r.end > s {
				fn(r)
			}
		}
	}
}
