package ledger

import (
	"context"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// Materialization: the bridge to the site's resource manager (Slurm)
// records, through the log, whether each reservation it follows exists
// there. MaterializationLedger is the part of the contract it writes
// through; readers see the record on Reservation.materialization and as
// EVENT_TYPE_MATERIALIZATION events.

// MaterializationUpdate is the new record of one reservation: its State,
// Message (why it failed, or what it waits for), its Name in the resource
// manager, and, once materialized, the Units (sorted) and window [Start,
// End) in Unix ms (whole seconds) written there.
type MaterializationUpdate struct {
	ID      string
	State   ledgerdv1.MaterializationState
	Message string
	Name    string
	Units   []string
	Start   int64
	End     int64
}

// MaterializationLedger is implemented by ledgers that store
// materialization records. Implementations must be safe for concurrent
// use and return the error values of ledger.go.
type MaterializationLedger interface {
	// SetMaterialization stores the records in one write. Reservations
	// that are unknown or over by then are skipped, and a record equal to
	// the stored one changes nothing. A record that says MATERIALIZED
	// with the units and window the reservation holds pins its units:
	// admission no longer moves it to other units. A cluster with a
	// server that cannot store records refuses the write (ErrUnavailable)
	// without proposing it.
	SetMaterialization(ctx context.Context, w Write, updates []MaterializationUpdate) error
}
