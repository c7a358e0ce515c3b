package fsm

// probeCells returns n zero cells for a hash table that is filled by
// probing, each of its pages already written once.
//
// Probing reads a cell before writing it. On memory fresh from the
// operating system that read maps the kernel's shared zero page, and the
// write that follows replaces it: a second fault per page, and one that
// flushes the page from the TLB of every CPU the process runs on, with
// an interrupt to each. On a two-vCPU VM a table filled that way cost
// six times one written first (256 MB: 1.39 s against 0.24 s), and at a
// million reservations the restore's two tables (the rows', the
// idempotency index) took that second fault for every page. Writing the
// zeros first takes the one ordinary fault per page; on memory the heap
// reuses, it is one more pass of a memclr.
func probeCells[T any](n int) []T {
	cells := make([]T, n)
	clear(cells)
	return cells
}
