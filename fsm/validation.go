package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// Validation: the checks of a command's fields that no state can make
// acceptable. Check runs them on their own; Apply runs the very same
// functions, in the same order, interleaved with the checks that consult
// the state (a duplicate ID, an unknown resource, the log time, a
// reservation's state). The interleaving is part of the log's meaning: a
// command with a bad field and, say, a duplicate ID must keep getting the
// answer it always got (it may be stored with an idempotency key and
// travel in snapshots), so Apply cannot simply run Check first.

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

// FieldError is a field of a command that Apply refuses with
// STATUS_INVALID whatever the state: Check returns it, and Apply answers
// the same command (when no state-dependent refusal comes first) with an
// Invalid result naming Path with the same Reason.
type FieldError struct {
	// Field is the path in the public API's request, PublicField(Path),
	// e.g. "shape.parts[1].amount".
	Field string
	// Path is the path in the log command, as Result.invalid.field names
	// it, e.g. "request.parts[1].amount".
	Path string
	// Reason says what is wrong, e.g. "must be > 0".
	Reason string
}

// Error returns "invalid <Field>: <Reason>".
func (e *FieldError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

func fieldErr(path, reason string) *FieldError {
	return &FieldError{Field: PublicField(path), Path: path, Reason: reason}
}

// result is Apply's answer to e.
func (e *FieldError) result() *fsmv1.Result { return invalid(e.Path, e.Reason) }

// Check reports the first field of cmd that Apply would refuse with
// STATUS_INVALID regardless of the table state, as a *FieldError, or an
// error wrapping ErrMalformed when the payload does not match the type
// (Encode refuses those too). The envelope version is not checked, but it
// selects the checks: a command is checked as the version it carries, or
// for a zero version as the version Encode will write (MinVersion). From
// version 3 on, every time must lie at or before MaxTimeMillis; the edge
// that must propose an older version can still run the version 3 checks
// on a copy, which only adds refusals.
//
// The edge calls Check before it replicates a command, so that bad
// input is refused without a log entry; Apply runs the same checks, so the
// two agree by construction:
//
//   - if Check returns nil, Apply never answers STATUS_INVALID for a
//     reason Check covers (it may still refuse for reasons that depend on
//     the state: an unknown resource, a start before the log time, a
//     capacity smaller than the amount, a reservation's state or policy);
//   - if Check refuses, Apply refuses too, changing nothing: with the same
//     Path and Reason, unless a state-dependent refusal comes first in
//     Apply's order (e.g. NOT_FOUND for the reservation a modification
//     names). One wording differs: an exact start whose start + duration
//     overflows is "not_before + duration overflows" here and on REJECT
//     resources, "start + duration overflows" on policy resources (same
//     Path).
//
// Check reads only the Config: it takes no lock, changes nothing and may
// be called from any goroutine at any time, also while Apply runs. It
// does not consult idempotency records: a retry of a request that was
// accepted is refused again the same way it was, since Check does not
// change between the two.
func (f *FSM) Check(cmd *fsmv1.Command) error {
	if cmd == nil {
		return fmt.Errorf("check command: %w: nil command", ErrMalformed)
	}
	if err := checkPayload(cmd); err != nil {
		return fmt.Errorf("check command: %w", err)
	}
	if fe := checkCommand(&f.cfg, cmd); fe != nil {
		return fe
	}
	return nil
}

// entryVersion is the envelope version cmd is applied as: its own, or
// the one Encode writes for a zero version.
func entryVersion(cmd *fsmv1.Command) uint32 {
	if v := cmd.GetVersion(); v != 0 {
		return v
	}
	return minVersion(cmd)
}

// checkCommand runs the stateless checks of cmd in Apply's order.
func checkCommand(cfg *Config, cmd *fsmv1.Command) *FieldError {
	ver := entryVersion(cmd)
	switch cmd.GetType() {
	case fsmv1.Command_TYPE_CREATE_RESOURCE:
		return checkCreateResource(cmd.GetCreateResource())
	case fsmv1.Command_TYPE_UPDATE_RESOURCE:
		u := cmd.GetUpdateResource()
		if fe := checkNameSet("update_resource.name", u.GetName(), ver); fe != nil {
			return fe
		}
		return checkUpdateResource(u, ver)
	case fsmv1.Command_TYPE_DELETE_RESOURCE:
		return checkNameSet("delete_resource.name", cmd.GetDeleteResource().GetName(), ver)
	case fsmv1.Command_TYPE_HOLD, fsmv1.Command_TYPE_RESERVE:
		req := cmd.GetRequest()
		if fe := checkNewRow(cmd, "request.id", req.GetId()); fe != nil {
			return fe
		}
		if _, fe := checkRequest(cfg, req, cmd.GetType() == fsmv1.Command_TYPE_RESERVE, ver); fe != nil {
			return fe
		}
		return checkRequestPlan(req)
	case fsmv1.Command_TYPE_COMMIT, fsmv1.Command_TYPE_ABORT, fsmv1.Command_TYPE_CANCEL:
		return checkTargetID("target.id", cmd.GetTarget().GetId(), ver)
	case fsmv1.Command_TYPE_MODIFY:
		m := cmd.GetModify()
		if fe := checkTargetID("modify.id", m.GetId(), ver); fe != nil {
			return fe
		}
		if _, fe := checkModify(cfg, m, ver); fe != nil {
			return fe
		}
		if fe := checkModifyWindow(m, ver); fe != nil {
			return fe
		}
		if m.StartMillis != nil && m.EndMillis != nil {
			if fe := checkModifyEnd(m.GetStartMillis(), m.GetEndMillis(), ver); fe != nil {
				return fe
			}
		}
		if len(m.GetParts()) > 0 {
			return checkPlanParts("modify.", m.GetParts())
		}
	case fsmv1.Command_TYPE_COMPLETE:
		return checkTargetID("complete.id", cmd.GetComplete().GetId(), ver)
	case fsmv1.Command_TYPE_UNIT_DOWN:
		return checkUnitDown(cmd.GetUnitDown())
	case fsmv1.Command_TYPE_UNIT_UP:
		return checkUnitUp(cmd.GetUnitUp(), ver)
	case fsmv1.Command_TYPE_CREATE_SERIES, fsmv1.Command_TYPE_EXPAND_SERIES, fsmv1.Command_TYPE_CANCEL_SERIES:
		return checkSeriesCommand(cfg, cmd)
	case fsmv1.Command_TYPE_SET_MATERIALIZATION:
		return checkSetMaterialization(cmd.GetSetMaterialization(), ver)
	case fsmv1.Command_TYPE_SET_RETENTION:
		return checkSetRetention(cmd.GetSetRetention())
	case fsmv1.Command_TYPE_CHANGE_UNITS:
		return checkChangeUnits(cmd.GetChangeUnits(), ver)
	case fsmv1.Command_TYPE_SET_POLICY:
		sp := cmd.GetSetPolicy()
		if fe := checkNameSet("set_policy.name", sp.GetName(), ver); fe != nil {
			return fe
		}
		return checkPolicySpec("set_policy.policy", sp.GetPolicy())
	case fsmv1.Command_TYPE_SUBMIT_JOB:
		j := cmd.GetSubmitJob()
		if fe := checkNewRow(cmd, "submit_job.id", j.GetId()); fe != nil {
			return fe
		}
		if fe := checkSubmitJob(j, ver); fe != nil {
			return fe
		}
		return checkSubmitJobPlan(j, ver)
	case fsmv1.Command_TYPE_SET_LIMITS:
		return checkSetLimits(cmd.GetSetLimits())
	case fsmv1.Command_TYPE_APPROVE, fsmv1.Command_TYPE_DENY:
		return checkDecision(cmd.GetDecision(), cmd.GetType() == fsmv1.Command_TYPE_APPROVE, ver)
	case fsmv1.Command_TYPE_CO_RESERVE:
		c := cmd.GetCoReserve()
		if fe := checkNewRow(cmd, "co_reserve.id", c.GetId()); fe != nil {
			return fe
		}
		if fe := checkCoReserveHead(c.GetId(), c); fe != nil {
			return fe
		}
		seen := make(map[string]bool, len(c.GetCandidates()))
		for i, name := range c.GetCandidates() {
			// No resource has an empty name; any other may exist.
			if fe := checkCoCandidate(i, name, name != "", seen); fe != nil {
				return fe
			}
		}
		for i, sub := range c.GetSubs() {
			if fe := checkCoSub(i, sub); fe != nil {
				return fe
			}
			// Apply refuses a start before the log time here; the log
			// time is at least 0, so the overflow check below is only
			// reached with a start >= 0.
			if sub.GetStartMillis() < 0 {
				return nil
			}
			if fe := checkCoSubEnd(i, sub, ver); fe != nil {
				return fe
			}
		}
	}
	return nil
}

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
func checkLabels(field string, labels map[string]string) *FieldError {
	if len(labels) > maxLabels {
		return fieldErr(field, fmt.Sprintf("more than %d labels", maxLabels))
	}
	if len(labels) == 0 {
		// Most requests carry none: skip collecting and sorting no keys.
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case k == "":
			return fieldErr(field, "empty key")
		case len(k) > maxLabelKeyLen:
			return fieldErr(fmt.Sprintf("%s[%q]", field, k), fmt.Sprintf("key longer than %d bytes", maxLabelKeyLen))
		case len(labels[k]) > maxLabelValueLen:
			return fieldErr(fmt.Sprintf("%s[%q]", field, k), fmt.Sprintf("value longer than %d bytes", maxLabelValueLen))
		}
	}
	return nil
}

// resolveTTL resolves a requested TTL (0 = the default).
func resolveTTL(cfg *Config, field string, ttl int64) (int64, *FieldError) {
	switch {
	case ttl == 0:
		return cfg.DefaultHoldTTL, nil
	case ttl < 0:
		return 0, fieldErr(field, "must be >= 0")
	case ttl > cfg.MaxHoldTTL:
		return 0, fieldErr(field, fmt.Sprintf("must be <= %d", cfg.MaxHoldTTL))
	}
	return ttl, nil
}

func checkParts(field string, parts []*fsmv1.Part) *FieldError {
	if len(parts) > maxParts {
		return fieldErr(field, fmt.Sprintf("more than %d parts", maxParts))
	}
	return nil
}

// checkPlanParts mirrors the planner's checks of the parts of a request
// or booking (planner/validate.go: no parts; per part in order: an empty
// resource name, a resource named twice, an amount <= 0), which Apply
// reaches through the planner. The planner interleaves them with two
// checks of the state (an unknown resource, an amount above the
// resource's capacity), which Check cannot make and Apply makes there.
func checkPlanParts(prefix string, parts []*fsmv1.Part) *FieldError {
	if len(parts) == 0 {
		return fieldErr(prefix+"parts", "must not be empty")
	}
	for i, p := range parts {
		if p.GetResource() == "" {
			return fieldErr(fmt.Sprintf("%sparts[%d].resource", prefix, i), "must not be empty")
		}
		for _, q := range parts[:i] {
			if q.GetResource() == p.GetResource() {
				return fieldErr(fmt.Sprintf("%sparts[%d].resource", prefix, i), fmt.Sprintf("duplicate resource %q", p.GetResource()))
			}
		}
		if p.GetAmount() <= 0 {
			return fieldErr(fmt.Sprintf("%sparts[%d].amount", prefix, i), "must be > 0")
		}
	}
	return nil
}

// checkNameSet refuses an empty resource name. No resource has one
// (create and restore refuse it), so Apply may check it before the
// lookup that used to find nothing and then refuse it; any other name is
// Apply's to look up.
//
// From version 3 on a name no resource can have (see ValidResourceName)
// is refused as invalid as well, so the edge and Apply agree with create.
func checkNameSet(field, name string, ver uint32) *FieldError {
	if name == "" {
		return fieldErr(field, "must not be empty")
	}
	if ver >= versionEdge {
		if why := validResourceName(name); why != "" {
			return fieldErr(field, why)
		}
	}
	return nil
}

// ValidResourceName returns why name can be no resource's name, or "":
// 1 to 128 bytes of A-Z a-z 0-9 . _ : / -. Reads (Availability) use it to
// refuse what writes refuse.
func ValidResourceName(name string) string { return validResourceName(name) }

// ValidTargetID returns why id can be no reservation's ID, or "": 1 to
// 128 bytes of A-Z a-z 0-9 . _ : / @ - (a co-reservation's sub-reservations
// are "<id>/<i>", a series' occurrences "<series>@<local start>"). Reads
// (Get) use it to refuse what writes refuse.
func ValidTargetID(id string) string { return validTargetID(id, true) }

// validTargetID is ValidTargetID; occurrences says whether '@' is allowed
// (entries of version 4 on, which know series).
func validTargetID(id string, occurrences bool) string {
	switch {
	case id == "":
		return "must not be empty"
	case len(id) > maxIDLen:
		return fmt.Sprintf("longer than %d bytes", maxIDLen)
	}
	for _, c := range id {
		if !idChar(c) && c != '/' && (c != '@' || !occurrences) {
			if occurrences {
				return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : / @ -)", c)
			}
			return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : / -)", c)
		}
	}
	return ""
}

// checkPartNames refuses, from version 3 on, a part naming something no
// resource can be called; before, Apply looked it up and found nothing.
func checkPartNames(prefix string, parts []*fsmv1.Part, ver uint32) *FieldError {
	if ver < versionEdge {
		return nil
	}
	for i, p := range parts {
		if n := p.GetResource(); n != "" {
			if why := validResourceName(n); why != "" {
				return fieldErr(fmt.Sprintf("%sparts[%d].resource", prefix, i), why)
			}
		}
	}
	return nil
}

// checkTargetID refuses an empty reservation ID in a command that names
// an existing reservation.
//
// From version 3 on an ID no reservation can have is refused as well.
func checkTargetID(field, id string, ver uint32) *FieldError {
	if id == "" {
		return fieldErr(field, "must not be empty")
	}
	if ver >= versionEdge {
		if why := validTargetID(id, ver >= versionSeries); why != "" {
			return fieldErr(field, why)
		}
	}
	return nil
}

// checkNewRow checks the client-chosen ID of a new row (empty: the state
// machine assigns one) and the owner, before the duplicate check.
func checkNewRow(cmd *fsmv1.Command, field, id string) *FieldError {
	if id != "" {
		if why := validID(id); why != "" {
			return fieldErr(field, why)
		}
	}
	if len(cmd.GetOwner()) > maxOwnerLen {
		return fieldErr("owner", fmt.Sprintf("longer than %d bytes", maxOwnerLen))
	}
	return nil
}

// ---- resources ----

func checkCreateResource(c *fsmv1.CreateResource) *FieldError {
	if why := validResourceName(c.GetName()); why != "" {
		return fieldErr("create_resource.name", why)
	}
	if len(c.GetUnits()) > 0 || c.GetUnitPolicy() != 0 {
		if fe := checkUnits(c); fe != nil {
			return fe
		}
	} else if c.GetCapacity() <= 0 {
		return fieldErr("create_resource.capacity", "must be > 0")
	}
	if len(c.GetUnit()) > maxUnitLen {
		return fieldErr("create_resource.unit", fmt.Sprintf("longer than %d bytes", maxUnitLen))
	}
	if fe := checkLabels("create_resource.labels", c.GetLabels()); fe != nil {
		return fe
	}
	return checkPolicySpec("create_resource.policy", c.GetPolicy())
}

// checkUpdateResource checks an update of an existing resource; the end
// of a window that ends before the log time is Apply's to refuse.
func checkUpdateResource(c *fsmv1.UpdateResource, ver uint32) *FieldError {
	if c.GetCapacity() < 0 {
		return fieldErr("update_resource.capacity", "must be >= 0")
	}
	if c.FromMillis != nil && c.GetFromMillis() < 0 {
		return fieldErr("update_resource.from_millis", "must be >= 0")
	}
	if ver >= versionEdge {
		if c.FromMillis != nil && c.GetFromMillis() > MaxTimeMillis {
			return fieldErr("update_resource.from_millis", endOfTime)
		}
		if c.ToMillis != nil && c.GetToMillis() > MaxTimeMillis {
			return fieldErr("update_resource.to_millis", endOfTime)
		}
	}
	if c.FromMillis != nil && c.ToMillis != nil && c.GetToMillis() <= c.GetFromMillis() {
		return fieldErr("update_resource.to_millis", "must be after from_millis")
	}
	return nil
}

// ---- reservations ----

// checkRequest checks a hold's or reservation's part count, TTL (a hold's
// only; it returns the resolved TTL), labels and, without an exact start,
// its booking window. An exact start before the log time is Apply's to
// refuse.
func checkRequest(cfg *Config, req *fsmv1.ReservationRequest, commit bool, ver uint32) (int64, *FieldError) {
	if fe := checkParts("request.parts", req.GetParts()); fe != nil {
		return 0, fe
	}
	var ttl int64
	if !commit {
		var fe *FieldError
		if ttl, fe = resolveTTL(cfg, "request.hold_ttl_millis", req.GetHoldTtlMillis()); fe != nil {
			return 0, fe
		}
	}
	if fe := checkLabels("request.labels", req.GetLabels()); fe != nil {
		return 0, fe
	}
	if fe := checkPartNames("request.", req.GetParts(), ver); fe != nil {
		return 0, fe
	}
	dur := req.GetDurationMillis()
	if req.StartMillis != nil {
		if ver >= versionEdge {
			start := req.GetStartMillis()
			switch {
			case start > MaxTimeMillis:
				return 0, fieldErr("request.start_millis", endOfTime)
			case start >= 0 && dur > 0 && dur > MaxTimeMillis-start:
				return 0, fieldErr("request.duration_millis", "start + duration "+endOfTime)
			}
		}
		return ttl, nil
	}
	nb, dl := req.GetNotBeforeMillis(), req.GetDeadlineMillis()
	switch {
	case nb < 0:
		return 0, fieldErr("request.not_before_millis", "must be >= 0")
	case dl < 0:
		return 0, fieldErr("request.deadline_millis", "must be >= 0 (0 means no deadline)")
	case ver >= versionEdge && nb > MaxTimeMillis:
		return 0, fieldErr("request.not_before_millis", endOfTime)
	case ver >= versionEdge && dur > 0 && dur > MaxTimeMillis-nb:
		return 0, fieldErr("request.duration_millis", "not_before + duration "+endOfTime)
	case ver >= versionEdge && dl > MaxTimeMillis:
		return 0, fieldErr("request.deadline_millis", endOfTime)
	case dl != 0 && dur > 0 && dl-nb < dur:
		return 0, fieldErr("request.deadline_millis", "booking window shorter than duration")
	}
	return ttl, nil
}

// endOfTime is the reason of a time after MaxTimeMillis.
const endOfTime = "must not lie after 9999-12-31T23:59:59.999Z"

// lastEnd is the latest end a booking of an entry of version ver may
// have: MaxTimeMillis from version 3 on, the planner's end of time before.
func lastEnd(ver uint32) int64 {
	if ver >= versionEdge {
		return MaxTimeMillis
	}
	return planner.MaxTime
}

// checkRequestPlan mirrors what the planner refuses of a request's shape
// whatever the state (parts, then the duration, then start + duration
// beyond the end of time). Apply reaches these checks in the planner,
// after its own checks of the state.
func checkRequestPlan(req *fsmv1.ReservationRequest) *FieldError {
	if fe := checkPlanParts("request.", req.GetParts()); fe != nil {
		return fe
	}
	dur := req.GetDurationMillis()
	if dur <= 0 {
		return fieldErr("request.duration_millis", "must be > 0")
	}
	// The planner starts at max(not_before, log time), or at the exact
	// start; a start before the log time (or a negative not_before) is
	// refused before. A later log time can make the sum overflow only
	// with a not_before in the past, which Apply refuses there.
	start := req.GetNotBeforeMillis()
	if req.StartMillis != nil {
		start = req.GetStartMillis()
	}
	if start >= 0 && dur > planner.MaxTime-start {
		return fieldErr("request.duration_millis", "not_before + duration overflows")
	}
	return nil
}

// checkModify checks a modification's part count and TTL and returns the
// resolved TTL.
func checkModify(cfg *Config, m *fsmv1.Modify, ver uint32) (int64, *FieldError) {
	if fe := checkParts("modify.parts", m.GetParts()); fe != nil {
		return 0, fe
	}
	if fe := checkPartNames("modify.", m.GetParts(), ver); fe != nil {
		return 0, fe
	}
	return resolveTTL(cfg, "modify.hold_ttl_millis", m.GetHoldTtlMillis())
}

// checkModifyEnd checks a modification's interval. Apply checks the one
// it resolves from the reservation; Check only one given in full.
func checkModifyEnd(start, end int64, ver uint32) *FieldError {
	if end <= start {
		return fieldErr("modify.end_millis", "must be after start")
	}
	if ver >= versionEdge && end > MaxTimeMillis {
		return fieldErr("modify.end_millis", endOfTime)
	}
	return nil
}

// checkModifyWindow checks a modification whose start the state machine
// picks (window_duration_millis > 0) and refuses the window's fields
// without it.
func checkModifyWindow(m *fsmv1.Modify, ver uint32) *FieldError {
	dur, nb, dl := m.GetWindowDurationMillis(), m.GetNotBeforeMillis(), m.GetDeadlineMillis()
	if dur == 0 {
		switch {
		case nb != 0:
			return fieldErr("modify.not_before_millis", "needs window_duration_millis")
		case dl != 0:
			return fieldErr("modify.deadline_millis", "needs window_duration_millis")
		}
		return nil
	}
	switch {
	case dur < 0:
		return fieldErr("modify.window_duration_millis", "must be > 0")
	case m.StartMillis != nil:
		return fieldErr("modify.start_millis", "must be unset when the state machine picks the start")
	case m.EndMillis != nil:
		return fieldErr("modify.end_millis", "must be unset when the state machine picks the start")
	case nb < 0:
		return fieldErr("modify.not_before_millis", "must be >= 0")
	case dl < 0:
		return fieldErr("modify.deadline_millis", "must be >= 0 (0 means no deadline)")
	case ver >= versionEdge && nb > MaxTimeMillis:
		return fieldErr("modify.not_before_millis", endOfTime)
	case ver >= versionEdge && dl > MaxTimeMillis:
		return fieldErr("modify.deadline_millis", endOfTime)
	case dl != 0 && dl-nb < dur:
		return fieldErr("modify.deadline_millis", "booking window shorter than duration")
	case dur > lastEnd(ver)-nb:
		return fieldErr("modify.window_duration_millis", "not_before + duration "+endOfTime)
	}
	return nil
}

// ---- jobs and co-reservations ----

func checkSubmitJob(j *fsmv1.SubmitJob, ver uint32) *FieldError {
	if j.GetPart() == nil {
		return fieldErr("submit_job.part", "must be set")
	}
	if n := j.GetPart().GetResource(); ver >= versionEdge && n != "" {
		if why := validResourceName(n); why != "" {
			return fieldErr("submit_job.part.resource", why)
		}
	}
	if fe := checkLabels("submit_job.labels", j.GetLabels()); fe != nil {
		return fe
	}
	if j.GetNotBeforeMillis() < 0 {
		return fieldErr("submit_job.not_before_millis", "must be >= 0")
	}
	return nil
}

// checkSubmitJobPlan mirrors what the scheduler refuses of a job whatever
// the state (its part, its duration, not_before + duration beyond the end
// of time).
func checkSubmitJobPlan(j *fsmv1.SubmitJob, ver uint32) *FieldError {
	p := j.GetPart()
	switch {
	case p.GetResource() == "":
		return fieldErr("submit_job.part.resource", "must not be empty")
	case p.GetAmount() <= 0:
		return fieldErr("submit_job.part.amount", "must be > 0")
	case j.GetDurationMillis() <= 0:
		return fieldErr("submit_job.duration_millis", "must be > 0")
	case j.GetDurationMillis() > planner.MaxTime-j.GetNotBeforeMillis():
		return fieldErr("submit_job.duration_millis", "not_before + duration overflows")
	case ver >= versionEdge && j.GetDurationMillis() > MaxTimeMillis-j.GetNotBeforeMillis():
		return fieldErr("submit_job.duration_millis", "not_before + duration "+endOfTime)
	}
	return nil
}

// checkCoReserveHead checks a co-reservation's counts, joint threshold,
// sub-reservation IDs (id is the reservation's ID; an empty one, which
// the state machine replaces by a short one, is not checked) and labels.
func checkCoReserveHead(id string, c *fsmv1.CoReserve) *FieldError {
	subs, cands := c.GetSubs(), c.GetCandidates()
	switch {
	case len(subs) == 0:
		return fieldErr("co_reserve.subs", "must not be empty")
	case len(subs) > maxParts:
		return fieldErr("co_reserve.subs", fmt.Sprintf("more than %d sub-requests", maxParts))
	case len(cands) == 0:
		return fieldErr("co_reserve.candidates", "must not be empty")
	case len(cands) > maxParts:
		return fieldErr("co_reserve.candidates", fmt.Sprintf("more than %d candidates", maxParts))
	case c.GetMinJointPermille() > 1000:
		return fieldErr("co_reserve.min_joint_permille", "must be in 0..1000")
	case id != "" && len(coSubID(id, len(subs)-1)) > maxIDLen:
		return fieldErr("co_reserve.id", fmt.Sprintf("%q is longer than %d bytes", coSubID(id, len(subs)-1), maxIDLen))
	}
	return checkLabels("co_reserve.labels", c.GetLabels())
}

// checkCoCandidate checks candidate i: that it exists (Apply looks it
// up; Check knows only that no resource has an empty name) and is named
// once. seen collects the names.
func checkCoCandidate(i int, name string, exists bool, seen map[string]bool) *FieldError {
	f := fmt.Sprintf("co_reserve.candidates[%d]", i)
	if !exists {
		return fieldErr(f, fmt.Sprintf("no resource %q", name))
	}
	if seen[name] {
		return fieldErr(f, fmt.Sprintf("resource %q named twice", name))
	}
	seen[name] = true
	return nil
}

// checkCoSub checks sub-request i's amount and duration; Apply then
// refuses a start before the log time, then checkCoSubEnd runs.
func checkCoSub(i int, sub *fsmv1.CoSub) *FieldError {
	f := fmt.Sprintf("co_reserve.subs[%d].", i)
	switch {
	case sub.GetAmount() <= 0:
		return fieldErr(f+"amount", "must be > 0")
	case sub.GetDurationMillis() <= 0:
		return fieldErr(f+"duration_millis", "must be > 0")
	}
	return nil
}

// checkCoSubEnd refuses a sub-request that ends beyond the end of time
// (its start is >= 0).
func checkCoSubEnd(i int, sub *fsmv1.CoSub, ver uint32) *FieldError {
	if sub.GetDurationMillis() > planner.MaxTime-sub.GetStartMillis() {
		return fieldErr(fmt.Sprintf("co_reserve.subs[%d].duration_millis", i), "start + duration overflows")
	}
	if ver >= versionEdge && sub.GetDurationMillis() > MaxTimeMillis-sub.GetStartMillis() {
		return fieldErr(fmt.Sprintf("co_reserve.subs[%d].duration_millis", i), "start + duration "+endOfTime)
	}
	return nil
}

// ---- public field paths ----

// publicFields maps fsm field-path prefixes to the public requests',
// first match wins.
var publicFields = [][2]string{
	{"request.labels", "labels"}, {"request.hold_ttl_millis", "hold_ttl"},
	{"request.duration_millis", "shape.duration"}, {"request.not_before_millis", "shape.not_before"},
	{"request.deadline_millis", "shape.deadline"}, {"request.start_millis", "shape.exact_start"},
	{"request.", "shape."},
	{"modify.id", "id"}, {"modify.hold_ttl_millis", "hold_ttl"},
	{"modify.window_duration_millis", "shape.duration"}, {"modify.not_before_millis", "shape.not_before"},
	{"modify.deadline_millis", "shape.deadline"}, {"modify.start_millis", "shape.not_before"},
	{"modify.end_millis", "shape.duration"}, {"modify.", "shape."},
	{"target.id", "id"},
	{"update_resource.from_millis", "from"}, {"update_resource.to_millis", "to"}, {"update_resource.", ""},
	{"delete_resource.", ""},
	{"complete.at_millis", "at"}, {"complete.", ""},
	{"create_resource.policy.", "resource."}, {"create_resource.", "resource."},
	{"set_policy.policy.", ""}, {"set_policy.", ""},
	{"submit_job.part.", ""}, {"submit_job.part", "resource"}, {"submit_job.duration_millis", "duration"},
	{"submit_job.not_before_millis", "not_before"}, {"submit_job.", ""},
	{"unit_down.resource", "name"}, {"unit_down.from_millis", "from"}, {"unit_down.to_millis", "to"}, {"unit_down.", ""},
	{"unit_up.resource", "name"}, {"unit_up.", ""},
	{"change_units.resource", "name"}, {"change_units.", ""},
}

// PublicField renames a field path of a log command (Result.invalid.field,
// FieldError.Path) to the public API request's, e.g.
// "request.parts[1].amount" → "shape.parts[1].amount" and
// "co_reserve.subs[0].start_millis" → "subs[0].start". Paths it does not
// know (target.id, owner, ...) are returned unchanged.
func PublicField(fsmPath string) string {
	if rest, ok := strings.CutPrefix(fsmPath, "co_reserve."); ok {
		// subs[i].start_millis → subs[i].start, and duration alike.
		if strings.HasSuffix(rest, ".start_millis") || strings.HasSuffix(rest, ".duration_millis") {
			return strings.TrimSuffix(rest, "_millis")
		}
		return rest
	}
	if pub, ok := seriesPublicField(fsmPath); ok {
		return pub
	}
	for _, p := range publicFields {
		if rest, ok := strings.CutPrefix(fsmPath, p[0]); ok {
			return p[1] + rest
		}
	}
	return fsmPath
}

// ---- state lookups shared by the commands ----

// owned looks up the reservation a command targets and checks the owner.
func (s *state) owned(cmd *fsmv1.Command, field, id string) (*fsmv1.Reservation, *fsmv1.Result) {
	if fe := checkTargetID(field, id, s.ver); fe != nil {
		return nil, fe.result()
	}
	r, found := s.getForChange(id)
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
