package bridge

import (
	"errors"
	"fmt"
)

// The outcomes a driver distinguishes. Drivers return them inside *Error,
// so errors.Is(err, ErrOverlap) works and the manager's own message is kept.
var (
	// ErrOverlap: the reservation would overlap another one on a node.
	ErrOverlap = errors.New("overlaps another reservation")
	// ErrNodesBusy: the nodes are busy (allocated to jobs or unusable).
	ErrNodesBusy = errors.New("requested nodes are busy")
	// ErrDuplicateName: a reservation of that name exists already.
	ErrDuplicateName = errors.New("duplicate reservation name")
	// ErrInvalidName: the name is refused, by the bridge or the manager.
	ErrInvalidName = errors.New("invalid reservation name")
	// ErrTimeInPast: the start (or end) lies in the past.
	ErrTimeInPast = errors.New("time in the past")
	// ErrUnknownReservation: no reservation of that name exists.
	ErrUnknownReservation = errors.New("unknown reservation")
	// ErrInUse: the reservation has jobs running and cannot be deleted.
	ErrInUse = errors.New("reservation in use")
	// ErrInvalidNodes: a node name is unknown to the manager.
	ErrInvalidNodes = errors.New("invalid node name")
	// ErrInvalidUser: a user or account is unknown to the manager.
	ErrInvalidUser = errors.New("invalid user or account")
	// ErrUnknownPartition: no partition (queue) of that name exists.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrUnavailable: the manager could not be reached before the
	// context ended; the outcome of a write is unknown.
	ErrUnavailable = errors.New("resource manager unavailable")
	// ErrNotOwned: the name lacks the bridge's prefix; nothing was sent.
	ErrNotOwned = errors.New("not owned by the bridge")
	// ErrOther: any other refusal; Error.Message says what.
	ErrOther = errors.New("refused by the resource manager")
)

// Error is a driver's failure: which operation on which reservation, the
// kind (one of the Err* values, matched with errors.Is) and the manager's
// own message, verbatim, for the materialization state and the operator.
type Error struct {
	Op      string // "create", "update", "delete", "list", "nodes"
	Name    string // reservation or partition name, if any
	Kind    error  // one of the Err* values
	Message string // the manager's message (stderr), trimmed
}

// Error reads "op name: kind: message".
func (e *Error) Error() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	if e.Message == "" {
		return fmt.Sprintf("%s%s: %v", e.Op, name, e.Kind)
	}
	return fmt.Sprintf("%s%s: %v: %s", e.Op, name, e.Kind, e.Message)
}

// Unwrap returns the kind, so errors.Is(err, ErrOverlap) matches.
func (e *Error) Unwrap() error { return e.Kind }
