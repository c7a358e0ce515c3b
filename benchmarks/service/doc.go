// Package service is the service-level load generator of ledgerd: closed-loop
// clients drive a mix of one-phase reserve, hold+commit, modify, cancel and
// reads with reservation shapes drawn from the Lublin–Feitelson model against
// any System — ledgerd over its public API, raw hashicorp/raft Apply (the
// ceiling of the consensus library), and, in the nested peers module, etcd
// and PostgreSQL doing the same admission — and reports ops/s, latency
// percentiles per operation, acceptance rate and errors by code.
//
// It also holds the client-side admission helpers (EarliestFit, Overbooked)
// that the peers use to decide fit and to check their decisions afterwards.
//
// It is benchmark infrastructure: nothing in the product may import it, it
// must not reach into server internals (it talks to ledgerd only through
// the public API and client), and it must never be part of a timed unit test;
// speed is measured by the loadgen command, not by go test.
package service
