// Package ledger is the contract between ledgerd's API edge and the
// replicated ledger: the Ledger and Cluster interfaces, their argument
// types in integer Unix milliseconds, the outcome errors the edge maps to
// API codes (ErrNotFound, *RejectedError, *FieldError, ...), and Pipeliner
// for running the operations of one batch together.
//
// The implementation on the Raft-replicated FSM is in ledger/replicated;
// the agent assembles it. Keeping the contract apart is what lets the edge
// (package rpc) import this package without importing the FSM, the planner
// or the cluster layer: a deps test in rpc enforces that.
//
// What it must not do: import fsm, planner or cluster, hold state, or
// decide anything. Implementations must be safe for concurrent use and
// return the errors of this package (wrapped with %w) for the outcomes the
// API distinguishes.
package ledger
