package jepsen

import (
	"context"
	"time"
)

// Client is the narrow view of one ledgerd node's API that the harness
// needs. The workload addresses reservations by its own IDs (which it also
// sends as idempotency keys and as a label); an implementation maps them to
// server IDs. Implementations must be safe for concurrent use.
type Client interface {
	// Invoke performs one operation and classifies the answer. A definite
	// answer returns an Output with a code other than CodeUnknown and a nil
	// error; a domain refusal (rejection, not found, wrong state) is a
	// definite answer, not an error. When the outcome is unknown (timeout,
	// connection broken, leadership lost mid-write) it returns
	// Output{Code: CodeUnknown} and the error that caused it.
	Invoke(ctx context.Context, in Input) (Output, error)
	// Known reports whether the server-side reservation for a workload ID
	// is known, so that commit/abort/... can address it.
	Known(id string) bool
	// List returns every reservation this node holds, read locally without
	// a read barrier (so divergent replicas show up), keyed by workload ID
	// where the reservation carries one.
	List(ctx context.Context) ([]Reservation, error)
	// Leader returns the node name of the current leader as this node sees
	// it ("" when none is known).
	Leader(ctx context.Context) (string, error)
	// EnsureResource creates a resource with the given capacity, or
	// succeeds if it already exists with that capacity.
	EnsureResource(ctx context.Context, name string, capacity int64) error
}

// Reservation is one reservation as read back from a node for the
// end-of-run invariants.
type Reservation struct {
	ID       string // workload ID (label), "" for reservations made by others
	ServerID string
	Parts    []Part
	Start    int64 // Unix ms
	End      int64
	Status   Status
	// HoldExpiresAt is set for HELD reservations (Unix ms).
	HoldExpiresAt int64
	// Pending is a held modification, if any.
	Pending *PendingShape
	Version uint64
}

// PendingShape is a two-phase modification held next to the booked shape.
type PendingShape struct {
	Parts         []Part
	Start, End    int64
	HoldExpiresAt int64
}

// opTimeout bounds one client operation; past it the outcome is unknown.
const opTimeout = 3 * time.Second
