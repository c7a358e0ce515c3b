// Package replicated implements the ledger contract (package ledger) on
// the Raft-replicated state machine: it is the one place where API
// requests become fsm commands and fsm results and errors become API
// answers and ledger errors.
//
// A write is built as an fsm command, encoded once (fsm.Encode), handed to
// a Log (a cluster.Node: forwarded to the leader, stamped with its clock,
// replicated and applied on every node) and its encoded fsm.Result is
// decoded and mapped to the API once. A read waits on the Log's read
// barrier unless the caller accepts stale data, then reads the local FSM.
// Cluster maps the operator view of a cluster.Node. The operations of one
// API Batch share a pipeline (Pipeline): their writes go to the log back to
// back in one ApplyBatch, their reads share one barrier, which the writes'
// round stands in for when this node applied them as the leader.
//
// Every write carries an idempotency key: one that came without gets a
// fresh key here, on the node that takes the request, once per request,
// so the cluster may send it again to a new leader when the leadership
// moves while its outcome is unknown (cluster.Config.Idempotent) and the
// FSM applies it once.
//
// Rolling upgrades: a command is written as the highest fsm envelope
// version every server of the cluster can apply — the Log's
// CommonEnvelopeVersion when it offers one (Versioner), this release's
// fsm.CurrentVersion otherwise (a local log). A command that needs a
// newer version takes the older way where one exists (a forced delete as
// one write per reservation then the delete, a modification whose start
// is found here first, an idempotency key without fingerprint) and is
// refused with ledger.ErrUnavailable (ErrMidUpgrade) where none does. The
// newest checks of fsm.Check run whatever version is written: they only
// add refusals, so nothing accepted here is refused by any replica.
// Reads clamp instants a Timestamp cannot carry (rows stored by a release
// that booked past 9999), so every reader can answer.
//
// What it must not do: decide admissions (the FSM does, at apply time),
// keep state of its own, or read a clock for anything that reaches the
// log (the leader stamps time into every command).
package replicated
