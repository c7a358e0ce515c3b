package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
)

// Results: the domain outcomes Apply returns (a status with its detail),
// and the mapping of planner errors onto them.

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
	modifyWindowFields = fieldMap{"modify.", map[string]string{
		"duration": "window_duration_millis", "not_before": "not_before_millis", "deadline": "deadline_millis",
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
