package ledger

import "context"

// Pipeliner is a Ledger that can run the operations of one batch through
// a shared Pipeline: their writes are proposed back to back and their
// reads share one barrier.
type Pipeliner interface {
	// Pipeline returns a pipeline for n operations, or nil when the
	// ledger cannot pipeline (e.g. its log cannot apply batches).
	Pipeline(n int) Pipeline
}

// Pipeline runs the n concurrent operations of one batch together. Once
// every unfinished operation waits on the log, it serves all pending read
// barriers with one barrier, or else proposes all pending writes back to
// back in operation order; released operations carry on (a modify reads
// after its barrier, then writes) until all are done.
//
// Caller's duties: operation i calls only the Ledger returned by Op(i);
// it reports Done(i) exactly once when it has finished (also when it
// never ran); Run runs concurrently with the operations and returns once
// all are done.
type Pipeline interface {
	// Op returns the Ledger operation i must use.
	Op(i int) Ledger
	// Done reports that operation i finished.
	Done(i int)
	// Run serves the operations until all are done; ctx bounds the
	// barriers and writes it performs for them.
	Run(ctx context.Context)
}
