// Command seedexp runs the seed papers' cluster experiment (Schneider &
// Linnert): a 128-CPU resource, Lublin–Feitelson reservations with booking
// windows swept over overloading interarrival times, plus a replay of the
// KTH SP2 trace, on the list, indexed and slotted timelines. It prints a
// markdown table on stdout, progress on stderr, and writes results.md,
// results.csv and results.svg into -out. -quick runs a tiny sweep that the
// package's test uses to check the structural facts.
//
// Run it from the repository root, so that the default trace path
// (../shared/workloads/...) resolves:
//
//	go run -tags hashicorpmetrics ./benchmarks/seed/cmd/seedexp -out benchmarks/seed/results
//
// It is a measuring tool: it must not be imported by, or start anything
// of, the ledger service, and it never writes outside -out. The traces it
// reads stay where they are.
package main
