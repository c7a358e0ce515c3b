package fsm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// Concrete units (envelope version 4). A resource created with unit names
// keeps, besides its count timeline in the planner, a planner.UnitSchedule
// that maps every booking holding capacity on it (held, committed,
// pending modification) to named units. The count planner and the unit
// schedule hold the same bookings under the same keys (the reservation ID,
// modKey(ID) for a pending modification, downKey for a down window), so
// every existing path that books or releases counts keeps working, and
// the unit schedule answers which units. Admission asks both: the count
// planner for the earliest start where every part fits in sum, the unit
// schedules for the earliest start at or after it that maps, until they
// agree (co-allocation over the parts). The stored row names the units on
// each part (Part.units), so readers, snapshots and the resource-manager
// bridge see them without asking the schedule.
//
// Restrictions, each refused with a field error: a resource with units
// has the REJECT admission policy, no capacity windows (a unit down window
// replaces them), and takes no variable jobs or co-reservations.

// versionUnits is the first envelope version with resources made of named
// units (CreateResource.units) and unit down windows (TYPE_UNIT_DOWN,
// TYPE_UNIT_UP). A replica of version 3 would create such a resource as a
// plain count and diverge, so such entries must carry version 4.
const versionUnits uint32 = 4

// MaxUnits bounds the number of units of one resource.
const MaxUnits = 1 << 16

// maxUnitNameLen bounds one unit's name.
const maxUnitNameLen = 64

// maxUnitSearch bounds the rounds of the co-allocation search between the
// count planner and the unit schedules of one admission. Every round moves
// the candidate start strictly later, so it is reached only on schedules
// with tens of thousands of distinct booking ends in the window; the
// request is then refused as unmappable (deterministically, on every
// replica).
const maxUnitSearch = 4096

// downPrefix starts the count planner's key of a unit down window; client
// IDs cannot contain '~', so it never collides with a reservation.
const downPrefix = "~down/"

func downKey(resource, id string) string { return downPrefix + resource + "/" + id }

// usesUnits reports whether c carries a feature of versionUnits.
func usesUnits(c *fsmv1.Command) bool {
	switch c.GetType() {
	case fsmv1.Command_TYPE_UNIT_DOWN, fsmv1.Command_TYPE_UNIT_UP:
		return true
	}
	if len(c.GetCreateResource().GetUnits()) > 0 || c.GetCreateResource().GetUnitPolicy() != 0 {
		return true
	}
	for _, p := range c.GetRequest().GetParts() {
		if len(p.GetUnits()) > 0 {
			return true
		}
	}
	for _, p := range c.GetModify().GetParts() {
		if len(p.GetUnits()) > 0 {
			return true
		}
	}
	return false
}

// validUnitName says what is wrong with a unit name ("" when nothing).
func validUnitName(n string) string {
	switch {
	case n == "":
		return "must not be empty"
	case len(n) > maxUnitNameLen:
		return fmt.Sprintf("longer than %d bytes", maxUnitNameLen)
	}
	for _, c := range n {
		if !idChar(c) {
			return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : -)", c)
		}
	}
	return ""
}

// checkUnits checks the unit list of a new resource (stateless).
func checkUnits(c *fsmv1.CreateResource) *FieldError {
	units := c.GetUnits()
	if len(units) > MaxUnits {
		return fieldErr("create_resource.units", fmt.Sprintf("%d units: at most %d", len(units), MaxUnits))
	}
	seen := make(map[string]int, len(units))
	for i, n := range units {
		if why := validUnitName(n); why != "" {
			return fieldErr(fmt.Sprintf("create_resource.units[%d]", i), why)
		}
		if j, dup := seen[n]; dup {
			return fieldErr(fmt.Sprintf("create_resource.units[%d]", i), fmt.Sprintf("duplicate unit %q (also units[%d])", n, j))
		}
		seen[n] = i
	}
	if cp := c.GetCapacity(); cp != 0 && cp != int64(len(units)) {
		return fieldErr("create_resource.capacity", fmt.Sprintf("must be 0 or the number of units (%d) on a resource with units", len(units)))
	}
	if p := c.GetPolicy().GetPolicy(); p != fsmv1.AdmissionPolicy_ADMISSION_POLICY_UNSPECIFIED && p != fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT {
		return fieldErr("create_resource.policy", "a resource with units supports only the REJECT admission policy")
	}
	if up := c.GetUnitPolicy(); up != fsmv1.UnitPolicy_UNIT_POLICY_UNSPECIFIED && up != fsmv1.UnitPolicy_UNIT_POLICY_REMAP && up != fsmv1.UnitPolicy_UNIT_POLICY_REFUSE {
		return fieldErr("create_resource.unit_policy", fmt.Sprintf("unknown unit policy %d", int32(up)))
	}
	return nil
}

// unitPolicy is the planner policy of a resource row.
func unitPolicy(r *fsmv1.Resource) planner.UnitPolicy {
	if r.GetUnitPolicy() == fsmv1.UnitPolicy_UNIT_POLICY_REFUSE {
		return planner.UnitRefuse
	}
	return planner.UnitRemap
}

// unitConfig is the configuration of every unit schedule: the same on
// every replica (best fit, the default budget, the FSM's timelines).
func (s *state) unitConfig() planner.UnitConfig {
	return planner.UnitConfig{Fit: planner.FitBest, Factory: s.cfg.Timelines}
}

// addUnits installs the unit schedule of a resource just created with
// units (r.Units set).
func (s *state) addUnits(r *fsmv1.Resource) error {
	us, err := planner.NewUnitSchedule(r.GetUnits(), s.plan.Origin(), s.unitConfig())
	if err != nil {
		return err
	}
	if s.units == nil {
		s.units = make(map[string]*planner.UnitSchedule)
	}
	s.units[r.GetName()] = us
	s.unitsAdvanced = false
	return nil
}

// advanceUnits moves every unit schedule's origin to the log time.
func (s *state) advanceUnits() {
	if s.unitsAdvanced && s.unitsNow == s.now {
		// Every schedule has been advanced to now (the members of a
		// group share one log time), and Advance to an origin already
		// reached does nothing; ranging over the map did cost.
		return
	}
	s.unitsAdvanced, s.unitsNow = true, s.now
	for _, us := range s.units {
		// Advance is per schedule and touches nothing shared: the
		// order of the map does not matter.
		us.Advance(s.now)
	}
}

// releaseUnits frees key on every unit schedule that holds it. The keys
// of one booking are on the schedules of its parts; a missing one is
// tolerated (a schedule forgets bookings that ended before its origin).
func (s *state) releaseUnits(key string) {
	// Forget, not Release: Release builds the booking and, on the
	// schedules that do not hold key (all but a few), an error.
	for _, us := range s.units {
		us.Forget(key)
	}
}

// releaseOwn is release(r.Id) for a row that is not scheduled: its
// booking is on the unit schedules of its parts' resources alone
// (reserveUnits books it there, a committed modification moves it to
// the new parts with the parts themselves, swapUnits), so only those are
// asked to forget it instead of every schedule: at 16 resources with
// units that was 16 lookups, mostly misses, per release. The tests'
// codec checks verify that no other schedule holds it.
func (s *state) releaseOwn(r *fsmv1.Reservation) {
	id := r.GetId()
	_ = s.plan.Remove(id)
	if s.units == nil {
		return
	}
	for _, p := range r.GetParts() {
		if us := s.units[p.GetResource()]; us != nil {
			us.Forget(id)
		}
	}
	if verifyCodec {
		for name, us := range s.units {
			if us.Forget(id) {
				panic(fmt.Sprintf("fsm: unit schedule of %q held %q, which none of its parts names", name, id))
			}
		}
	}
}

// hasUnitPart reports whether a part is on a resource with units.
func (s *state) hasUnitPart(parts []planner.Part) bool {
	for _, p := range parts {
		if s.units[p.Resource] != nil {
			return true
		}
	}
	return false
}

// unitsUnsupported refuses an operation that resources with units do not
// support yet (variable jobs, co-reservations, capacity windows, other
// admission policies).
func (s *state) unitsUnsupported(field, resource, what string) *fsmv1.Result {
	if s.units[resource] == nil {
		return nil
	}
	return invalid(field, fmt.Sprintf("resource %q has units: %s", resource, what))
}

// checkUnitAmounts refuses a part that asks for more units than its
// resource has.
func (s *state) checkUnitAmounts(prefix string, parts []planner.Part) *fsmv1.Result {
	for i, p := range parts {
		if us := s.units[p.Resource]; us != nil && p.Amount > int64(len(us.Units())) {
			return invalid(fmt.Sprintf("%sparts[%d].amount", prefix, i),
				fmt.Sprintf("%d units requested, resource %q has %d", p.Amount, p.Resource, len(us.Units())))
		}
	}
	return nil
}

// unitSearch is the outcome of findUnits.
type unitSearch struct {
	start int64
	fits  bool
	// countFits: some start in the window fits in sum.
	countFits bool
	// decs are, when fits, the unit schedules' decisions at start, one per
	// part of the request (zero for parts without units), so that booking
	// need not search again.
	decs []planner.UnitDecision
}

// findUnits returns the earliest start in pr's window at which every part
// fits in sum (count planner) and every part on a resource with units
// maps under its resource's unit policy, changing nothing.
func (s *state) findUnits(pr planner.Request) (unitSearch, error) {
	var out unitSearch
	nb := pr.NotBefore
	for range maxUnitSearch {
		q := pr
		q.NotBefore = nb
		d, err := s.plan.Find(q)
		if err != nil {
			return out, err
		}
		if !d.Fits {
			return out, nil
		}
		out.countFits = true
		next := d.Start
		out.decs = slices.Grow(out.decs[:0], len(pr.Parts))[:len(pr.Parts)]
		for i, p := range pr.Parts {
			us := s.units[p.Resource]
			if us == nil {
				out.decs[i] = planner.UnitDecision{}
				continue
			}
			ud, err := us.Find(planner.UnitRequest{Amount: p.Amount, Duration: pr.Duration, NotBefore: d.Start, Deadline: pr.Deadline, Movable: true},
				unitPolicy(s.resources[p.Resource]))
			if err != nil {
				return out, err
			}
			if !ud.Fits {
				return out, nil
			}
			out.decs[i] = ud
			next = max(next, ud.Start)
		}
		if next == d.Start {
			out.start, out.fits = next, true
			return out, nil
		}
		nb = next
	}
	return out, nil
}

// reserveUnits admits pr under id on a request with parts on resources
// with units: the earliest start where every part fits in sum and maps,
// booked in the count planner and on the unit schedules (moving bookings
// under REMAP, which it logs as events). A refusal says whether the
// request fitted in sum and gives the earliest start that maps.
func (s *state) reserveUnits(id string, pr planner.Request, fm fieldMap) (planner.Decision, *fsmv1.Result) {
	if bad := s.checkUnitAmounts("request.", pr.Parts); bad != nil {
		return planner.Decision{}, bad
	}
	found, err := s.findUnits(pr)
	if err != nil {
		return planner.Decision{}, s.fromPlanner(err, fm)
	}
	if !found.fits {
		return planner.Decision{}, s.unmappable(pr, found.countFits)
	}
	if bad := s.bookUnits(id, pr.Parts, found.start, found.start+pr.Duration, found.decs, fm); bad != nil {
		return planner.Decision{}, bad
	}
	return planner.Decision{Fits: true, Start: found.start}, nil
}

// unmappable is the rejection of a request that found no start that
// maps in its window, with the earliest later start that does.
func (s *state) unmappable(pr planner.Request, countFits bool) *fsmv1.Result {
	var later unitSearch
	if pr.Deadline < lastEnd(s.ver) {
		late := pr
		late.Deadline = lastEnd(s.ver)
		later, _ = s.findUnits(late)
	}
	if !countFits {
		return rejected(planner.Decision{LaterOK: later.fits, LaterStart: later.start},
			"no common start in the booking window has enough free capacity")
	}
	res := rejected(planner.Decision{LaterOK: later.fits, LaterStart: later.start},
		"enough units are free in sum, but no set of units is free for the whole window")
	res.GetRejected().Unmappable = true
	return res
}

// bookUnits books key over [start, end) in the count planner and on the
// unit schedules of its parts, at a start findUnits accepted with the
// decisions decs (so neither refuses), and logs the moves that made room.
func (s *state) bookUnits(key string, parts []planner.Part, start, end int64, decs []planner.UnitDecision, fm fieldMap) *fsmv1.Result {
	if err := s.plan.Book(planner.Booking{ID: key, Parts: parts, Start: start, End: end}); err != nil {
		return s.fromPlanner(err, fm)
	}
	s.applyRemaps(s.placeUnits(key, parts, start, end, decs))
	return nil
}

// placeUnits books key over [start, end) on the unit schedules of its
// parts, where decs (one per part) say it maps: a decision without moves
// is booked on its units as they are (no second search), one with moves
// is made again by Reserve, which applies them. It returns the moves.
func (s *state) placeUnits(key string, parts []planner.Part, start, end int64, decs []planner.UnitDecision) []planner.Remap {
	var remaps []planner.Remap
	for i, p := range parts {
		us := s.units[p.Resource]
		if us == nil {
			continue
		}
		if d := decs[i]; d.Fits && d.Start == start && len(d.Remaps) == 0 {
			if err := us.Book(planner.UnitBooking{ID: key, Start: start, End: end, Units: d.Units, Movable: true}); err != nil {
				panic(fmt.Sprintf("fsm: unit schedule of %q refused %q on the units it chose: %v", p.Resource, key, err))
			}
			continue
		}
		d, err := us.Reserve(key, planner.UnitRequest{Amount: p.Amount, Duration: end - start, NotBefore: start, Deadline: end, Movable: true},
			unitPolicy(s.resources[p.Resource]))
		if err != nil {
			// The search said this start maps and nothing changed since,
			// and the schedules are deterministic: a bug.
			panic(fmt.Sprintf("fsm: unit schedule of %q refused %q at a start it accepted: %v", p.Resource, key, err))
		}
		remaps = append(remaps, d.Remaps...)
	}
	return remaps
}

// withUnits returns parts (sorted by resource) with the units key holds
// on each part on a resource with units filled in; the other parts are
// returned as they are.
func (s *state) withUnits(key string, parts []*fsmv1.Part) []*fsmv1.Part {
	out := parts
	for i, p := range parts {
		us := s.units[p.GetResource()]
		if us == nil {
			continue
		}
		b, ok := us.Get(key)
		if !ok {
			continue
		}
		if slices.Equal(b.Units, p.GetUnits()) {
			continue
		}
		if &out[0] == &parts[0] {
			out = slices.Clone(parts)
		}
		out[i] = &fsmv1.Part{Resource: p.GetResource(), Amount: p.GetAmount(), Units: b.Units}
	}
	return out
}

// applyRemaps stores the new units of every booking the unit schedules
// moved and records one event per moved row (in ID order: the planner
// sorts the moves of one schedule, and they are merged here).
func (s *state) applyRemaps(remaps []planner.Remap) {
	if len(remaps) == 0 {
		return
	}
	ids := make([]string, 0, len(remaps))
	for _, m := range remaps {
		ids = append(ids, strings.TrimSuffix(m.ID, modSuffix))
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		r, ok := s.resv.get(id)
		if !ok {
			continue
		}
		n := s.change(r)
		n.Parts = s.withUnits(id, n.GetParts())
		if p := n.GetPending(); p != nil {
			np := proto.CloneOf(p)
			np.Parts = s.withUnits(modKey(id), p.GetParts())
			n.Pending = np
		}
		s.put(id, n)
		s.emit(fsmv1.Event_TYPE_UNITS_REMAPPED, n, nil)
	}
}

// swapUnits moves booking id onto the units of its pending modification
// (commit of a modification; the count planner has done the same).
func (s *state) swapUnits(id string, newParts []*fsmv1.Part, start, end int64) {
	for _, p := range newParts {
		if us := s.units[p.GetResource()]; us != nil {
			_, _ = us.Release(id)
		}
	}
	// The old booking may be on resources the new shape left.
	s.releaseUnits(id)
	for _, p := range newParts {
		us := s.units[p.GetResource()]
		if us == nil || end <= us.Origin() {
			continue
		}
		if err := us.Book(planner.UnitBooking{ID: id, Start: start, End: end, Units: p.GetUnits(), Movable: true}); err != nil {
			panic(fmt.Sprintf("fsm: unit schedule of %q refused the committed modification of %q: %v", p.GetResource(), id, err))
		}
	}
}

// shortenUnits ends booking id at at on the unit schedules (early
// completion; the count planner has done the same).
func (s *state) shortenUnits(id string, at int64) {
	for _, name := range slices.Sorted(maps.Keys(s.units)) {
		us := s.units[name]
		b, err := us.Release(id)
		if err != nil || at <= b.Start || at <= us.Origin() {
			continue
		}
		b.End = at
		if err := us.Book(b); err != nil {
			panic(fmt.Sprintf("fsm: unit schedule of %q refused the shortened %q: %v", name, id, err))
		}
	}
}

// modifyUnits books the pending new shape of id on the unit schedules,
// after the count planner accepted it at [start, end). When no set of
// units is free for that window, the count booking is undone and the
// modification refused with where the shape would map later.
func (s *state) modifyUnits(id string, pp []planner.Part, start, end int64) *fsmv1.Result {
	if !s.hasUnitPart(pp) {
		return nil
	}
	key := modKey(id)
	if bad := s.checkUnitAmounts("modify.", pp); bad != nil {
		s.release(key)
		return bad
	}
	// The count planner holds the shape already; the unit schedules are
	// asked at exactly that window.
	decs := make([]planner.UnitDecision, len(pp))
	for i, p := range pp {
		us := s.units[p.Resource]
		if us == nil {
			continue
		}
		d, err := us.Find(planner.UnitRequest{Amount: p.Amount, Duration: end - start, NotBefore: start, Deadline: end, Movable: true},
			unitPolicy(s.resources[p.Resource]))
		if err != nil {
			s.release(key)
			return s.fromPlanner(err, modifyFields)
		}
		if !d.Fits {
			s.release(key)
			pr := planner.Request{Parts: pp, Duration: end - start, NotBefore: start, Deadline: lastEnd(s.ver)}
			later, _ := s.findUnits(pr)
			res := rejected(planner.Decision{LaterOK: later.fits, LaterStart: later.start},
				"the new shape fits in sum, but no set of units is free for its whole window")
			res.GetRejected().Unmappable = true
			return res
		}
		decs[i] = d
	}
	s.applyRemaps(s.placeUnits(key, pp, start, end, decs))
	return nil
}

// unitResource looks up the resource a unit command names, and its unit
// schedule: NOT_FOUND when there is no such resource, INVALID on field
// when it has no units.
func (s *state) unitResource(name, field string) (*fsmv1.Resource, *planner.UnitSchedule, *fsmv1.Result) {
	old, found := s.resources[name]
	if !found {
		return nil, nil, notFound(fmt.Sprintf("resource %q not found", name))
	}
	us := s.units[old.GetName()]
	if us == nil {
		return nil, nil, invalid(field, fmt.Sprintf("resource %q has no units", old.GetName()))
	}
	return old, us, nil
}

// unitDown takes a unit out of service over a window (TYPE_UNIT_DOWN).
func (s *state) unitDown(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetUnitDown()
	if fe := checkUnitDown(c); fe != nil {
		return fe.result()
	}
	old, us, bad := s.unitResource(c.GetResource(), "unit_down.resource")
	if bad != nil {
		return bad
	}
	if !slices.Contains(old.GetUnits(), c.GetUnit()) {
		return invalid("unit_down.unit", fmt.Sprintf("resource %q has no unit %q", old.GetName(), c.GetUnit()))
	}
	id := c.GetId()
	if id == "" {
		id = fmt.Sprintf("down-%020d", s.index)
	}
	for _, d := range old.GetUnitDowns() {
		if d.GetId() == id && d.GetToMillis() > s.now {
			return conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, fmt.Sprintf("down window %q already exists on %q", id, old.GetName()))
		}
	}
	from := max(c.GetFromMillis(), s.now)
	if c.GetToMillis() <= from {
		return invalid("unit_down.to_millis", fmt.Sprintf("window ends before the log time %d", s.now))
	}
	remaps, err := us.AddDown(planner.UnitDown{ID: id, Unit: c.GetUnit(), From: from, To: c.GetToMillis()}, unitPolicy(old))
	if err != nil {
		var ce *planner.UnitConflictError
		if errors.As(err, &ce) && len(ce.Bookings) == 0 {
			return conflict(fsmv1.Conflict_KIND_WRONG_STATE, fmt.Sprintf("unit %q of %q is already down over part of [%d,%d) (window %s)",
				c.GetUnit(), old.GetName(), from, c.GetToMillis(), strings.Join(ce.Downs, ", ")))
		}
		if errors.As(err, &ce) {
			ids := make([]string, 0, len(ce.Bookings))
			for _, b := range ce.Bookings {
				ids = append(ids, strings.TrimSuffix(b, modSuffix))
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			res := conflict(fsmv1.Conflict_KIND_CAPACITY, fmt.Sprintf("unit %q of %q: %v", c.GetUnit(), old.GetName(), err))
			res.GetConflict().ViolatedIds = ids
			return res
		}
		return s.fromPlanner(err, fieldMap{"unit_down.", map[string]string{"from": "from_millis", "to": "to_millis", "id": "id"}})
	}
	if err := s.plan.Book(planner.Booking{ID: downKey(old.GetName(), id), Parts: []planner.Part{{Resource: old.GetName(), Amount: 1}}, Start: from, End: c.GetToMillis()}); err != nil {
		// The unit was free (or made free) over the window, so one unit
		// is free in sum at every instant of it.
		panic(fmt.Sprintf("fsm: count planner of %q refused down window %q the unit schedule accepted: %v", old.GetName(), id, err))
	}
	s.applyRemaps(remaps)
	n := proto.CloneOf(old)
	n.UpdatedVersion = s.index
	n.UnitDowns = s.liveDowns(n.GetUnitDowns(), "")
	n.UnitDowns = append(n.UnitDowns, &fsmv1.UnitDown{Unit: c.GetUnit(), FromMillis: from, ToMillis: c.GetToMillis(), Id: id})
	slices.SortFunc(n.UnitDowns, func(a, b *fsmv1.UnitDown) int { return strings.Compare(a.GetId(), b.GetId()) })
	s.resources[n.Name] = n
	s.emit(fsmv1.Event_TYPE_UNIT_DOWN, nil, n)
	return okResource(n)
}

// unitUp ends a unit's down window (TYPE_UNIT_UP).
func (s *state) unitUp(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetUnitUp()
	if fe := checkUnitUp(c, s.ver); fe != nil {
		return fe.result()
	}
	old, us, bad := s.unitResource(c.GetResource(), "unit_up.resource")
	if bad != nil {
		return bad
	}
	if err := us.RemoveDown(c.GetId()); err != nil {
		return notFound(fmt.Sprintf("no down window %q in effect on %q", c.GetId(), old.GetName()))
	}
	s.release(downKey(old.GetName(), c.GetId()))
	n := proto.CloneOf(old)
	n.UpdatedVersion = s.index
	n.UnitDowns = s.liveDowns(n.GetUnitDowns(), c.GetId())
	s.resources[n.Name] = n
	s.emit(fsmv1.Event_TYPE_UNIT_UP, nil, n)
	return okResource(n)
}

// liveDowns returns the windows of ds that have not ended by the log time,
// without the one named drop.
func (s *state) liveDowns(ds []*fsmv1.UnitDown, drop string) []*fsmv1.UnitDown {
	var out []*fsmv1.UnitDown
	for _, d := range ds {
		if d.GetToMillis() > s.now && d.GetId() != drop {
			out = append(out, d)
		}
	}
	return out
}

// checkUnitDown runs the stateless checks of a down window.
func checkUnitDown(c *fsmv1.UnitDown) *FieldError {
	if why := validResourceName(c.GetResource()); why != "" {
		return fieldErr("unit_down.resource", why)
	}
	if why := validUnitName(c.GetUnit()); why != "" {
		return fieldErr("unit_down.unit", why)
	}
	if id := c.GetId(); id != "" {
		if why := validID(id); why != "" {
			return fieldErr("unit_down.id", why)
		}
		if strings.HasPrefix(id, "down-") {
			return fieldErr("unit_down.id", `must not start with the reserved prefix "down-"`)
		}
	}
	switch {
	case c.GetFromMillis() < 0:
		return fieldErr("unit_down.from_millis", "must be >= 0")
	case c.GetToMillis() <= c.GetFromMillis():
		return fieldErr("unit_down.to_millis", "must be after from_millis")
	case c.GetToMillis() > MaxTimeMillis:
		return fieldErr("unit_down.to_millis", "after 9999-12-31T23:59:59.999Z")
	}
	return nil
}

// checkUnitUp runs the stateless checks of ending a down window.
func checkUnitUp(c *fsmv1.UnitUp, ver uint32) *FieldError {
	if fe := checkNameSet("unit_up.resource", c.GetResource(), ver); fe != nil {
		return fe
	}
	if c.GetId() == "" {
		return fieldErr("unit_up.id", "must not be empty")
	}
	return nil
}

// restoreUnits rebuilds the unit schedules of a restored state from the
// resource rows (units, down windows) and the bookings collected from the
// live rows. The down windows' count bookings are the restore's
// downBookings, which it loads into the planner beside the rows'.
func (s *state) restoreUnits(books map[string][]planner.UnitBooking) error {
	for _, name := range slices.Sorted(maps.Keys(s.resources)) {
		r := s.resources[name]
		if len(r.GetUnits()) == 0 {
			if len(books[name]) > 0 {
				return badf("reservations: units on resource %q, which has none", name)
			}
			continue
		}
		snap := planner.UnitSnapshot{Origin: s.now, Units: r.GetUnits(), Bookings: books[name]}
		slices.SortFunc(snap.Bookings, func(a, b planner.UnitBooking) int { return strings.Compare(a.ID, b.ID) })
		for _, d := range s.liveDowns(r.GetUnitDowns(), "") {
			snap.Downs = append(snap.Downs, planner.UnitDown{ID: d.GetId(), Unit: d.GetUnit(), From: d.GetFromMillis(), To: d.GetToMillis()})
		}
		us, err := planner.RestoreUnitSchedule(snap, s.unitConfig())
		if err != nil {
			return badf("resource %q: %v", name, err)
		}
		if s.units == nil {
			s.units = make(map[string]*planner.UnitSchedule)
		}
		s.units[name] = us
		s.unitsAdvanced = false
	}
	return nil
}

// collectUnits adds the unit bookings of a live row's parts (key: the ID
// or modKey(ID)) to books.
func collectUnits(books map[string][]planner.UnitBooking, key string, parts []scanPart, start, end, origin int64) {
	if end <= origin {
		return
	}
	for _, p := range parts {
		if len(p.units) == 0 {
			continue
		}
		books[p.resource] = append(books[p.resource], planner.UnitBooking{ID: key, Start: start, End: end, Units: p.units, Movable: true})
	}
}

// UnitBooking is one booking of a resource with units as the bridge to a
// resource manager reads it: a reservation (or the pending new shape of
// one, Pending set) holding Units over [Start, End).
type UnitBooking struct {
	ID      string
	Pending bool
	State   fsmv1.Reservation_State
	Start   int64
	End     int64
	Units   []string
}

// UnitBookings returns every live booking on resource with its units and
// window, sorted by ID (a pending modification after its reservation),
// and the unit down windows in effect. It reads the unit schedule and
// the rows it names, not the whole table. A resource without units (or
// unknown) gives ok = false.
func (f *FSM) UnitBookings(resource string) (books []UnitBooking, downs []*fsmv1.UnitDown, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.st
	us := s.units[resource]
	if us == nil {
		return nil, nil, false
	}
	snap := us.Snapshot()
	for _, b := range snap.Bookings {
		id, pending := strings.CutSuffix(b.ID, modSuffix)
		st := fsmv1.Reservation_STATE_UNKNOWN
		if r, ok := s.resv.get(id); ok {
			st = r.GetState()
		}
		books = append(books, UnitBooking{ID: id, Pending: pending, State: st, Start: b.Start, End: b.End, Units: b.Units})
	}
	for _, d := range snap.Downs {
		downs = append(downs, &fsmv1.UnitDown{Resource: resource, Unit: d.Unit, FromMillis: d.From, ToMillis: d.To, Id: d.ID})
	}
	return books, downs, true
}

// findMapped is planner.Find for a search that books nothing (a
// modification whose start the state machine picks, the later start of a
// window that has passed): the count planner's answer, and on resources
// with units the earliest start that also maps (a refusal's later start
// too).
func (s *state) findMapped(req planner.Request) (planner.Decision, error) {
	if s.units == nil || !s.hasUnitPart(req.Parts) {
		return s.plan.Find(req)
	}
	if bad := s.checkUnitAmounts("", req.Parts); bad != nil {
		// Admission refuses it with the field; the search by count
		// finds nothing either.
		return s.plan.Find(req)
	}
	found, err := s.findUnits(req)
	if err != nil {
		return planner.Decision{}, err
	}
	if found.fits {
		return planner.Decision{Fits: true, Start: found.start}, nil
	}
	var later unitSearch
	if req.Deadline < lastEnd(s.ver) {
		late := req
		late.Deadline = lastEnd(s.ver)
		later, _ = s.findUnits(late)
	}
	return planner.Decision{LaterOK: later.fits, LaterStart: later.start}, nil
}

// offersMapped is planner.Offers for a request with parts on resources
// with units: up to k ascending starts in the window at which every part
// fits in sum and maps. The first is the earliest start that maps (what
// Find answers); the others are the count planner's later candidates
// (its distinct choices) at which the request also maps, looked for among
// the first 8k of them.
func (s *state) offersMapped(req planner.Request, k int) ([]int64, error) {
	if s.units == nil || !s.hasUnitPart(req.Parts) || k <= 0 {
		return s.plan.Offers(req, k)
	}
	if bad := s.checkUnitAmounts("", req.Parts); bad != nil {
		return s.plan.Offers(req, k)
	}
	first, err := s.findUnits(req)
	if err != nil || !first.fits {
		return nil, err
	}
	out := []int64{first.start}
	cands, err := s.plan.Offers(req, min(8*k, 1<<12))
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		if len(out) == k {
			break
		}
		if c <= first.start {
			continue
		}
		q := req
		q.NotBefore, q.Deadline = c, c+req.Duration
		if found, err := s.findUnits(q); err == nil && found.fits {
			out = append(out, c)
		}
	}
	return out, nil
}
