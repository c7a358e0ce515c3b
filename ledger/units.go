package ledger

import (
	"context"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// Concrete units: a resource may consist of named units (nodes), and every
// booking on it that holds capacity names the units it holds
// (Reservation.units). UnitLedger is the part of the contract for them;
// a Ledger that does not implement it has no resources with units (the
// API answers Unimplemented for its calls).

// ReasonUnmappable is the Reason of a RejectedError on a resource with
// units when enough units are free in sum but no set of units is free for
// the whole window (the unit policy REFUSE, or a booking that may not
// move in the way). LaterStart is then the earliest start that maps.
const ReasonUnmappable = "UNMAPPABLE"

// UnitDownArgs are the arguments of UnitLedger.UnitDown: unit Unit of
// resource Name is out of service over [From, To) (Unix ms; From 0 or in
// the past means now). ID names the window; empty lets the ledger assign
// one.
type UnitDownArgs struct {
	Write
	Name string
	Unit string
	From int64
	To   int64
	ID   string
}

// UnitBooking is one booking of a resource with units as a resource
// manager bridge reads it: reservation ID (or its pending new shape, when
// Pending) holding Units over [Start, End) in State.
type UnitBooking struct {
	ID      string
	Pending bool
	State   ledgerdv1.ReservationState
	Start   int64
	End     int64
	Units   []string
}

// UnitLedger is implemented by ledgers that support resources with units.
// Implementations must be safe for concurrent use and return the error
// values of ledger.go.
type UnitLedger interface {
	// UnitDown takes a unit out of service over a window. Bookings on the
	// unit in the window move to spare units (each move an event), or the
	// call fails with ErrInUse naming them. It returns the resource after
	// the change and the window's ID.
	UnitDown(ctx context.Context, a UnitDownArgs) (*ledgerdv1.Resource, string, error)
	// UnitUp ends a down window at once.
	UnitUp(ctx context.Context, w Write, name, id string) (*ledgerdv1.Resource, error)
	// ChangeUnits adds the units add to and removes the units remove
	// from resource name (nodes joining or leaving a partition).
	// Bookings on a removed unit that have not started move to spare
	// units (each move an event); when one has started, has no spare
	// unit, or the unit policy is REFUSE, the call fails with ErrInUse
	// naming the reservations. Bad names are FieldErrors on "add" or
	// "remove". It returns the resource after the change.
	ChangeUnits(ctx context.Context, w Write, name string, add, remove []string) (*ledgerdv1.Resource, error)
	// UnitBookings lists the live bookings of a resource with units with
	// their units and windows, sorted by ID (a pending new shape right
	// after its reservation), and the down windows in effect, sorted by
	// ID. It costs one pass over the resource's own bookings, not over
	// the reservation table. ErrNotFound for an unknown resource; a
	// FieldError on "name" for one without units.
	UnitBookings(ctx context.Context, resource string, stale bool) ([]UnitBooking, []*ledgerdv1.UnitWindow, error)
}
