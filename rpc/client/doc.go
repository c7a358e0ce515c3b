// Package client is the Go client of ledgerd for brokers and tools.
//
// A Client talks to one ledgerd cluster through any of its nodes. It sends
// writes straight to the leader named by the last response (a follower
// would forward them: one more hop) and spreads reads over the nodes. It
// fills in an idempotency key for
// every mutating call that has none and retries calls that failed with
// Unavailable — no leader during an election, a node down, an outcome left
// unknown by a lost leadership — on the next node with exponential backoff
// and jitter. Because a retry carries the same key, a write is applied at
// most once however often it is retried.
//
// No call waits out its deadline on a node that has stopped answering (a
// leader frozen by a long pause): an attempt ends after
// Options.AttemptTimeout without an answer, or, on the node known as the
// leader, as soon as a response to another call names a new leader, and
// the call moves on with the same key (routing.go).
//
// Concurrent calls to one node travel together as Batch calls
// (coalesce.go) over kept-alive HTTP/1.1 connections; every other call
// (lists, streams, everything of an Options.NoCoalesce client) and the
// gRPC protocol multiplex over HTTP/2 (Options.HTTP says why and
// overrides it).
//
// CoAllocate (coalloc.go) books one request on several ledgerd clusters
// (sites) with the hold → commit / abort protocol of HARC and PluS; see its
// documentation for the guarantees.
//
// What it must not do: retry non-idempotent work without a key, hide a
// rejection (errors keep their Connect code and details), or keep state
// beyond the node list, the round-robin position and the last leader seen.
package client
