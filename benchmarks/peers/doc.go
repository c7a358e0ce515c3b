// Package peers holds the systems a site would otherwise build a reservation
// service on, doing the same admission as ledgerd so that the load generator
// of benchmarks/service can drive them side by side:
//
//   - Etcd: an embedded three-member etcd cluster; bookings are stored per
//     resource, fit is decided by the client (service.EarliestFit) and the
//     new list is committed with a compare on the resource key's revision,
//     retried on conflict.
//   - Postgres: one PostgreSQL server (or a primary with a synchronous
//     standby: the caller starts the servers, the client code is the same);
//     admission in a transaction holding the resource's row lock (SELECT
//     ... FOR UPDATE), fit decided by the client the same way.
//
// Both can read their whole state back and check that no resource is booked
// over capacity (service.Verifier).
//
// It is a nested module so that etcd's and pgx's dependency trees stay out
// of the main module. It is benchmark code only: the product must never
// import it, and it must not be part of the default test suite's timing.
package peers
