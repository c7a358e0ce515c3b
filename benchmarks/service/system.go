package service

import (
	"context"
	"errors"
	"fmt"
)

// Shape is one single-resource request: Amount units of Resource for
// Duration milliseconds, starting no earlier than NotBefore and ending no
// later than Deadline (Unix milliseconds).
type Shape struct {
	Resource  string
	Amount    int64
	Duration  int64
	NotBefore int64
	Deadline  int64
}

// Validate reports the first field that makes s unusable.
func (s Shape) Validate() error {
	switch {
	case s.Resource == "":
		return errors.New("shape: resource is empty")
	case s.Amount <= 0:
		return fmt.Errorf("shape: amount = %d: must be > 0", s.Amount)
	case s.Duration <= 0:
		return fmt.Errorf("shape: duration = %d: must be > 0", s.Duration)
	case s.NotBefore+s.Duration > s.Deadline:
		return fmt.Errorf("shape: deadline %d is before not_before %d + duration %d", s.Deadline, s.NotBefore, s.Duration)
	}
	return nil
}

// Booking is an admitted reservation as the load generator tracks it.
type Booking struct {
	ID    string
	Shape Shape
	Start int64 // admitted start, Unix ms
}

// ErrRejected is returned (wrapped) by a System when a request does not fit
// its window: a correct refusal, counted apart from errors.
var ErrRejected = errors.New("rejected: does not fit")

// System is what the load generator drives. Every method must be safe for
// concurrent use. A refusal to admit returns an error wrapping ErrRejected.
type System interface {
	// Name labels the system in reports.
	Name() string
	// Setup creates the resources, each with the given capacity.
	Setup(ctx context.Context, resources []string, capacity int64) error
	// Reserve books s in one step (hold and commit at once).
	Reserve(ctx context.Context, s Shape) (Booking, error)
	// HoldCommit holds s and then commits the hold: two client calls.
	HoldCommit(ctx context.Context, s Shape) (Booking, error)
	// Modify replaces b's shape with s; on refusal b stays as it was.
	Modify(ctx context.Context, b Booking, s Shape) (Booking, error)
	// Cancel releases b.
	Cancel(ctx context.Context, b Booking) error
	// Read fetches b (a linearizable read where the system offers one).
	Read(ctx context.Context, b Booking) error
	// ErrorCode names the class of a non-rejection error for the report.
	ErrorCode(err error) string
	// Close releases what the System holds.
	Close() error
}

// Verifier is implemented by systems that can read their whole state back
// and check it: no resource booked beyond its capacity at any instant.
type Verifier interface {
	// Verify returns the number of bookings read back, or an error that
	// describes the first violation.
	Verify(ctx context.Context) (int, error)
}
