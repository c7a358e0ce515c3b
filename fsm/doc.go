// Package fsm is the replicated state machine of ledgerd: it turns the
// ordered entries of the Raft log into the reservation ledger. It owns the
// versioned command envelope (Encode, Decode, Stamp, TickCommand), the
// resource and reservation tables with the reservation lifecycle
//
//	HELD → COMMITTED → ACTIVE → COMPLETED   (the last two by log time)
//	HELD → ABORTED | EXPIRED
//	COMMITTED | ACTIVE → CANCELLED
//	COMMITTED | ACTIVE → COMPLETED early (Complete; requested duration kept)
//
// two-phase modification (the new shape is held beside the old one until
// commit swaps them or abort drops the new one), deterministic hold expiry,
// idempotency keys, an event history versioned by log index, and
// deterministic snapshots. Admission decisions are delegated to a
// planner.Planner that the FSM owns and rebuilds on restore.
//
// What it must not do: read a clock, draw random numbers, start
// goroutines, do network or disk I/O outside Persist/Restore, or let map
// iteration order reach a result, an event or a snapshot. Log time is
// max(previous log time, the leader's stamp in the entry), so it never
// runs backwards. It knows nothing of networks or of leadership.
//
// Three classes of error:
//
//  1. Malformed entries (undecodable bytes, unknown type or envelope
//     version, payload not matching the type) are refused by Decode with
//     ErrMalformed. The cluster layer must call Decode (or Validate) before
//     raft.Apply; if such an entry reaches Apply anyway, Apply panics,
//     because a replica that skipped it could diverge from one (of a newer
//     release) that applied it.
//  2. Domain outcomes (bad field, no capacity, unknown ID, wrong state,
//     owner mismatch, capacity conflict) are deterministic Result values
//     with a status code; they change nothing and are the same on every
//     replica.
//  3. Errors of the read side and of snapshot decoding are ordinary Go
//     errors wrapped with %w (ErrBadSnapshot, planner sentinels), for
//     errors.Is.
//
// Caller's duties: give every replica the same Config; stamp each command
// with the leader's clock (Stamp) right before raft.Apply; apply
// TickCommand periodically so holds expire without other traffic; wait for
// changes with Notify (a channel closed after each apply) instead of
// polling. Read methods may be called from any goroutine at any time.
package fsm
