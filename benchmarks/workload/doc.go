// Package workload supplies the job streams the planner experiments replay:
// a reader for the Standard Workload Format (SWF) of the Parallel Workloads
// Archive, a synthetic generator following the Lublin–Feitelson model of
// rigid parallel jobs, and the conversion of jobs into advance-reservation
// requests with a start delay (Heine et al.).
//
// It is benchmark infrastructure, not part of the ledger: it reads files and
// draws seeded random numbers, so nothing in planner/ or fsm/ may import it.
// Everything random takes an explicit seed so that a run can be repeated
// exactly. Traces are read in place; they must never be copied into the
// repository.
//
// Values are plain data; a Reader or a Lublin generator is not safe for
// concurrent use.
package workload
