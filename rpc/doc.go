// Package rpc serves ledgerd's public API — ReservationService,
// ResourceService and ClusterService from package ledgerd.v1 — as Connect,
// gRPC and gRPC-Web on one port, together with standard gRPC health and
// reflection.
//
// It owns the edge of the system: it converts protobuf Timestamps and
// Durations into the integer Unix milliseconds used inside, validates every
// request (InvalidArgument naming the field, never a panic), authenticates
// callers (TLS / mutual TLS, bearer tokens mapped to tenants, an operator
// role), enforces tenancy, size and rate limits and CORS, and maps ledger
// outcomes to Connect codes with machine-readable details (see errors.go and
// README.md).
//
// What it must not do: decide admissions, keep reservation state, or import
// the FSM, the planner or the cluster layer (deps_test.go enforces this).
// Everything stateful goes through the ledger.Ledger and ledger.Cluster
// interfaces; the agent supplies the implementations of ledger/replicated.
// A Batch runs its operations through a ledger.Pipeline when the ledger
// offers one. The handlers hold no locks and are safe for concurrent use.
//
// Caller's duties: build a Server with New, mount it with Server.Mount (or
// serve Server.Handler) on an http.Server that speaks HTTP/1.1 and HTTP/2
// (h2c when not using TLS, see ServeProtocols), and supply a clock only in
// tests.
package rpc
