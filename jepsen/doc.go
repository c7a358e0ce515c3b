// Package jepsen is ledgerd's chaos and linearizability harness. It starts
// real `ledgerd agent` processes on loopback, puts a fault-injecting TCP proxy
// on every node-to-node link, drives concurrent clients that record a history
// of invocations and completions, injects faults on a schedule (kill -9,
// SIGSTOP/SIGCONT, partitions, slow and lossy links, membership changes,
// full-cluster restarts) and then checks the history: linearizability
// against a sequential ledger model with porcupine, plus end-of-run
// invariants read from every node (no overbooking, identical replicas,
// durable acknowledged commits, holds expire, idempotent retries apply once).
//
// The pieces are usable on their own: Model and Check work on any recorded
// History (tests feed them synthetic and checked-in histories with known
// verdicts); Proxy is a plain TCP forwarder with faults; Cluster manages
// processes; Security makes the CA, certificates, gossip key and token
// that secure every node and client of a run (clusters are mutual TLS
// everywhere unless made Insecure); Run ties everything into a campaign
// and writes a Report.
//
// What it must not do: it is test tooling, never imported by the product
// packages; it needs no root privileges, iptables or containers (faults are
// injected in user space); it never treats an unknown outcome (timeout,
// broken connection) as a failure or as a success — such operations stay
// pending forever in the history, so the checker considers both the world in
// which they took effect and the one in which they did not.
//
// Caller's duties: give every operation a unique reservation ID (it doubles
// as the idempotency key), keep resource groups independent (an operation
// touches resources of one group only) so histories partition, and keep the
// number of concurrent clients per group small (the check is exponential in
// concurrency).
package jepsen
