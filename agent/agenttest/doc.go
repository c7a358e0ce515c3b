// Package agenttest runs real ledgerd API servers in-process for tests of the
// API, the Go client and the CLI: the real rpc.Server and the real fsm,
// either behind a single-replica local log with a settable clock (Site) or
// behind real Raft clusters of cluster.Node (Cluster).
//
// What it must not do: be imported by non-test code, or fake any decision
// the ledger makes — only the replication layer of Site is simplified.
package agenttest
