package fsm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// Per-tenant limits (TYPE_SET_LIMITS) and their enforcement in admission.
//
// The limit table is replicated state, changed only by logged commands.
// While it has any entry, every change of a row (put) also updates the
// per (tenant, resource) usage profiles, so that an admission asks its
// tenant's profile, never the reservation table. With no entry the
// profiles are dropped and admission costs what it did without limits.

// AnyTenant and AnyResource are the wildcards of a limit entry: the
// default for every tenant or resource without a more specific entry.
const (
	AnyTenant   = "*"
	AnyResource = "*"
)

// DefaultApprovalTTL is how long a request waits for approval when its
// limit entry names no approval_ttl_millis: 7 days.
const DefaultApprovalTTL int64 = 7 * 24 * 3_600_000

// maxLimitWindow bounds window_millis (100 years): far beyond any useful
// window, it keeps every window inside the time range.
const maxLimitWindow int64 = 100 * 365 * 24 * 3_600_000

// maxReasonLen bounds an approval decision's reason.
const maxReasonLen = 1024

type limitKey struct{ tenant, resource string }

// limitState is the limit table and the usage it needs.
type limitState struct {
	// table holds the entries; records are immutable once stored.
	table map[limitKey]*fsmv1.TenantLimit
	// use holds each tenant's usage per resource while table is not
	// empty (nil otherwise). Invariant: use[k] is the sum of
	// contribution(r) over the rows r of tenant k.tenant.
	use map[limitKey]*usage
	// Scratch.
	buf         []ustep
	win         windowScratch
	parts, pend []scanPart
	rects       []rect
	// none is the usage of a (tenant, resource) that has none: searched,
	// never changed.
	none *usage
	// hitKey, hit and hitOK are the answer of the lookup of use done
	// last (hit nil: no usage): an admission checks its tenant's usage
	// of a resource and then adds to the same one, most often creating
	// it (a tenant's bookings on a resource rarely overlap in time, so
	// most usages hold one booking). Creating or dropping a usage
	// updates it; replacing the map clears hitOK.
	hitKey limitKey
	hit    *usage
	hitOK  bool
	// spare holds usages dropped empty, for the next ones created: a
	// usage is created and dropped about once per booking.
	spare []*usage
	// specKey, specVal and specOK are the answer of spec found last on
	// the apply path (applySpec): a request's limits are asked for by
	// the per-request, usage and approval checks in turn. Every change
	// of table clears specOK.
	specKey limitKey
	specVal *fsmv1.TenantLimit
	specOK  bool
}

// applySpec is spec for Apply, remembering its last answer. Readers call
// spec, which changes nothing: they run concurrently under the read lock.
func (l *limitState) applySpec(tenant, resource string) *fsmv1.TenantLimit {
	if l.specOK && l.specKey.tenant == tenant && l.specKey.resource == resource {
		return l.specVal
	}
	e := l.spec(tenant, resource)
	l.specKey, l.specVal, l.specOK = limitKey{tenant, resource}, e, true
	return e
}

// find returns the usage of (owner, resource).
func (l *limitState) find(owner, resource string) (*usage, bool) {
	if l.hitOK && l.hitKey.tenant == owner && l.hitKey.resource == resource {
		return l.hit, l.hit != nil
	}
	u, ok := l.use[limitKey{owner, resource}]
	l.hitKey, l.hit, l.hitOK = limitKey{owner, resource}, u, true
	return u, ok
}

// create adds an empty usage for (owner, resource), which has none, and
// returns it.
func (l *limitState) create(owner, resource string) *usage {
	var u *usage
	if n := len(l.spare); n > 0 {
		u, l.spare[n-1] = l.spare[n-1], nil
		l.spare = l.spare[:n-1]
	} else {
		u = newUsage()
	}
	// The names may be substrings of a stored row: the map keeps its
	// own copies, not the row.
	k := limitKey{strings.Clone(owner), strings.Clone(resource)}
	l.use[k] = u
	l.hitKey, l.hit, l.hitOK = k, u, true
	return u
}

// maxSpare bounds limitState.spare.
const maxSpare = 64

// drop removes the usage of k, which is 0 everywhere, and keeps it
// (with its small step array, see usage.clear) for the next create.
func (l *limitState) drop(k limitKey, u *usage) {
	delete(l.use, k)
	if l.hitOK && l.hitKey == k {
		l.hit = nil
	}
	u.clear()
	if len(l.spare) < maxSpare {
		l.spare = append(l.spare, u)
	}
}

// limited reports whether usage is being tracked.
func (l *limitState) limited() bool { return l.use != nil }

// spec returns the entry that applies to tenant on resource: the most
// specific of (tenant, resource), (tenant, *), (*, resource), (*, *).
func (l *limitState) spec(tenant, resource string) *fsmv1.TenantLimit {
	for _, k := range [4]limitKey{{tenant, resource}, {tenant, AnyResource}, {AnyTenant, resource}, {AnyTenant, AnyResource}} {
		if e, ok := l.table[k]; ok {
			return e
		}
	}
	return nil
}

// countsState reports whether a row in state st holds the tenant's
// capacity for the limits: held, committed, running and pending approval.
func countsState(st fsmv1.Reservation_State) bool {
	switch st {
	case fsmv1.Reservation_STATE_HELD, fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_STATE_ACTIVE,
		fsmv1.Reservation_STATE_DEGRADED, fsmv1.Reservation_STATE_PENDING_APPROVAL:
		return true
	}
	return false
}

// account adds (sign +1) or removes (-1) the contribution of a row to its
// tenant's usage: its parts over [start, end) and, with a pending
// modification, the new shape too, where the two overlap only the larger
// amount (so that whichever shape survives the modification is counted
// in full, and nothing twice).
func (l *limitState) account(owner string, m *rowMeta, parts, pend []scanPart, sign int64) {
	if !countsState(m.state) {
		return
	}
	if !m.hasPending || len(pend) == 0 {
		// The common row: each part touches its own usage once, so one
		// lookup finds it, changes it and drops it if it became 0
		// everywhere (with a pending shape, a usage may pass through 0
		// between two of its changes, and is only dropped at the end).
		for _, p := range parts {
			u := l.useOf(owner, p.resource)
			if u.add(m.start, m.end, sign*p.amount); u.empty() {
				l.drop(limitKey{owner, p.resource}, u)
			}
		}
		return
	}
	for _, p := range parts {
		l.useOf(owner, p.resource).add(m.start, m.end, sign*p.amount)
	}
	for _, q := range pend {
		u := l.useOf(owner, q.resource)
		u.add(m.pendStart, m.pendEnd, sign*q.amount)
		for _, p := range parts {
			if p.resource == q.resource {
				u.add(max(m.start, m.pendStart), min(m.end, m.pendEnd), -sign*min(p.amount, q.amount))
			}
		}
	}
	for _, ps := range [2][]scanPart{parts, pend} {
		for _, p := range ps {
			k := limitKey{owner, p.resource}
			if u, ok := l.find(owner, p.resource); ok && u.empty() {
				l.drop(k, u)
			}
		}
	}
}

func (l *limitState) useOf(owner, resource string) *usage {
	u, ok := l.find(owner, resource)
	if !ok {
		u = l.create(owner, resource)
	}
	return u
}

// accountRow is account for a row message whose meta (metaOf) the
// caller already has.
func (l *limitState) accountRow(r *fsmv1.Reservation, m *rowMeta, sign int64) {
	if !l.limited() || r == nil || !countsState(r.GetState()) {
		return
	}
	l.parts = scanParts(r.GetParts(), l.parts[:0])
	l.pend = l.pend[:0]
	if p := r.GetPending(); p != nil {
		l.pend = scanParts(p.GetParts(), l.pend)
	}
	l.account(r.GetOwner(), m, l.parts, l.pend, sign)
	// The scratch must not keep the row's strings alive.
	clear(l.parts)
	clear(l.pend)
}

func scanParts(ps []*fsmv1.Part, buf []scanPart) []scanPart {
	for _, p := range ps {
		buf = append(buf, scanPart{resource: p.GetResource(), amount: p.GetAmount()})
	}
	return buf
}

// startTracking builds the usage of every row, in bulk (usageBuilder):
// the table just got its first entry.
func (s *state) startTracking() {
	b := newUsageBuilder()
	var sc rowScan
	s.byID.Ascend(func(row string) bool {
		if err := scanRow(row, &sc); err != nil {
			panic(fmt.Sprintf("fsm: stored reservation %q: %v", rowID(row), err))
		}
		b.account(sc.owner, &sc.rowMeta, sc.parts, sc.pendParts)
		return true
	})
	s.lim.use, s.lim.hitOK = b.build(), false
}

// setLimits applies TYPE_SET_LIMITS.
func (s *state) setLimits(cmd *fsmv1.Command) *fsmv1.Result {
	if !cmd.GetPrivileged() {
		return &fsmv1.Result{Status: fsmv1.Result_STATUS_PERMISSION_DENIED, Message: "only an operator may set tenant limits"}
	}
	c := cmd.GetSetLimits()
	if fe := checkSetLimits(c); fe != nil {
		return fe.result()
	}
	k := limitKey{c.GetTenant(), c.GetResource()}
	s.lim.specOK = false
	e := &fsmv1.TenantLimit{Tenant: k.tenant, Resource: k.resource, UpdatedVersion: s.index}
	if c.GetSpec() == nil {
		delete(s.lim.table, k)
		if len(s.lim.table) == 0 {
			s.lim.table, s.lim.use, s.lim.hitOK = nil, nil, false
		}
	} else {
		e.Spec = proto.CloneOf(c.GetSpec())
		if s.lim.table == nil {
			s.lim.table = make(map[limitKey]*fsmv1.TenantLimit)
		}
		s.lim.table[k] = e
		if !s.lim.limited() {
			s.startTracking()
		}
	}
	if s.cfg.HistoryLimit > 0 {
		s.emit(fsmv1.Event_TYPE_LIMITS_CHANGED, nil, nil)
		s.history[len(s.history)-1].Limit = e
	}
	return &fsmv1.Result{Status: fsmv1.Result_STATUS_OK, Limit: e}
}

// CheckSetLimits is the stateless check Apply makes of a SetLimits: nil,
// or a *FieldError naming the field at fault. A caller that will propose
// the command later (a config file's limits) checks it here first.
func CheckSetLimits(c *fsmv1.SetLimits) error {
	if fe := checkSetLimits(c); fe != nil {
		return fe
	}
	return nil
}

// checkSetLimits is the stateless check of a SetLimits.
func checkSetLimits(c *fsmv1.SetLimits) *FieldError {
	switch t := c.GetTenant(); {
	case t == "":
		return fieldErr("set_limits.tenant", "must not be empty (\"*\" is every tenant)")
	case len(t) > maxOwnerLen:
		return fieldErr("set_limits.tenant", fmt.Sprintf("longer than %d bytes", maxOwnerLen))
	}
	if r := c.GetResource(); r != AnyResource {
		if why := validResourceName(r); why != "" {
			return fieldErr("set_limits.resource", why+" (\"*\" is every resource)")
		}
	}
	sp := c.GetSpec()
	if sp == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_units", sp.GetMaxUnits()}, {"max_unit_millis", sp.GetMaxUnitMillis()}, {"window_millis", sp.GetWindowMillis()},
		{"max_ahead_millis", sp.GetMaxAheadMillis()}, {"max_duration_millis", sp.GetMaxDurationMillis()},
		{"max_hold_ttl_millis", sp.GetMaxHoldTtlMillis()}, {"approval_above_units", sp.GetApprovalAboveUnits()},
		{"approval_above_duration_millis", sp.GetApprovalAboveDurationMillis()}, {"approval_ttl_millis", sp.GetApprovalTtlMillis()},
	} {
		if f.v < 0 {
			return fieldErr("set_limits.spec."+f.name, "must be >= 0 (0 means none)")
		}
	}
	switch {
	case (sp.GetMaxUnitMillis() == 0) != (sp.GetWindowMillis() == 0):
		return fieldErr("set_limits.spec.window_millis", "max_unit_millis and window_millis go together")
	case sp.GetWindowMillis() > maxLimitWindow:
		return fieldErr("set_limits.spec.window_millis", fmt.Sprintf("must be at most %d (100 years)", maxLimitWindow))
	case sp.GetApprovalTtlMillis() > MaxTimeMillis:
		return fieldErr("set_limits.spec.approval_ttl_millis", endOfTime)
	}
	return nil
}

// limitRefusal is the result of a request a limit refuses.
func limitRefusal(owner, resource string, e *fsmv1.TenantLimit, limit string, value, use, requested, fits int64, over bool, unit string) *fsmv1.Result {
	msg := fmt.Sprintf("tenant %q: limit %s = %d%s on %q (entry %s/%s) refuses it: ", owner, limit, value, unit, resource, e.GetTenant(), e.GetResource())
	switch {
	case over:
		msg += fmt.Sprintf("usage %d%s is already over the limit (a lowered limit refuses new bookings only)", use, unit)
	case use != 0 || limit == "max_units" || limit == "max_unit_millis":
		msg += fmt.Sprintf("usage %d%s + request %d%s; %d would fit", use, unit, requested, unit, fits)
	default:
		msg += fmt.Sprintf("request %d%s; at most %d fits", requested, unit, fits)
	}
	return &fsmv1.Result{
		Status:  fsmv1.Result_STATUS_LIMIT_EXCEEDED,
		Message: msg,
		Detail: &fsmv1.Result_LimitExceeded{LimitExceeded: &fsmv1.LimitExceeded{
			Tenant: owner, Resource: resource, EntryTenant: e.GetTenant(), EntryResource: e.GetResource(),
			Limit: limit, LimitValue: value, Usage: use, Requested: requested, Fits: fits, Over: over,
		}},
	}
}

// checkRequestLimits checks the limits that look at one request alone:
// its duration, its horizon (end - log time) and a hold's TTL (ttl > 0;
// askedTTL is what the client asked for, 0 for the default). It returns
// the TTL to use.
func (s *state) checkRequestLimits(owner string, parts []planner.Part, start, end, ttl, askedTTL int64) (int64, *fsmv1.Result) {
	if len(s.lim.table) == 0 {
		return ttl, nil
	}
	for _, p := range parts {
		e := s.lim.applySpec(owner, p.Resource)
		sp := e.GetSpec()
		if sp == nil {
			continue
		}
		if mx := sp.GetMaxDurationMillis(); mx > 0 && end-start > mx {
			return 0, limitRefusal(owner, p.Resource, e, "max_duration_millis", mx, 0, end-start, mx, false, " ms")
		}
		if mx := sp.GetMaxAheadMillis(); mx > 0 && end-s.now > mx {
			return 0, limitRefusal(owner, p.Resource, e, "max_ahead_millis", mx, 0, end-s.now, mx, false, " ms")
		}
		if mx := sp.GetMaxHoldTtlMillis(); mx > 0 && ttl > 0 {
			if askedTTL > mx {
				return 0, limitRefusal(owner, p.Resource, e, "max_hold_ttl_millis", mx, 0, askedTTL, mx, false, " ms")
			}
			ttl = min(ttl, mx)
		}
	}
	return ttl, nil
}

// checkUsageLimits checks that adding the rectangles of each part keeps
// the tenant within max_units and max_unit_millis. add returns, per
// part, what the booking adds to the tenant's usage of that resource.
func (s *state) checkUsageLimits(owner string, parts []planner.Part, add func(i int) []rect) *fsmv1.Result {
	return s.usageLimits(owner, parts, 0, 0, add)
}

// usageLimits is checkUsageLimits, where a nil add is a new booking of
// parts over [start, end): one rectangle per part, in reused memory.
func (s *state) usageLimits(owner string, parts []planner.Part, start, end int64, add func(i int) []rect) *fsmv1.Result {
	if !s.lim.limited() {
		return nil
	}
	for i, p := range parts {
		e := s.lim.applySpec(owner, p.Resource)
		sp := e.GetSpec()
		if sp.GetMaxUnits() == 0 && sp.GetMaxUnitMillis() == 0 {
			continue
		}
		var rs []rect
		if add == nil {
			s.lim.rects = append(s.lim.rects[:0], rect{start, end, p.Amount})
			rs = s.lim.rects
		} else {
			rs = add(i)
		}
		u, ok := s.lim.find(owner, p.Resource)
		if !ok {
			if s.lim.none == nil {
				s.lim.none = newUsage()
			}
			u = s.lim.none
		}
		if mx := sp.GetMaxUnits(); mx > 0 {
			if peak, _, ok := u.maxUnits(rs, s.lim.buf); ok && peak > mx {
				// The busiest instant of the request's interval, without it.
				use, _, _ := u.maxUnits(rs[:1], s.lim.buf)
				use -= rs[0].a
				return limitRefusal(owner, p.Resource, e, "max_units", mx, use, p.Amount, max(0, mx-use), use > mx, " units")
			}
		}
		if mx, w := sp.GetMaxUnitMillis(), sp.GetWindowMillis(); mx > 0 {
			wc := u.maxWindow(rs, w, mx, &s.lim.win)
			if wc.ok && from64(mx).less(wc.after) {
				use := wc.before.clamp()
				return limitRefusal(owner, p.Resource, e, "max_unit_millis", mx, use, wc.after.sub(wc.before).clamp(), wc.fits, from64(mx).less(wc.usage), " unit-ms")
			}
		}
	}
	return nil
}

// admissionLimits checks every limit of a new booking of parts over
// [start, end) (the usage limits only when usage is set) and returns the
// hold TTL to use.
func (s *state) admissionLimits(owner string, parts []planner.Part, start, end, ttl, askedTTL int64, usage bool) (int64, *fsmv1.Result) {
	ttl, bad := s.checkRequestLimits(owner, parts, start, end, ttl, askedTTL)
	if bad != nil || !usage {
		return ttl, bad
	}
	return ttl, s.usageLimits(owner, parts, start, end, nil)
}

// modifyRects is what a pending modification to parts over [start, end)
// adds beside the row's current booking (see account).
func modifyRects(r *fsmv1.Reservation, parts []planner.Part, start, end int64) func(int) []rect {
	return func(i int) []rect {
		rs := []rect{{start, end, parts[i].Amount}}
		for _, p := range r.GetParts() {
			if p.GetResource() == parts[i].Resource {
				if s, e := max(start, r.GetStartMillis()), min(end, r.GetEndMillis()); s < e {
					rs = append(rs, rect{s, e, -min(p.GetAmount(), parts[i].Amount)})
				}
			}
		}
		return rs
	}
}

// approvalNeeded says why a request of parts over [start, end) needs an
// operator's approval ("" when it does not) and how long it may wait.
func (s *state) approvalNeeded(owner string, parts []planner.Part, start, end int64) (string, int64) {
	if len(s.lim.table) == 0 {
		return "", 0
	}
	why, ttl := "", int64(0)
	for _, p := range parts {
		e := s.lim.applySpec(owner, p.Resource)
		sp := e.GetSpec()
		var r string
		switch {
		case sp.GetApprovalRequired():
			r = fmt.Sprintf("resource %q requires approval", p.Resource)
		case sp.GetApprovalAboveUnits() > 0 && p.Amount > sp.GetApprovalAboveUnits():
			r = fmt.Sprintf("%d units on %q is above the approval threshold %d", p.Amount, p.Resource, sp.GetApprovalAboveUnits())
		case sp.GetApprovalAboveDurationMillis() > 0 && end-start > sp.GetApprovalAboveDurationMillis():
			r = fmt.Sprintf("duration %d ms on %q is above the approval threshold %d ms", end-start, p.Resource, sp.GetApprovalAboveDurationMillis())
		default:
			continue
		}
		t := sp.GetApprovalTtlMillis()
		if t == 0 {
			t = DefaultApprovalTTL
		}
		if why == "" {
			why, ttl = r, t
		} else {
			why, ttl = why+"; "+r, min(ttl, t)
		}
	}
	return why, ttl
}

// captureLimits adds the limit table to a snapshot, sorted.
func (s *state) captureLimits(msg *fsmv1.Snapshot) {
	if len(s.lim.table) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(s.lim.table), func(a, b limitKey) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.resource, b.resource))
	})
	for _, k := range keys {
		msg.Limits = append(msg.Limits, s.lim.table[k])
	}
}

// restoreLimitTable loads the limit table of a snapshot; the usage is
// built by the restore's usage stage (restoreJob.buildUsage).
func (s *state) restoreLimitTable(msg *fsmv1.Snapshot) error {
	var prev *fsmv1.TenantLimit
	for i, e := range msg.GetLimits() {
		if fe := checkSetLimits(&fsmv1.SetLimits{Tenant: e.GetTenant(), Resource: e.GetResource(), Spec: e.GetSpec()}); fe != nil {
			return badf("limits[%d]: %s", i, fe.Reason)
		}
		if e.GetSpec() == nil {
			return badf("limits[%d]: no spec", i)
		}
		if prev != nil && cmp.Or(cmp.Compare(prev.GetTenant(), e.GetTenant()), cmp.Compare(prev.GetResource(), e.GetResource())) >= 0 {
			return badf("limits not sorted at %d", i)
		}
		prev = e
		s.lim.specOK = false
		if s.lim.table == nil {
			s.lim.table = make(map[limitKey]*fsmv1.TenantLimit)
		}
		s.lim.table[limitKey{e.GetTenant(), e.GetResource()}] = e
	}
	return nil
}

// The public names of the limits commands' fields (see PublicField).
func init() {
	publicFields = append(publicFields, [][2]string{
		{"set_limits.spec.max_unit_millis", "limits.max_unit_hours"}, {"set_limits.spec.window_millis", "limits.window"},
		{"set_limits.spec.max_ahead_millis", "limits.max_ahead"}, {"set_limits.spec.max_duration_millis", "limits.max_duration"},
		{"set_limits.spec.max_hold_ttl_millis", "limits.max_hold_ttl"},
		{"set_limits.spec.approval_above_duration_millis", "limits.approval_above_duration"},
		{"set_limits.spec.approval_ttl_millis", "limits.approval_ttl"},
		{"set_limits.spec.", "limits."}, {"set_limits.", ""}, {"decision.", ""},
	}...)
}

// coReserveLimits checks a co-reservation before the scheduler places it
// (placing may move variable jobs, which could not be undone): every
// sub-request must keep the per-request limits of every candidate, and all
// of them together must fit each candidate's usage limits, since the
// scheduler may put them all on one. This is conservative: a
// co-reservation whose sub-requests would spread over the candidates may
// be refused although each placement would fit.
func (s *state) coReserveLimits(owner string, c *fsmv1.CoReserve) *fsmv1.Result {
	if len(s.lim.table) == 0 {
		return nil
	}
	for _, name := range c.GetCandidates() {
		for _, sub := range c.GetSubs() {
			st := sub.GetStartMillis()
			p := []planner.Part{{Resource: name, Amount: sub.GetAmount()}}
			if _, bad := s.checkRequestLimits(owner, p, st, st+sub.GetDurationMillis(), 0, 0); bad != nil {
				return bad
			}
		}
		all := func(int) []rect {
			rs := make([]rect, 0, len(c.GetSubs()))
			for _, sub := range c.GetSubs() {
				rs = append(rs, rect{sub.GetStartMillis(), sub.GetStartMillis() + sub.GetDurationMillis(), sub.GetAmount()})
			}
			return rs
		}
		if bad := s.checkUsageLimits(owner, []planner.Part{{Resource: name, Amount: c.GetSubs()[0].GetAmount()}}, all); bad != nil {
			return bad
		}
	}
	return nil
}
