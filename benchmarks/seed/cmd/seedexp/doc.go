// Command seedexp runs the seed papers' cluster experiment (Schneider &
// Linnert): reservations with booking windows, replayed on the list,
// indexed and slotted timelines (plus the indexed and the coarsest slotted
// timeline frozen at the baseline commit, to show what changed). Two
// request streams: a synthetic Lublin–Feitelson sweep over overloading
// interarrival times on -synth-capacity CPUs (128 by default; -synth=false
// turns it off), and any SWF trace given with -trace (gzip or plain; -kth
// is an alias), replayed on the capacity its header declares (MaxProcs,
// else MaxNodes) unless -capacity is given. Every trace job the conversion
// drops or adjusts is counted; every output names the trace and its
// capacity. It prints a markdown table on stdout, progress with an
// estimate of the time left on stderr, and writes results.md, results.csv
// and results.svg into -out. -quick runs a tiny sweep that the package's
// test uses to check the structural facts; -h prints the flags and exits 0.
//
// Run it from the repository root, so that the default trace path
// (../shared/workloads/...) resolves:
//
//	go run -tags hashicorpmetrics ./benchmarks/seed/cmd/seedexp -out benchmarks/seed/results
//	go run -tags hashicorpmetrics ./benchmarks/seed/cmd/seedexp -synth=false -trace my.swf.gz -out /tmp/mine
//
// It is a measuring tool: it must not be imported by, or start anything
// of, the ledger service, and it never writes outside -out. The traces it
// reads stay where they are.
package main
