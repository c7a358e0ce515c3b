// Package bridge is the resource-manager-neutral half of the bridge that
// makes a site's batch system (Slurm first, PBS could follow) honour the
// ledger's bookings: the Driver interface a resource manager implements,
// the values that cross it (Spec, Reservation, Node), the typed errors a
// driver maps its manager's messages to, and the pure reconcile core
// (Reconcile) that turns a desired set and an observed set into actions and
// a drift report, and a round's outcome into materialization states
// (Statuses).
//
// The bridge is level-triggered, like a controller: each round it reads the
// whole observed set, computes the difference to the whole desired set and
// applies it. A round that fails half-way is repaired by the next one, so
// nothing here keeps state between rounds.
//
// Ownership: the bridge owns exactly the reservations whose name carries its
// prefix. Reconcile never proposes an action on any other reservation; it
// reports them (Plan.Foreign), and those flagged as maintenance separately
// (Plan.Maintenance), so that the ledger side can turn a hand-made
// maintenance reservation into a maintenance window. Drivers refuse a
// write to an unowned name as a second line of defence (ErrNotOwned).
//
// What it must not do: perform I/O, read a clock, start goroutines or
// depend on map order in Reconcile and Diff (time is an argument, so the
// same inputs give the same plan; a test checks the imports and calls), or
// know the ledger's reservation types: the ledger side maps its
// reservations to Specs (prefix + ledger id as the name, mapped units as
// nodes, the tenant mapped to users/accounts) before calling Reconcile.
//
// Caller's duties: name every Spec with the prefix; give Reconcile the full
// observed set (owned and foreign) from one Driver.Reservations call and
// the same now for the whole round; apply a Plan's actions in their order
// (Apply does) and start the next round from a fresh observation.
package bridge
