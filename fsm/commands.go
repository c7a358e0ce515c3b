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

// Limits on client-supplied strings, checked deterministically in Apply.
const (
	maxIDLen         = 128
	maxOwnerLen      = 256
	maxUnitLen       = 64
	maxLabels        = 64
	maxLabelKeyLen   = 128
	maxLabelValueLen = 1024
	maxParts         = 64
	// AutoIDPrefix starts every ID the state machine assigns; client IDs
	// must not start with it.
	AutoIDPrefix = "r-"
)

// AutoID returns the ID the state machine assigns to a reservation created
// by log entry index without a client-chosen ID. IDs sort by index.
func AutoID(index uint64) string { return fmt.Sprintf("%s%020d", AutoIDPrefix, index) }

// ---- results ----

func okResult(r *fsmv1.Reservation) *fsmv1.Result {
	return &fsmv1.Result{Status: fsmv1.Result_STATUS_OK, Reservation: r}
}

func okResource(r *fsmv1.Resource) *fsmv1.Result {
	return &fsmv1.Result{Status: fsmv1.Result_STATUS_OK, Resource: r}
}

func invalid(field, reason string) *fsmv1.Result {
	return &fsmv1.Result{
		Status:  fsmv1.Result_STATUS_INVALID,
		Message: fmt.Sprintf("invalid %s: %s", field, reason),
		Detail:  &fsmv1.Result_Invalid{Invalid: &fsmv1.Invalid{Field: field, Reason: reason}},
	}
}

func notFound(msg string) *fsmv1.Result {
	return &fsmv1.Result{Status: fsmv1.Result_STATUS_NOT_FOUND, Message: msg}
}

func conflict(kind fsmv1.Conflict_Kind, msg string) *fsmv1.Result {
	return &fsmv1.Result{
		Status:  fsmv1.Result_STATUS_CONFLICT,
		Message: msg,
		Detail:  &fsmv1.Result_Conflict{Conflict: &fsmv1.Conflict{Kind: kind}},
	}
}

func wrongState(r *fsmv1.Reservation, op string) *fsmv1.Result {
	msg := fmt.Sprintf("cannot %s reservation %q in state %s", op, r.GetId(), r.GetState())
	if r.GetPending() != nil {
		msg += " with a pending modification"
	}
	res := conflict(fsmv1.Conflict_KIND_WRONG_STATE, msg)
	res.GetConflict().State = r.GetState()
	res.Reservation = r
	return res
}

func rejected(d planner.Decision, msg string) *fsmv1.Result {
	return &fsmv1.Result{
		Status:  fsmv1.Result_STATUS_REJECTED,
		Message: msg,
		Detail: &fsmv1.Result_Rejected{Rejected: &fsmv1.Rejected{
			LaterOk:          d.LaterOK,
			LaterStartMillis: d.LaterStart,
		}},
	}
}

// fieldMap renames planner argument names to command field paths.
type fieldMap struct {
	prefix string
	rename map[string]string
}

func (m fieldMap) path(f string) string {
	if r, ok := m.rename[f]; ok {
		return m.prefix + r
	}
	return m.prefix + f
}

var (
	requestFields = fieldMap{"request.", map[string]string{
		"duration": "duration_millis", "not_before": "not_before_millis", "deadline": "deadline_millis",
	}}
	exactFields = fieldMap{"request.", map[string]string{
		"duration": "duration_millis", "not_before": "start_millis", "deadline": "duration_millis",
	}}
	modifyFields = fieldMap{"modify.", map[string]string{
		"start": "start_millis", "end": "end_millis",
	}}
	createFields = fieldMap{"create_resource.", nil}
	updateFields = fieldMap{"update_resource.", map[string]string{
		"resource": "name", "from": "from_millis", "to": "to_millis",
	}}
	deleteFields = fieldMap{"delete_resource.", nil}
)

// fromPlanner turns a planner error into a result. Every planner error
// wraps one sentinel, so the mapping is total.
func (s *state) fromPlanner(err error, fm fieldMap) *fsmv1.Result {
	var fe *planner.FieldError
	var ce *planner.CapacityConflictError
	switch {
	case errors.As(err, &fe):
		return invalid(fm.path(fe.Field), fe.Reason)
	case errors.As(err, &ce):
		ids := make([]string, 0, len(ce.Violated))
		for _, v := range ce.Violated {
			ids = append(ids, strings.TrimSuffix(v, modSuffix))
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		res := conflict(fsmv1.Conflict_KIND_CAPACITY, fmt.Sprintf("capacity change on %q would overbook %d reservation(s)", ce.Resource, len(ids)))
		res.GetConflict().ViolatedIds = ids
		return res
	case errors.Is(err, planner.ErrUnknownResource), errors.Is(err, planner.ErrUnknownBooking):
		return notFound(err.Error())
	case errors.Is(err, planner.ErrNoCapacity):
		return rejected(planner.Decision{}, err.Error())
	case errors.Is(err, planner.ErrDuplicateID):
		return conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, err.Error())
	case errors.Is(err, planner.ErrResourceExists):
		return conflict(fsmv1.Conflict_KIND_RESOURCE_EXISTS, err.Error())
	case errors.Is(err, planner.ErrInUse):
		return conflict(fsmv1.Conflict_KIND_IN_USE, err.Error())
	}
	return conflict(fsmv1.Conflict_KIND_UNKNOWN, err.Error())
}

// ---- validation ----

func validID(id string) string {
	switch {
	case id == "":
		return "must not be empty"
	case len(id) > maxIDLen:
		return fmt.Sprintf("longer than %d bytes", maxIDLen)
	case strings.HasPrefix(id, AutoIDPrefix):
		return fmt.Sprintf("must not start with the reserved prefix %q", AutoIDPrefix)
	}
	for _, c := range id {
		if !idChar(c) {
			return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : -)", c)
		}
	}
	return ""
}

// idChar reports whether c may appear in a reservation ID; resource names
// allow '/' as well.
func idChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
}

func validResourceName(n string) string {
	switch {
	case n == "":
		return "must not be empty"
	case len(n) > maxIDLen:
		return fmt.Sprintf("longer than %d bytes", maxIDLen)
	}
	for _, c := range n {
		if !idChar(c) && c != '/' {
			return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : / -)", c)
		}
	}
	return ""
}

// checkLabels validates labels in key order, so the first problem reported
// is the same on every replica.
func checkLabels(field string, labels map[string]string) *fsmv1.Result {
	if len(labels) > maxLabels {
		return invalid(field, fmt.Sprintf("more than %d labels", maxLabels))
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case k == "":
			return invalid(field, "empty key")
		case len(k) > maxLabelKeyLen:
			return invalid(fmt.Sprintf("%s[%q]", field, k), fmt.Sprintf("key longer than %d bytes", maxLabelKeyLen))
		case len(labels[k]) > maxLabelValueLen:
			return invalid(fmt.Sprintf("%s[%q]", field, k), fmt.Sprintf("value longer than %d bytes", maxLabelValueLen))
		}
	}
	return nil
}

// checkTTL resolves a requested TTL (0 = default).
func (s *state) checkTTL(field string, ttl int64) (int64, *fsmv1.Result) {
	switch {
	case ttl == 0:
		return s.cfg.DefaultHoldTTL, nil
	case ttl < 0:
		return 0, invalid(field, "must be >= 0")
	case ttl > s.cfg.MaxHoldTTL:
		return 0, invalid(field, fmt.Sprintf("must be <= %d", s.cfg.MaxHoldTTL))
	}
	return ttl, nil
}

func checkParts(field string, parts []*fsmv1.Part) *fsmv1.Result {
	if len(parts) > maxParts {
		return invalid(field, fmt.Sprintf("more than %d parts", maxParts))
	}
	return nil
}

// owned looks up the reservation a command targets and checks the owner.
func (s *state) owned(cmd *fsmv1.Command, field, id string) (*fsmv1.Reservation, *fsmv1.Result) {
	if id == "" {
		return nil, invalid(field, "must not be empty")
	}
	r, found := s.resv.get(id)
	if !found {
		return nil, notFound(fmt.Sprintf("reservation %q not found", id))
	}
	if !cmd.GetPrivileged() && cmd.GetOwner() != r.GetOwner() {
		return nil, &fsmv1.Result{
			Status:  fsmv1.Result_STATUS_PERMISSION_DENIED,
			Message: fmt.Sprintf("reservation %q belongs to another owner", id),
		}
	}
	return r, nil
}

// ---- resources ----

func (s *state) createResource(c *fsmv1.CreateResource) *fsmv1.Result {
	if why := validResourceName(c.GetName()); why != "" {
		return invalid("create_resource.name", why)
	}
	if c.GetCapacity() <= 0 {
		return invalid("create_resource.capacity", "must be > 0")
	}
	if len(c.GetUnit()) > maxUnitLen {
		return invalid("create_resource.unit", fmt.Sprintf("longer than %d bytes", maxUnitLen))
	}
	if r := checkLabels("create_resource.labels", c.GetLabels()); r != nil {
		return r
	}
	if r := checkPolicySpec("create_resource.policy", c.GetPolicy()); r != nil {
		return r
	}
	if _, exists := s.resources[c.GetName()]; exists {
		return conflict(fsmv1.Conflict_KIND_RESOURCE_EXISTS, fmt.Sprintf("resource %q already exists", c.GetName()))
	}
	if err := s.plan.AddResource(c.GetName(), c.GetCapacity()); err != nil {
		return s.fromPlanner(err, createFields)
	}
	r := &fsmv1.Resource{
		Name:           c.GetName(),
		Capacity:       c.GetCapacity(),
		Unit:           c.GetUnit(),
		Labels:         maps.Clone(c.GetLabels()),
		CreatedVersion: s.index,
		UpdatedVersion: s.index,
	}
	var err error
	if r.Policy, err = s.installPolicy(r.Name, c.GetPolicy()); err != nil {
		_ = s.plan.RemoveResource(r.Name)
		return s.fromPlanner(err, createFields)
	}
	s.resources[r.Name] = r
	s.emit(fsmv1.Event_TYPE_RESOURCE_CREATED, nil, r)
	return okResource(r)
}

func (s *state) updateResource(c *fsmv1.UpdateResource) *fsmv1.Result {
	old, found := s.resources[c.GetName()]
	if !found {
		if c.GetName() == "" {
			return invalid("update_resource.name", "must not be empty")
		}
		return notFound(fmt.Sprintf("resource %q not found", c.GetName()))
	}
	if c.GetCapacity() < 0 {
		return invalid("update_resource.capacity", "must be >= 0")
	}
	from, to := s.now, planner.MaxTime
	if c.FromMillis != nil {
		if c.GetFromMillis() < 0 {
			return invalid("update_resource.from_millis", "must be >= 0")
		}
		// The past cannot change: a window that began earlier applies
		// from the log time on.
		from = max(c.GetFromMillis(), s.now)
	}
	if c.ToMillis != nil {
		if c.FromMillis != nil && c.GetToMillis() <= c.GetFromMillis() {
			return invalid("update_resource.to_millis", "must be after from_millis")
		}
		if c.GetToMillis() <= from {
			return invalid("update_resource.to_millis", fmt.Sprintf("window ends before the log time %d", s.now))
		}
		to = c.GetToMillis()
	}
	if err := s.plan.SetCapacity(old.GetName(), from, to, c.GetCapacity()); err != nil {
		return s.fromPlanner(err, updateFields)
	}
	n := proto.CloneOf(old)
	n.UpdatedVersion = s.index
	if from == s.now && to == planner.MaxTime {
		// The whole future now has one capacity: earlier windows are moot.
		n.Capacity = c.GetCapacity()
		n.Windows = nil
	} else {
		n.Windows = slices.DeleteFunc(n.Windows, func(w *fsmv1.CapacityWindow) bool { return w.GetToMillis() <= s.now })
		n.Windows = append(n.Windows, &fsmv1.CapacityWindow{FromMillis: from, ToMillis: to, Capacity: c.GetCapacity()})
	}
	s.resources[n.Name] = n
	s.emit(fsmv1.Event_TYPE_RESOURCE_UPDATED, nil, n)
	s.replan([]*fsmv1.Part{{Resource: n.Name}})
	return okResource(n)
}

func (s *state) deleteResource(c *fsmv1.DeleteResource) *fsmv1.Result {
	old, found := s.resources[c.GetName()]
	if !found {
		if c.GetName() == "" {
			return invalid("delete_resource.name", "must not be empty")
		}
		return notFound(fmt.Sprintf("resource %q not found", c.GetName()))
	}
	if n := s.itemsOn(old.GetName()); n > 0 {
		return conflict(fsmv1.Conflict_KIND_IN_USE, fmt.Sprintf("resource %q carries %d scheduled reservation(s) or job(s)", old.GetName(), n))
	}
	if err := s.plan.RemoveResource(old.GetName()); err != nil {
		return s.fromPlanner(err, deleteFields)
	}
	delete(s.resources, old.GetName())
	s.emit(fsmv1.Event_TYPE_RESOURCE_DELETED, nil, old)
	return okResource(old)
}

// ---- reservations ----

// newID resolves the ID of a new row (empty: assigned from the log index)
// and checks it, and the owner, before anything is booked.
func (s *state) newID(cmd *fsmv1.Command, field, id string) (string, *fsmv1.Result) {
	if id == "" {
		id = AutoID(s.index)
	} else if why := validID(id); why != "" {
		return "", invalid(field, why)
	}
	if len(cmd.GetOwner()) > maxOwnerLen {
		return "", invalid("owner", fmt.Sprintf("longer than %d bytes", maxOwnerLen))
	}
	if s.resv.has(id) {
		return "", conflict(fsmv1.Conflict_KIND_DUPLICATE_ID, fmt.Sprintf("reservation %q already exists", id))
	}
	return id, nil
}

// newRow returns a new HELD row created by the current entry.
func (s *state) newRow(cmd *fsmv1.Command, id string, labels map[string]string, parts []planner.Part, start, end int64) *fsmv1.Reservation {
	return &fsmv1.Reservation{
		Id:             id,
		Owner:          cmd.GetOwner(),
		Labels:         maps.Clone(labels),
		Parts:          sortedParts(parts),
		StartMillis:    start,
		EndMillis:      end,
		State:          fsmv1.Reservation_STATE_HELD,
		CreatedVersion: s.index,
		UpdatedVersion: s.index,
		CreatedMillis:  s.now,
		UpdatedMillis:  s.now,
	}
}

// hold admits a request and stores it as HELD, or as COMMITTED when commit
// is set (one-phase reserve).
func (s *state) hold(cmd *fsmv1.Command, commit bool) *fsmv1.Result {
	req := cmd.GetRequest()
	id, bad := s.newID(cmd, "request.id", req.GetId())
	if bad != nil {
		return bad
	}
	if r := checkParts("request.parts", req.GetParts()); r != nil {
		return r
	}
	var ttl int64
	if !commit {
		var bad *fsmv1.Result
		if ttl, bad = s.checkTTL("request.hold_ttl_millis", req.GetHoldTtlMillis()); bad != nil {
			return bad
		}
	}
	if r := checkLabels("request.labels", req.GetLabels()); r != nil {
		return r
	}

	dur := req.GetDurationMillis()
	pr := planner.Request{Parts: plannerParts(req.GetParts()), Duration: dur}
	fields := requestFields
	if req.StartMillis != nil {
		fields = exactFields
		start := req.GetStartMillis()
		if start < s.now {
			return invalid("request.start_millis", fmt.Sprintf("must not be before the log time %d", s.now))
		}
		pr.NotBefore, pr.Deadline = start, planner.MaxTime
		if dur > 0 && dur <= planner.MaxTime-start {
			pr.Deadline = start + dur
		}
	} else {
		nb, dl := req.GetNotBeforeMillis(), req.GetDeadlineMillis()
		switch {
		case nb < 0:
			return invalid("request.not_before_millis", "must be >= 0")
		case dl < 0:
			return invalid("request.deadline_millis", "must be >= 0 (0 means no deadline)")
		case dl == 0:
			dl = planner.MaxTime
		case dur > 0 && dl-nb < dur:
			return invalid("request.deadline_millis", "booking window shorter than duration")
		}
		pr.NotBefore, pr.Deadline = max(nb, s.now), dl
		if dur > 0 && dl != planner.MaxTime && dl-pr.NotBefore < dur {
			// The window was fine when sent but has passed in log time:
			// a rejection, with the earliest start without a deadline.
			late := pr
			late.Deadline = planner.MaxTime
			d, err := s.plan.Find(late)
			if err != nil {
				return s.fromPlanner(err, fields)
			}
			return rejected(planner.Decision{LaterOK: d.Fits, LaterStart: d.Start},
				fmt.Sprintf("booking window ends before log time %d leaves room for the duration", s.now))
		}
	}

	viaScheduler, bad := s.routeScheduled(pr.Parts)
	if bad != nil {
		return bad
	}
	var d planner.Decision
	var adm planner.Admission
	if viaScheduler {
		if d.Start, adm, bad = s.admitScheduled(cmd.GetOwner(), id, req.StartMillis != nil, pr); bad != nil {
			return bad
		}
	} else {
		var err error
		if d, err = s.plan.Reserve(id, pr); err != nil {
			if errors.Is(err, planner.ErrNoCapacity) {
				return rejected(d, "no common start in the booking window has enough free capacity")
			}
			return s.fromPlanner(err, fields)
		}
	}
	r := s.newRow(cmd, id, req.GetLabels(), pr.Parts, d.Start, d.Start+dur)
	if viaScheduler {
		s.markAdmission(r, adm)
	}
	if commit {
		r.State = fsmv1.Reservation_STATE_COMMITTED
		s.put(id, r)
		s.emit(fsmv1.Event_TYPE_COMMITTED, r, nil)
	} else {
		// A hold cannot outlive its interval: there is nothing left to
		// commit once it has ended.
		r.HoldExpiresMillis = min(addSat(s.now, ttl), r.EndMillis)
		s.put(id, r)
		s.emit(fsmv1.Event_TYPE_HELD, r, nil)
	}
	if viaScheduler {
		s.syncMoves()
	}
	return okResult(r)
}

func (s *state) commit(cmd *fsmv1.Command) *fsmv1.Result {
	r, bad := s.owned(cmd, "target.id", cmd.GetTarget().GetId())
	if bad != nil {
		return bad
	}
	switch {
	case r.GetState() == fsmv1.Reservation_STATE_HELD:
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_COMMITTED
		n.HoldExpiresMillis = 0
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_COMMITTED, n, nil)
		return okResult(s.afterCommit(n))
	case r.GetState() == fsmv1.Reservation_STATE_COMMITTED && r.GetPending() != nil:
		// Swap: free the held new shape, then move the booking onto it.
		// The capacity just freed is exactly what the move needs, so it
		// succeeds; should the planner refuse anyway, the held shape is
		// booked back and nothing has changed.
		p := r.GetPending()
		s.release(modKey(r.Id))
		parts := plannerParts(p.GetParts())
		if err := s.plan.Modify(r.Id, parts, p.GetStartMillis(), p.GetEndMillis()); err != nil {
			_ = s.plan.Book(planner.Booking{ID: modKey(r.Id), Parts: parts, Start: p.GetStartMillis(), End: p.GetEndMillis()})
			return s.fromPlanner(err, modifyFields)
		}
		n := s.change(r)
		n.Parts, n.StartMillis, n.EndMillis = p.GetParts(), p.GetStartMillis(), p.GetEndMillis()
		n.Pending = nil
		// The new shape is a new request: an announced early end of the
		// old one no longer applies.
		n.RequestedDurationMillis, n.ActualEndMillis = 0, 0
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_MODIFY_COMMITTED, n, nil)
		return okResult(n)
	}
	return wrongState(r, "commit")
}

func (s *state) abort(cmd *fsmv1.Command) *fsmv1.Result {
	r, bad := s.owned(cmd, "target.id", cmd.GetTarget().GetId())
	if bad != nil {
		return bad
	}
	switch {
	case r.GetState() == fsmv1.Reservation_STATE_HELD:
		s.releaseRow(r)
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_ABORTED
		n.HoldExpiresMillis = 0
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_ABORTED, n, nil)
		return okResult(n)
	case r.GetPending() != nil:
		s.release(modKey(r.Id))
		n := s.change(r)
		n.Pending = nil
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_MODIFY_ABORTED, n, nil)
		return okResult(n)
	}
	return wrongState(r, "abort")
}

func (s *state) cancel(cmd *fsmv1.Command) *fsmv1.Result {
	r, bad := s.owned(cmd, "target.id", cmd.GetTarget().GetId())
	if bad != nil {
		return bad
	}
	switch r.GetState() {
	case fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_STATE_ACTIVE, fsmv1.Reservation_STATE_DEGRADED:
		s.releaseRow(r)
		if r.GetPending() != nil {
			s.release(modKey(r.Id))
		}
		n := s.change(r)
		n.State = fsmv1.Reservation_STATE_CANCELLED
		n.Pending = nil
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_CANCELLED, n, nil)
		return okResult(n)
	}
	return wrongState(r, "cancel")
}

// modify holds a new shape beside a committed reservation (two-phase,
// PluS): the old booking stays until a commit swaps them.
func (s *state) modify(cmd *fsmv1.Command) *fsmv1.Result {
	m := cmd.GetModify()
	r, bad := s.owned(cmd, "modify.id", m.GetId())
	if bad != nil {
		return bad
	}
	if scheduled(r) {
		return invalid("modify.id", "modifying a variable job or a reservation on a MOVE_VARIABLE or RELAXED resource is not supported yet; cancel it and reserve again")
	}
	if r.GetState() != fsmv1.Reservation_STATE_COMMITTED || r.GetPending() != nil {
		return wrongState(r, "modify")
	}
	if b := checkParts("modify.parts", m.GetParts()); b != nil {
		return b
	}
	ttl, b := s.checkTTL("modify.hold_ttl_millis", m.GetHoldTtlMillis())
	if b != nil {
		return b
	}
	parts := r.GetParts()
	if len(m.GetParts()) > 0 {
		parts = m.GetParts()
	}
	start := r.GetStartMillis()
	if m.StartMillis != nil {
		start = m.GetStartMillis()
	}
	if start <= s.now {
		return invalid("modify.start_millis", fmt.Sprintf("must be after the log time %d", s.now))
	}
	end := r.GetEndMillis()
	if m.EndMillis != nil {
		end = m.GetEndMillis()
	} else if m.StartMillis != nil {
		end = addSat(start, r.GetEndMillis()-r.GetStartMillis())
	}
	if end <= start {
		return invalid("modify.end_millis", "must be after start")
	}
	pp := plannerParts(parts)
	for i, p := range pp {
		if s.resourcePolicy(p.Resource) == planner.PolicyRelaxed {
			// Everything booked on a RELAXED resource must be a
			// scheduler item; a modification is a plain booking.
			return invalid(fmt.Sprintf("modify.parts[%d].resource", i), fmt.Sprintf("resource %q is RELAXED: a reservation cannot be modified onto it", p.Resource))
		}
	}
	if err := s.plan.Book(planner.Booking{ID: modKey(r.Id), Parts: pp, Start: start, End: end}); err != nil {
		if errors.Is(err, planner.ErrNoCapacity) {
			// Where the same shape would fit later, beside the current one.
			d, ferr := s.plan.Find(planner.Request{Parts: pp, Duration: end - start, NotBefore: start, Deadline: planner.MaxTime})
			later := planner.Decision{LaterOK: ferr == nil && d.Fits, LaterStart: d.Start}
			return rejected(later, "the new shape does not fit beside the current one")
		}
		return s.fromPlanner(err, modifyFields)
	}
	n := s.change(r)
	n.Pending = &fsmv1.Modification{
		Parts:       sortedParts(pp),
		StartMillis: start,
		EndMillis:   end,
		// A modification must be decided before it would begin.
		HoldExpiresMillis: min(addSat(s.now, ttl), start),
		Version:           s.index,
	}
	s.put(n.Id, n)
	s.emit(fsmv1.Event_TYPE_MODIFY_HELD, n, nil)
	return okResult(n)
}

// complete ends a COMMITTED or ACTIVE reservation early: the planner gives
// back [at, end), the row keeps its requested duration and records the
// actual end. At the log time the reservation is COMPLETED at once; at a
// later instant its end moves there and the completion timer fires then.
func (s *state) complete(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetComplete()
	r, bad := s.owned(cmd, "complete.id", c.GetId())
	if bad != nil {
		return bad
	}
	if scheduled(r) {
		return s.completeScheduled(c, r)
	}
	switch st := r.GetState(); {
	case st != fsmv1.Reservation_STATE_COMMITTED && st != fsmv1.Reservation_STATE_ACTIVE,
		r.GetPending() != nil:
		return wrongState(r, "complete")
	}
	at := s.now
	if c.AtMillis != nil {
		// Like not_before: an instant already past in log time means now.
		at = max(c.GetAtMillis(), s.now)
	}
	if at < r.GetStartMillis() || at == r.GetStartMillis() && at != s.now {
		// Only a reservation that has begun can end at its start (it
		// then used nothing); ending one that has not begun is Cancel.
		return invalid("complete.at_millis", fmt.Sprintf("must be after the start %d (cancel gives the whole interval back)", r.GetStartMillis()))
	}
	if at >= r.GetEndMillis() {
		return invalid("complete.at_millis", fmt.Sprintf("must be before the booked end %d", r.GetEndMillis()))
	}
	if _, err := s.plan.Complete(r.GetId(), at); err != nil {
		fm := fieldMap{"complete.", map[string]string{"at": "at_millis"}}
		return s.fromPlanner(err, fm)
	}
	n := s.endEarly(r, at)
	s.replan(r.GetParts())
	return okResult(n)
}

// endEarly stores r ended at at: COMPLETED at once when at is the log
// time, otherwise SHORTENED (its timers complete it at at). The row keeps
// the first requested duration.
func (s *state) endEarly(r *fsmv1.Reservation, at int64) *fsmv1.Reservation {
	n := s.change(r)
	if n.RequestedDurationMillis == 0 {
		n.RequestedDurationMillis = r.GetEndMillis() - r.GetStartMillis()
	}
	n.EndMillis, n.ActualEndMillis = at, at
	if at == s.now {
		n.State = fsmv1.Reservation_STATE_COMPLETED
		s.put(n.Id, n)
		s.emit(fsmv1.Event_TYPE_COMPLETED, n, nil)
		return n
	}
	s.put(n.Id, n)
	s.emit(fsmv1.Event_TYPE_SHORTENED, n, nil)
	return n
}
