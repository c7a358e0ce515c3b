package planner

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Policy is a resource's admission policy for reservations (fixed-start
// requests) that collide with what is already planned.
type Policy uint8

const (
	// PolicyReject refuses a reservation if anything occupies its window
	// (the Planner's own behaviour).
	PolicyReject Policy = iota
	// PolicyMoveVariable also accepts a reservation that collides only
	// with planned, not yet started variable jobs; those jobs are
	// re-planned later (Heine et al., "variable jobs move").
	PolicyMoveVariable
	// PolicyRelaxed also accepts a reservation that overlaps others when
	// the estimated probability that no violation occurs is at least the
	// resource's MinSuccess (Xiao & Hu, TDRRP).
	PolicyRelaxed
)

// String returns the policy's name as used in configuration and reports.
func (p Policy) String() string {
	switch p {
	case PolicyReject:
		return "REJECT"
	case PolicyMoveVariable:
		return "MOVE_VARIABLE"
	case PolicyRelaxed:
		return "RELAXED"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// DefaultMaxPushes is the starvation guard of PolicyMoveVariable when a
// ResourcePolicy leaves MaxPushes at 0: a variable job can be pushed later
// by reservations at most this many times; afterwards it is pinned and
// treated like a reservation (it can still move earlier).
const DefaultMaxPushes = 8

// ResourcePolicy configures admission on one resource.
type ResourcePolicy struct {
	Policy Policy
	// MinSuccess is v*, the least acceptable probability that a relaxed
	// admission causes no violation; in (0, 1]. Used by PolicyRelaxed.
	MinSuccess float64
	// MaxPushes bounds how often one variable job may be pushed later by
	// PolicyMoveVariable (0 selects DefaultMaxPushes).
	MaxPushes int
}

// ItemKind tells reservations from variable jobs.
type ItemKind uint8

const (
	// KindReservation has a fixed start chosen by the client.
	KindReservation ItemKind = iota
	// KindVariable is a batch job planned at its earliest slot and
	// re-planned until it starts.
	KindVariable
)

// Item is a reservation or variable job known to a Scheduler.
type Item struct {
	ID       string
	Owner    string
	Kind     ItemKind
	Resource string
	Amount   int64
	// Start and End: the booked window (End is the requested end).
	Start, End int64
	// NotBefore is a variable job's earliest allowed start (its submit time).
	NotBefore int64
	Running   bool
	// Pushes counts how often a variable job was pushed later.
	Pushes int
	// Overbooked is the part of Amount a relaxed admission placed beyond
	// the planned free capacity (0 for rigid admissions).
	Overbooked int64
}

// Move records one variable job re-planned to let a reservation in.
type Move struct {
	ID       string
	From, To int64
}

// Admission is the outcome of a Scheduler reservation.
type Admission struct {
	// Relaxed is true when the reservation did not fit rigidly and was
	// admitted by PolicyRelaxed.
	Relaxed bool
	// Probability is the estimated probability of no violation (1 for a
	// rigid admission).
	Probability float64
	// Moved lists the variable jobs re-planned by PolicyMoveVariable.
	Moved []Move
}

// Violation reports that capacity was genuinely short when an item was
// due to start: Short units were missing. A reservation in violation is
// dropped from the plan (the caller records it as degraded); a variable
// job is re-planned instead and reported with Replanned set.
type Violation struct {
	ID        string
	Resource  string
	At        int64
	Short     int64
	Kind      ItemKind
	Replanned bool
}

// AdvanceReport lists what an Advance started, finished and violated, in
// the order it happened.
type AdvanceReport struct {
	Started    []string
	Finished   []string
	Violations []Violation
}

// Scheduler layers the admission policies of the papers over a Planner:
// variable jobs, per-resource policies (REJECT, MOVE_VARIABLE, RELAXED),
// early completion with a learned release-time distribution, violation
// detection and relaxed co-reservation over several resources. Items are
// single-resource. The Scheduler owns the Planner's bookings: do not book
// on the Planner directly while a Scheduler uses it.
//
// Like the Planner it is deterministic and not safe for concurrent use.
type Scheduler struct {
	p        *Planner
	policies map[string]ResourcePolicy
	items    map[string]*Item
	// byRes holds each resource's live items in submission order.
	byRes map[string][]*Item
	// Releases is the learned release-time model (exported so that a
	// caller can tune its prior).
	Releases *ReleaseModel
	// moves lists the variable jobs re-planned by the current (or last)
	// call; see Moves.
	moves []Move
}

// NewScheduler returns a Scheduler over p (which must hold no bookings).
// Every resource starts with PolicyReject.
func NewScheduler(p *Planner) *Scheduler {
	return &Scheduler{
		p:        p,
		policies: make(map[string]ResourcePolicy),
		items:    make(map[string]*Item),
		byRes:    make(map[string][]*Item),
		Releases: NewReleaseModel(),
	}
}

// Planner returns the underlying planner (for reports; do not book on it).
func (s *Scheduler) Planner() *Planner { return s.p }

// SetPolicy sets the admission policy of resource.
func (s *Scheduler) SetPolicy(resource string, pol ResourcePolicy) error {
	if _, err := s.p.lookup("resource", resource); err != nil {
		return err
	}
	switch pol.Policy {
	case PolicyReject, PolicyMoveVariable:
	case PolicyRelaxed:
		if !(pol.MinSuccess > 0 && pol.MinSuccess <= 1) {
			return &FieldError{Field: "min_success", Reason: "must be in (0, 1]"}
		}
	default:
		return &FieldError{Field: "policy", Reason: fmt.Sprintf("unknown policy %d", pol.Policy)}
	}
	if pol.MaxPushes < 0 {
		return &FieldError{Field: "max_pushes", Reason: "must be >= 0"}
	}
	s.policies[resource] = pol
	return nil
}

// Policy returns the policy of resource (PolicyReject unless set).
func (s *Scheduler) Policy(resource string) ResourcePolicy { return s.policies[resource] }

// Get returns a copy of the live item id.
func (s *Scheduler) Get(id string) (Item, bool) {
	it, ok := s.items[id]
	if !ok {
		return Item{}, false
	}
	return *it, true
}

// Items returns copies of the live items on resource in submission order.
func (s *Scheduler) Items(resource string) []Item {
	out := make([]Item, 0, len(s.byRes[resource]))
	for _, it := range s.byRes[resource] {
		out = append(out, *it)
	}
	return out
}

// NextStart returns the earliest start of an item that has not started,
// if any: the next instant the caller must Advance to.
func (s *Scheduler) NextStart() (int64, bool) {
	best, ok := int64(MaxTime), false
	for _, its := range s.byRes {
		for _, it := range its {
			if !it.Running && it.Start < best {
				best, ok = it.Start, true
			}
		}
	}
	return best, ok
}

// checkItem validates the common fields of a new item.
func (s *Scheduler) checkItem(id string, part Part, duration int64) (*resource, error) {
	if err := s.p.checkNewID(id); err != nil {
		return nil, err
	}
	if _, ok := s.items[id]; ok {
		return nil, fmt.Errorf("item %q: %w", id, ErrDuplicateID)
	}
	rp, err := s.p.checkParts([]Part{part})
	if err != nil {
		return nil, err
	}
	if duration <= 0 {
		return nil, &FieldError{Field: "duration", Reason: "must be > 0"}
	}
	return rp[0].res, nil
}

// Submit plans a variable job of owner: part for duration, at the earliest
// start >= notBefore where it fits. It returns the planned start.
func (s *Scheduler) Submit(id, owner string, part Part, duration, notBefore int64) (int64, error) {
	r, err := s.checkItem(id, part, duration)
	if err != nil {
		return 0, err
	}
	if notBefore < s.p.origin {
		return 0, &FieldError{Field: "not_before", Reason: fmt.Sprintf("must be >= origin %d", s.p.origin)}
	}
	if duration > MaxTime-notBefore {
		return 0, &FieldError{Field: "duration", Reason: "not_before + duration overflows"}
	}
	it := &Item{ID: id, Owner: owner, Kind: KindVariable, Resource: r.name, Amount: part.Amount, NotBefore: notBefore, End: duration}
	if _, err := s.plan(it, notBefore); err != nil {
		return 0, fmt.Errorf("submit %q: %w", id, err)
	}
	s.add(it)
	return it.Start, nil
}

// plan books variable job it (whose End-Start or, for a new job, End holds
// the duration) at its earliest start >= from.
func (s *Scheduler) plan(it *Item, from int64) (int64, error) {
	dur := it.End - it.Start
	req := Request{Parts: []Part{{Resource: it.Resource, Amount: it.Amount}}, Duration: dur, NotBefore: max(from, s.p.origin), Deadline: MaxTime}
	d, err := s.p.Reserve(it.ID, req)
	if err != nil {
		return 0, err
	}
	it.Start, it.End = d.Start, d.Start+dur
	return d.Start, nil
}

func (s *Scheduler) add(it *Item) {
	s.items[it.ID] = it
	s.byRes[it.Resource] = append(s.byRes[it.Resource], it)
}

func (s *Scheduler) remove(it *Item) {
	delete(s.items, it.ID)
	its := s.byRes[it.Resource]
	if i := slices.Index(its, it); i >= 0 {
		s.byRes[it.Resource] = slices.Delete(its, i, i+1)
	}
}

// Reserve admits a reservation of owner: part over [start, start+duration)
// under the resource's policy. A refusal returns an error wrapping
// ErrNoCapacity.
func (s *Scheduler) Reserve(id, owner string, part Part, start, duration int64) (Admission, error) {
	r, err := s.checkItem(id, part, duration)
	if err != nil {
		return Admission{}, err
	}
	if err := s.checkWindow(start, duration); err != nil {
		return Admission{}, err
	}
	it := &Item{ID: id, Owner: owner, Kind: KindReservation, Resource: r.name, Amount: part.Amount, Start: start, End: start + duration, NotBefore: start}
	s.moves = nil
	a, err := s.admit(it, s.policies[r.name])
	if err != nil {
		return Admission{}, fmt.Errorf("reserve %q: %w", id, err)
	}
	return a, nil
}

func (s *Scheduler) checkWindow(start, duration int64) error {
	if start < s.p.origin {
		return &FieldError{Field: "start", Reason: fmt.Sprintf("must be >= origin %d", s.p.origin)}
	}
	if duration > MaxTime-start {
		return &FieldError{Field: "duration", Reason: "start + duration overflows"}
	}
	return nil
}

// admit places reservation it under pol and adds it.
func (s *Scheduler) admit(it *Item, pol ResourcePolicy) (Admission, error) {
	if s.rigidFits(it) {
		if err := s.book(it, it.Amount); err != nil {
			return Admission{}, err
		}
		s.add(it)
		return Admission{Probability: 1}, nil
	}
	switch pol.Policy {
	case PolicyMoveVariable:
		moved, err := s.moveVariable(it, pol)
		if err != nil {
			return Admission{}, err
		}
		s.add(it)
		return Admission{Probability: 1, Moved: moved}, nil
	case PolicyRelaxed:
		pr := s.Probability(it.Owner, it.Resource, it.Amount, it.Start, it.End)
		if pr <= 0 || pr < pol.MinSuccess {
			return Admission{}, fmt.Errorf("probability of no violation %.3f below %.3f: %w", pr, pol.MinSuccess, ErrNoCapacity)
		}
		s.bookRelaxed(it)
		s.add(it)
		return Admission{Relaxed: true, Probability: pr}, nil
	}
	return Admission{}, fmt.Errorf("resource %q over [%d,%d): %w", it.Resource, it.Start, it.End, ErrNoCapacity)
}

// book books amount of it in the planner over its window.
func (s *Scheduler) book(it *Item, amount int64) error {
	return s.p.Book(Booking{ID: it.ID, Parts: []Part{{Resource: it.Resource, Amount: amount}}, Start: it.Start, End: it.End})
}

// bookRelaxed books what fits of a relaxed admission and records the rest
// as overbooked.
func (s *Scheduler) bookRelaxed(it *Item) {
	f := min(it.Amount, max(s.headroom(it), 0))
	if f > 0 && s.book(it, f) != nil {
		f = 0
	}
	it.Overbooked = it.Amount - f
}

// overbooked sums the overbooked amounts of live items on resource that
// intersect [start, end) (an upper bound of the overbooked load there).
func (s *Scheduler) overbooked(resource string, start, end int64) int64 {
	n := int64(0)
	for _, o := range s.byRes[resource] {
		if o.Overbooked > 0 && o.Start < end && start < o.End {
			n += o.Overbooked
		}
	}
	return n
}

// rigidFits reports whether it fits the plan without overlapping anything,
// overbooked load included.
func (s *Scheduler) rigidFits(it *Item) bool { return s.headroom(it) >= it.Amount }

// headroom returns the capacity free over its window (from the origin on)
// less the overbooked load there; negative when overbooked beyond free.
func (s *Scheduler) headroom(it *Item) int64 {
	r := s.p.resources[it.Resource]
	return r.tl.MinFree(max(it.Start, s.p.origin), it.End) - s.overbooked(it.Resource, it.Start, it.End)
}

// moveVariable implements PolicyMoveVariable: release the movable variable
// jobs that overlap it, book it, and re-plan them in submission order from
// their old start on (never earlier than before). Movable: planned, not
// started, not pinned by the starvation guard. If it does not fit even
// then, everything is put back exactly and ErrNoCapacity returned.
func (s *Scheduler) moveVariable(it *Item, pol ResourcePolicy) ([]Move, error) {
	limit := pol.MaxPushes
	if limit == 0 {
		limit = DefaultMaxPushes
	}
	var movable []*Item
	for _, o := range s.byRes[it.Resource] {
		if o.Kind == KindVariable && !o.Running && o.Pushes < limit && o.Start < it.End && it.Start < o.End {
			movable = append(movable, o)
		}
	}
	refused := func() error {
		return fmt.Errorf("resource %q over [%d,%d): %w", it.Resource, it.Start, it.End, ErrNoCapacity)
	}
	if len(movable) == 0 {
		return nil, refused()
	}
	for _, o := range movable {
		if err := s.p.Remove(o.ID); err != nil {
			return nil, fmt.Errorf("move variable jobs: %w", err)
		}
	}
	restore := func() {
		for _, o := range movable {
			_ = s.book(o, o.Amount)
		}
	}
	if !s.rigidFits(it) {
		restore()
		return nil, refused()
	}
	if err := s.book(it, it.Amount); err != nil {
		restore()
		return nil, err
	}
	var moves []Move
	for _, o := range movable {
		from := o.Start
		if _, err := s.plan(o, from); err != nil {
			// Cannot happen: amount <= capacity and no deadline. Undo.
			return nil, fmt.Errorf("re-plan %q: %w", o.ID, err)
		}
		if o.Start != from {
			o.Pushes++
			moves = append(moves, Move{ID: o.ID, From: from, To: o.Start})
			s.moves = append(s.moves, Move{ID: o.ID, From: from, To: o.Start})
		}
	}
	return moves, nil
}

// Probability estimates the probability that a reservation of owner for
// amount over [start, end) on resource would start and run without
// violation given everything already admitted there (TDRRP, Algorithms 1
// and 2, generalised to include the occupancy that does not belong to the
// overlap sets):
//
//   - Start-overlap set: live items running across start (begun before
//     it). If the free capacity at start, with every item that covers
//     start counted as busy, is short by need > 0, choose J from that set
//     greedily by descending probability of releasing by start (ties by
//     ID) until the amounts of J cover need; Pr{E^s} is the product of
//     those probabilities (0 if the whole set does not cover need).
//   - End-overlap: with J released at start and everything else held to
//     its requested end, find the first instant t* in (start, end) where
//     the load would exceed the capacity; Pr{E^e} = Pr{the new
//     reservation ends by t*} under the owner's release distribution
//     (1 if there is no such instant).
//
// The result is Pr{E^s}·Pr{E^e}; 1 means it fits rigidly. Unknown
// resources and empty windows give 0.
func (s *Scheduler) Probability(owner, resource string, amount, start, end int64) float64 {
	r, ok := s.p.resources[resource]
	if !ok || end <= start || start < s.p.origin || amount <= 0 {
		return 0
	}
	capacity := r.capacity.MinFree(start, end)
	if amount > capacity {
		return 0
	}
	now := s.p.origin
	var covering int64
	var setS []*Item
	for _, o := range s.byRes[resource] {
		if o.Start <= start && start < o.End {
			covering += o.Amount
			if o.Start < start {
				setS = append(setS, o)
			}
		}
	}
	need := amount - (capacity - covering)
	prS := 1.0
	released := map[string]bool{}
	if need > 0 {
		type cand struct {
			it *Item
			v  float64
		}
		cands := make([]cand, 0, len(setS))
		for _, o := range setS {
			cands = append(cands, cand{o, s.Releases.EndsBy(o.Owner, o.Start, o.End, max(now, o.Start), start)})
		}
		slices.SortStableFunc(cands, func(a, b cand) int {
			if a.v != b.v {
				if a.v > b.v {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.it.ID, b.it.ID)
		})
		got := int64(0)
		for _, c := range cands {
			if got >= need {
				break
			}
			if c.v <= 0 {
				return 0
			}
			got += c.it.Amount
			prS *= c.v
			released[c.it.ID] = true
		}
		if got < need {
			return 0
		}
	}
	// Load profile over [start, end) of everything not in J.
	type ev struct{ t, d int64 }
	var evs []ev
	for _, o := range s.byRes[resource] {
		if released[o.ID] || o.End <= start || o.Start >= end {
			continue
		}
		evs = append(evs, ev{max(o.Start, start), o.Amount})
		if o.End < end {
			evs = append(evs, ev{o.End, -o.Amount})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d) // releases before arrivals at one instant
	})
	load := int64(0)
	tStar := int64(math.MaxInt64)
	for i := 0; i < len(evs); {
		t := evs[i].t
		for i < len(evs) && evs[i].t == t {
			load += evs[i].d
			i++
		}
		if load+amount > r.capacity.MinFree(t, t+1) {
			tStar = t
			break
		}
	}
	if tStar == math.MaxInt64 {
		return prS
	}
	if tStar <= start {
		return 0
	}
	return prS * s.Releases.EndsBy(owner, start, end, start, tStar)
}

// ErrNotRunning: Complete was called for an item that has not started.
var ErrNotRunning = errors.New("item has not started")

// Complete ends the running item id at instant at (start <= at < end,
// at >= origin): its capacity over [at, end) is given back, the pair
// (requested, actual) is recorded in Releases and returned, and the
// planned variable jobs of that resource are re-planned earlier where the
// freed capacity allows, in submission order.
func (s *Scheduler) Complete(id string, at int64) (Completion, error) {
	s.moves = nil
	it, ok := s.items[id]
	if !ok {
		return Completion{}, fmt.Errorf("complete %q: %w", id, ErrUnknownBooking)
	}
	if !it.Running {
		return Completion{}, fmt.Errorf("complete %q: %w", id, ErrNotRunning)
	}
	if at < s.p.origin {
		return Completion{}, &FieldError{Field: "at", Reason: fmt.Sprintf("must be >= origin %d", s.p.origin)}
	}
	if at < it.Start || at >= it.End {
		return Completion{}, &FieldError{Field: "at", Reason: fmt.Sprintf("must lie in [%d,%d)", it.Start, it.End)}
	}
	c := Completion{ID: id, Start: it.Start, Requested: it.End - it.Start, Actual: at - it.Start}
	if s.p.has(id) {
		if _, err := s.p.Complete(id, at); err != nil {
			return Completion{}, fmt.Errorf("complete %q: %w", id, err)
		}
	}
	s.Releases.Record(it.Owner, c.Requested, c.Actual)
	s.remove(it)
	s.claim(it.Resource)
	s.compress(it.Resource)
	return c, nil
}

// Cancel withdraws an item that has not started.
func (s *Scheduler) Cancel(id string) error {
	s.moves = nil
	it, ok := s.items[id]
	if !ok {
		return fmt.Errorf("cancel %q: %w", id, ErrUnknownBooking)
	}
	if it.Running {
		return fmt.Errorf("cancel %q: already running; use Complete", id)
	}
	if err := s.drop(it); err != nil {
		return fmt.Errorf("cancel %q: %w", id, err)
	}
	return nil
}

// claim gives capacity freed on resource to the overbooked parts of
// relaxed admissions first, in submission order, before variable jobs are
// re-planned into it: each grows its planned booking by what is now free
// over the rest of its window.
func (s *Scheduler) claim(resource string) {
	r := s.p.resources[resource]
	for _, o := range s.byRes[resource] {
		if o.Overbooked == 0 {
			continue
		}
		from := max(o.Start, s.p.origin)
		if from >= o.End {
			continue
		}
		add := min(r.tl.MinFree(from, o.End)-s.overbooked(resource, from, o.End)+o.Overbooked, o.Overbooked)
		if add <= 0 {
			continue
		}
		amount := o.Amount - o.Overbooked + add
		part := []Part{{Resource: resource, Amount: amount}}
		var err error
		if s.p.has(o.ID) {
			err = s.p.Modify(o.ID, part, from, o.End)
		} else {
			err = s.p.Book(Booking{ID: o.ID, Parts: part, Start: from, End: o.End})
		}
		if err == nil {
			o.Overbooked -= add
		}
	}
}

// compress re-plans every planned variable job of resource, in submission
// order, at its earliest start: each keeps its old slot as a fallback, so
// none moves later.
func (s *Scheduler) compress(resource string) {
	for _, o := range slices.Clone(s.byRes[resource]) {
		if o.Kind != KindVariable || o.Running || o.Start <= max(o.NotBefore, s.p.origin) {
			continue
		}
		old, dur := o.Start, o.End-o.Start
		if err := s.p.Remove(o.ID); err != nil {
			continue
		}
		// The old slot is free again, so the earliest start is <= old.
		if _, err := s.plan(o, o.NotBefore); err != nil {
			o.Start, o.End = old, old+dur
			_ = s.book(o, o.Amount)
		}
		if o.Start != old {
			s.moves = append(s.moves, Move{ID: o.ID, From: old, To: o.Start})
		}
	}
}

// Advance moves time to now. Items due to start at or before now start in
// order of (start, submission): each is checked against the capacity that
// is really in use (the running items); a reservation that does not fit is
// a violation, dropped from the plan and reported; a variable job that
// does not fit (only possible next to overbooked reservations) is
// re-planned after the next running item's end and reported too. Running
// items whose requested end is reached finish (recorded as using their
// whole duration). The caller must not skip past a start it wants
// processed at its own instant: use NextStart.
func (s *Scheduler) Advance(now int64) AdvanceReport {
	var rep AdvanceReport
	s.moves = nil
	if now < s.p.origin {
		return rep
	}
	for _, name := range s.p.names {
		s.advanceResource(name, now, &rep)
	}
	s.p.Advance(now)
	return rep
}

func (s *Scheduler) advanceResource(name string, now int64, rep *AdvanceReport) {
	r := s.p.resources[name]
	for {
		// Next event on this resource: a finish (end <= now of a running
		// item) or a start (start <= now of a waiting item), earliest
		// first, finishes before starts at one instant.
		var next *Item
		for _, o := range s.byRes[name] {
			t := o.Start
			if o.Running {
				t = o.End
			}
			if t > now {
				continue
			}
			if next == nil {
				next = o
				continue
			}
			nt := next.Start
			if next.Running {
				nt = next.End
			}
			if t < nt || (t == nt && o.Running && !next.Running) {
				next = o
			}
		}
		if next == nil {
			return
		}
		if next.Running {
			s.Releases.Record(next.Owner, next.End-next.Start, next.End-next.Start)
			rep.Finished = append(rep.Finished, next.ID)
			s.remove(next)
			continue
		}
		at := next.Start
		busy := int64(0)
		var nextEnd int64 = MaxTime
		for _, o := range s.byRes[name] {
			if o.Running && o.End > at {
				busy += o.Amount
				nextEnd = min(nextEnd, o.End)
			}
		}
		capAt := r.capacity.MinFree(max(at, r.capacity.Origin()), max(at, r.capacity.Origin())+1)
		if busy+next.Amount <= capAt {
			next.Running = true
			rep.Started = append(rep.Started, next.ID)
			continue
		}
		v := Violation{ID: next.ID, Resource: name, At: at, Short: busy + next.Amount - capAt, Kind: next.Kind}
		if s.p.has(next.ID) {
			_ = s.p.Remove(next.ID)
		}
		if next.Kind == KindReservation {
			s.remove(next)
			rep.Violations = append(rep.Violations, v)
			s.claim(name)
			continue
		}
		if next.Kind == KindVariable && nextEnd < MaxTime {
			if _, err := s.plan(next, max(nextEnd, next.NotBefore)); err == nil {
				s.moves = append(s.moves, Move{ID: next.ID, From: at, To: next.Start})
				v.Replanned = true
				rep.Violations = append(rep.Violations, v)
				continue
			}
		}
		s.remove(next)
		rep.Violations = append(rep.Violations, v)
	}
}
