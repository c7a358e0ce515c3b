// Package cluster wires a raft.FSM into a replicated service: hashicorp/raft
// with raft-boltdb/v2 for the log and stable store, a file snapshot store, a
// TCP (optionally mutual-TLS) transport, memberlist gossip for discovery,
// bootstrap and membership, and raft-autopilot for promoting caught-up
// non-voters and pruning dead servers. DESIGN.md explains the protocols.
//
// What it offers callers: Apply on any node (followers forward to the leader
// over HTTP, the leader stamps its clock into the command first);
// ReadBarrier for linearizable reads (callers that accept stale data read
// the FSM without it); Leader, Members, TransferLeadership, RemoveServer,
// SaveSnapshot and RestoreSnapshot for operators; Ready for /readyz; and an
// http.Handler with the internal endpoints peers call on each other.
//
// What it must not do: interpret commands or results (they are opaque bytes
// produced and consumed by the FSM and its callers), read FSM state, or let
// any node other than the current leader change the Raft configuration.
// Gossip events are hints; only the leader's membership goroutine turns them
// into configuration changes.
//
// Caller's duties: supply an FSM whose Apply is deterministic and returns
// []byte (or an error); if the FSM needs entries validated before they enter
// the log, do it in Config.Stamp, which the leader runs on every command;
// mount Handler under /internal/ on the HTTP server whose address is
// Config.RPCAdvertise; set Config.GossipKey outside trusted networks (it
// also guards the internal endpoints); treat ErrOutcomeUnknown as "retry
// with the same idempotency key"; call Shutdown once.
//
// Errors: ErrNoLeader, ErrNotLeader, ErrShutdown and ErrOutcomeUnknown are
// always wrapped with %w; an error returned by the FSM is an *ApplyError.
package cluster
