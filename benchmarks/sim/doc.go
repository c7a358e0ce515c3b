// Package sim is a discrete-event simulator that drives the planner's
// Scheduler (no network, no replication) with actual runtimes, early
// completions and the three admission policies (REJECT, MOVE_VARIABLE,
// RELAXED), and reproduces two papers: Heine et al. (variable jobs move to
// let reservations in; KTH SP2 trace, seed 001 §4) and Xiao & Hu (relaxed
// reservations over several clusters; Lublin–Feitelson workload, seed 002
// §V). The command in cmd/simexp writes the tables and plots committed
// under results/.
//
// It measures; it decides nothing for the ledger. It may read files and use
// seeded random numbers, which planner/ and fsm/ must not; nothing in the
// product imports it. Simulated time is the trace's seconds (integers).
package sim
