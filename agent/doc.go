// Package agent assembles one ledgerd server: its configuration (keys,
// defaults, the JSON file, LEDGERD_* variables and flags; Config,
// ParseArgs), the TLS material of its listeners, the FSM, the cluster
// node, the ledger, the public API, metrics and health on one HTTP mux, the
// dev playground's sample data, and offline recovery of a lost quorum
// (PlanRecovery). New is the one constructor used by the ledgerd command,
// by the in-process test harness (agenttest) and by benchmarks, so that a
// node is put together in exactly one place.
//
// What it must not do: hold reservation logic (that is fsm, planner and
// ledger/replicated), parse the command line beyond the agent's own
// configuration (that is cmd/ledgerd), or start anything in New that
// Shutdown and Close do not stop.
//
// Caller's duties: validate the Config (ParseArgs does); call Start to
// serve HTTP; call Shutdown for a graceful stop (hand over leadership,
// leave, snapshot) or Close to stop at once.
package agent
