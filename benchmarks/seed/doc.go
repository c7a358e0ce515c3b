// Package seed reproduces the cluster experiment of Schneider & Linnert
// (journal version §8.1, conference version §7): one resource (128 CPUs in
// the papers), a synthetic Lublin–Feitelson job stream turned into advance
// reservations with booking windows, swept over mean interarrival times
// that overload the resource, and replayed on each timeline implementation
// — the free-block list, the indexed timeline, and slotted time with 90,
// 9,000 and 900,000 slots over the book-ahead horizon. It reports the
// success rate and the CPU time per reservation request, and replays any
// SWF trace the same way, on the capacity its header declares, counting
// every job the conversion drops or adjusts. Frozen copies of the indexed
// and the slotted timeline as of the baseline commit run beside the current
// ones, so that a single run shows what changed. The command in
// cmd/seedexp writes the tables and the plot committed under results/.
//
// It measures; it does not decide anything for the ledger. It may read
// files, the clock and seeded random numbers, which planner/ and fsm/ must
// not; nothing in the product imports it. A Run is single-threaded so that
// per-request times are not disturbed by its own goroutines.
package seed
