package planner

import (
	"errors"
	"fmt"
)

// Part is one resource's share of a request: Amount units of Resource.
type Part struct {
	Resource string
	Amount   int64
}

// Request asks for Duration time units on every Part, all starting at the
// same instant s with NotBefore <= s and s+Duration <= Deadline (the booking
// window). An exact start s is the window NotBefore = s, Deadline = s+Duration.
// Deadline = MaxTime means "no deadline".
type Request struct {
	Parts     []Part
	Duration  int64
	NotBefore int64
	Deadline  int64
}

// Decision is the outcome of an admission search.
type Decision struct {
	// Fits reports whether a start inside the booking window exists.
	Fits bool
	// Start is the earliest feasible start when Fits.
	Start int64
	// LaterOK and LaterStart: when !Fits, the earliest start >= NotBefore that
	// would fit if the deadline were ignored (brokers renegotiate with it).
	LaterOK    bool
	LaterStart int64
}

// Booking is an exact rectangle booked under an ID: every Part over [Start, End).
type Booking struct {
	ID    string
	Parts []Part
	Start int64
	End   int64
}

// Sentinel errors; test with errors.Is. Every error the planner returns wraps
// exactly one of these.
var (
	// ErrInvalid marks a malformed argument; the error is a *FieldError.
	ErrInvalid = errors.New("invalid argument")
	// ErrNoCapacity: the requested rectangle does not fit.
	ErrNoCapacity = errors.New("not enough free capacity")
	// ErrUnknownResource: no resource of that name.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrResourceExists: AddResource with a name already in use.
	ErrResourceExists = errors.New("resource already exists")
	// ErrDuplicateID: a booking with that ID already exists.
	ErrDuplicateID = errors.New("duplicate booking id")
	// ErrUnknownBooking: no booking with that ID.
	ErrUnknownBooking = errors.New("unknown booking")
	// ErrInUse: the resource still carries bookings.
	ErrInUse = errors.New("resource has bookings")
	// ErrCapacityConflict: a capacity change would overbook existing
	// bookings; the error is a *CapacityConflictError listing them.
	ErrCapacityConflict = errors.New("capacity change conflicts with bookings")
)

// FieldError names the argument that is wrong and why. It wraps ErrInvalid.
type FieldError struct {
	Field  string // e.g. "amount", "duration", "deadline", "parts[1].resource"
	Reason string // e.g. "must be > 0"
}

func (e *FieldError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// CapacityConflictError lists, sorted, the IDs of the bookings a capacity
// change would violate. It wraps ErrCapacityConflict.
type CapacityConflictError struct {
	Resource string
	Violated []string
}

func (e *CapacityConflictError) Error() string {
	return fmt.Sprintf("capacity change on %q would overbook %d booking(s): %v", e.Resource, len(e.Violated), e.Violated)
}

// Unwrap makes errors.Is(err, ErrCapacityConflict) true.
func (e *CapacityConflictError) Unwrap() error { return ErrCapacityConflict }
