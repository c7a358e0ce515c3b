// Package fsm is the replicated state machine of ledgerd: it turns the
// ordered entries of the Raft log into the reservation ledger. It owns the
// versioned command envelope (Encode, Decode, Stamp, TickCommand), the
// field validator that the edge and Apply share (Check), the resource and
// reservation tables with the reservation lifecycle
//
//	HELD → COMMITTED → ACTIVE → COMPLETED   (the last two by log time)
//	HELD → ABORTED | EXPIRED
//	COMMITTED | ACTIVE → CANCELLED
//	COMMITTED | ACTIVE → COMPLETED early (Complete; requested duration kept)
//	PENDING_APPROVAL → COMMITTED | DENIED | ABORTED | EXPIRED   (limits.go)
//
// two-phase modification (the new shape is held beside the old one until
// commit swaps them or abort drops the new one), deterministic hold expiry,
// idempotency keys, an event history versioned by log index, and
// deterministic snapshots. Admission decisions are delegated to a
// planner.Planner that the FSM owns and rebuilds on restore. Standing
// reservations (series.go) are a table of series and their watermarks;
// their occurrences, expanded into instants before they are proposed,
// are booked as ordinary reservations through the same admission — a
// rule is never expanded here. Per-tenant limits with approval are a
// limit table changed by logged commands, with usage kept up to date on
// every row change (limits.go, usage.go).
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
//     ErrMalformed. If such an entry reaches Apply anyway, Apply panics,
//     because a replica that skipped it could diverge from one (of a newer
//     release) that applied it.
//  2. Domain outcomes (bad field, no capacity, unknown ID, wrong state,
//     owner mismatch, capacity conflict) are deterministic Result values
//     with a status code; they change nothing and are the same on every
//     replica. The bad fields that no state can make acceptable are also
//     reported by Check, before anything is replicated (a *FieldError).
//  3. Errors of the read side and of snapshot decoding are ordinary Go
//     errors wrapped with %w (ErrBadSnapshot, planner sentinels), for
//     errors.Is.
//
// Apply answers each command with an *Applied: the encoded Result (what
// a forwarded caller receives and what an idempotency record keeps) and
// the Result message it encodes. The node whose FSM applied the command
// reads the message (ResultOf) instead of decoding the bytes; it shares
// rows with the state and must only be read.
//
// Caller's duties, along the path of a write:
//
//  1. The edge (the node that received the request) builds the command and
//     calls Check, and refuses a *FieldError as invalid input (its Field
//     is the public request's field, see PublicField) without replicating
//     anything. Check reads only the Config and may run on any goroutine.
//     Apply runs the same checks, so a command that passes Check is only
//     refused for reasons that depend on the state.
//  2. The edge encodes the command once (Encode). Those bytes travel as
//     they are: to the leader when the edge is a follower, and into the
//     log.
//  3. The leader stamps each command with its clock right before
//     raft.Apply (Stamp). Stamp does not decode: it splices now_millis into
//     the bytes, which costs one allocation and gives the same bytes the
//     encoder would.
//  4. Because the leader no longer decodes what it stamps, the cluster
//     layer must call Decode on every command that arrives from another
//     node (a forwarded write) before proposing it, and return its
//     ErrMalformed to the sender; that is what keeps Apply from panicking.
//     Commands encoded in-process by Encode (and TickCommand) need no
//     such check: Encode refuses what Decode would.
//  5. The leader may let several admissions share one log entry (group
//     commit, group.go): GroupCommands takes the stamped commands it is
//     about to propose and returns a TYPE_GROUP entry of the longest
//     group-safe prefix, which it proposes as is (never stamped again),
//     but only once every server applies envelope version GroupVersion.
//     Apply returns []any for such an entry, one *Applied per member,
//     for the caller of each. A command from another node that is
//     itself a group is refused: only the leader builds groups. Several
//     reservations of one group may take their ID from the index: they
//     are named GroupAutoID(index, n).
//  6. Give every replica the same Config; apply TickCommand (stamped)
//     periodically so holds expire without other traffic; wait for
//     changes with Notify (a channel closed after each apply) instead of
//     polling. Read methods may be called from any goroutine at any time.
package fsm
