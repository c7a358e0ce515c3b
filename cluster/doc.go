// Package cluster wires a raft.FSM into a replicated service: hashicorp/raft
// with raft-boltdb/v2 for the stable store and hashicorp/raft-wal (or
// raft-boltdb/v2, Config.LogStore) for the log, a file snapshot store, a
// TCP (optionally mutual-TLS) transport, memberlist gossip for discovery,
// bootstrap and membership, and raft-autopilot for promoting caught-up
// non-voters and pruning dead servers. DESIGN.md explains the protocols.
//
// What it offers callers: Apply and ApplyBatch on any node (one write
// path: Apply is a batch of one; a follower forwards the commands to the
// leader in one HTTP request to /internal/applybatch; the leader checks
// commands from peers with Config.Check and stamps its clock into every
// command with Config.Stamp, and, with Config.Group once every server
// can apply it, lets runs of a batch's commands share one log entry
// while each keeps its own result; a forward or read-index call to a leader
// that stops answering ends as soon as this node sees the leadership
// move, and goes to the new leader); ReadBarrier for linearizable reads (callers
// that accept stale data read the FSM without it); a leader tick for
// time-triggered work, applied when Config.NextDue says work is due (or
// every TickInterval without it); Leader, Members, TransferLeadership,
// RemoveServer, SaveSnapshot, RestoreSnapshot and GossipKeyring (gossip
// key rotation) for operators; Ready for /readyz; CommonEnvelopeVersion,
// the FSM envelope version every server can apply; and an http.Handler with the internal endpoints peers call on
// each other (the single-command /internal/apply is deprecated and served
// only until 0.3.0, for rolling upgrades from 0.1.0).
//
// What it must not do: interpret commands or results (they are opaque bytes
// produced and consumed by the FSM and its callers), read FSM state (the
// next due time is an answer the FSM gives through Config.NextDue), or let
// any node other than the current leader change the Raft configuration.
// Gossip events are hints; only the leader's membership goroutine turns them
// into configuration changes.
//
// Caller's duties: supply an FSM whose Apply is deterministic and returns
// []byte (or an error), and, for a group entry built by Config.Group,
// []any with one such response per member; validate commands that arrive from other servers in
// Config.Check (the leader runs it on every forwarded command before it
// enters the log: an undecodable entry would stop every replica), and keep
// Config.Stamp, which the leader runs on every command, to stamping
// well-formed input; give Config.NextDue with Config.Tick, safe to call
// while the FSM applies entries, so the leader ticks only when work is due;
// mount Handler under /internal/ on the HTTP server whose address is
// Config.RPCAdvertise; set Config.GossipKey outside trusted networks (it
// also guards the internal endpoints), and Config.RPCTLS with a
// configuration that accepts only server certificates (a gossip member
// joins Raft only after proving itself over it); give Config.Idempotent
// so that a write left in doubt when the leadership moves is sent again
// to the new leader (only commands the FSM deduplicates); treat
// ErrOutcomeUnknown as "retry with the same idempotency key"; call
// Shutdown once.
//
// Errors: ErrNoLeader, ErrNotLeader, ErrShutdown and ErrOutcomeUnknown are
// always wrapped with %w; an error returned by the FSM is an *ApplyError.
package cluster
