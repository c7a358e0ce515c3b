// Command chaos runs a long chaos campaign against a real ledgerd cluster:
// it builds the agent, starts N nodes behind fault-injecting proxies, runs
// concurrent clients while nemeses inject faults, then checks the history
// for linearizability and the replicas for the ledger's invariants.
//
//	go run ./jepsen/cmd/chaos -nodes 5 -duration 10m -nemesis kill,partition,pause
//
// It prints progress lines while it runs and the summary at the end; the
// full report, the history and any failing visualization land in -dir.
// The exit code is 0 on pass, 1 when the run found a violation, 2 when the
// campaign could not run.
//
// What it must not do: touch anything outside its output directory and the
// processes it started; it needs no root and leaves no process behind (every
// node is killed on exit, also on Ctrl-C).
package main
