// Package cluster wires a raft.FSM into a replicated service: hashicorp/raft
// with raft-boltdb/v2 for the log and stable store, a file snapshot store, a
// TCP (optionally mutual-TLS) transport, memberlist gossip for discovery,
// bootstrap and membership, and raft-autopilot for promoting caught-up
// non-voters and pruning dead servers.
//
// What it offers callers: Apply on any node (followers forward to the leader
// over HTTP, the leader stamps its clock into the command first),
// ReadBarrier for linearizable reads, membership views and operator actions,
// and an http.Handler with the internal endpoints peers call on each other.
//
// What it must not do: interpret commands or results (they are opaque bytes
// produced and consumed by the FSM and its callers), read FSM state, or let
// any node other than the current leader change the Raft configuration.
// Gossip events are hints; only the leader's membership goroutine turns them
// into configuration changes.
//
// Caller's duties: supply an FSM whose Apply returns []byte (or an error)
// and is deterministic; mount Handler under /internal/ on the HTTP server
// whose address is Config.RPCAdvertise; call Shutdown exactly once.
package cluster
