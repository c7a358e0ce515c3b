package fsm

import (
	"fmt"
	"iter"
	"math/bits"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/idhash"
	"github.com/ledgerd/ledgerd/internal/rangesort"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// rowStore is the reservation table. Each row is kept as its
// deterministic protobuf encoding in one string (about 100 bytes for a
// one-part row), keyed by its ID, which is a substring of the row (the
// encoding starts with it), so the ID is not stored twice. A decoded
// *fsmv1.Reservation with its Part sub-messages took about 280 bytes in
// several allocations; the string is one allocation without pointers,
// which the collector does not scan. Snapshots write the strings as they
// are, and restore copies them from the file (scanRow checks them).
//
// The rows are held in an open-addressing hash table (linear probing,
// power-of-two size, at most 3/4 full) of the row strings, with the low
// half of each row's ID hash beside it: 20 bytes a cell, 40 MB at 1M
// rows against 80 MB for a map[string]string, whose cells held the ID's
// string header as well as the row's. A probe compares tags before it
// reads a row, and a deletion shifts the rest of its run back (no
// tombstones), taking each moved row's home cell from its tag. Nothing
// iterates the cells (the byID list gives the order), so their layout is
// never observable; it follows from the calls alone all the same
// (idhash has no seed).
//
// Rows are immutable: put stores a new string. get decodes a fresh
// message the caller owns.
type rowStore struct {
	// cells holds the rows; "" is an empty cell (a stored row is never
	// empty: it starts with its ID's tag).
	cells []string
	// tags[i] is the low half of the ID hash of cells[i]; its low bits
	// are the row's home cell while the table has at most 1<<32 cells
	// (3G rows, far beyond any node's memory).
	tags []uint32
	n    int
	// buf is put's encoding scratch; rowStore is only changed under the
	// state's write lock.
	buf []byte
}

// minRowCells is the smallest table; it must be a power of two.
const minRowCells = 16

// newRowStore returns a table sized for n rows.
func newRowStore(n int) rowStore {
	var t rowStore
	t.resize(rowCellsFor(n))
	return t
}

// rowCellsFor returns the table size that holds n rows at most 3/4 full.
func rowCellsFor(n int) int {
	size := minRowCells
	for size/4*3 < n {
		size *= 2
	}
	return size
}

// len returns the number of rows.
func (t *rowStore) len() int { return t.n }

// find returns the cell holding row id, or the empty cell ending its
// probe run, and whether the row is there.
func (t *rowStore) find(id string, h uint64) (uint64, bool) {
	if len(t.cells) == 0 {
		// The zero value: no cell yet (insert makes them).
		return 0, false
	}
	mask := uint64(len(t.cells) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		row := t.cells[i]
		if row == "" {
			return i, false
		}
		if t.tags[i] == uint32(h) && rowID(row) == id {
			return i, true
		}
	}
}

// has reports whether row id exists.
func (t *rowStore) has(id string) bool {
	_, ok := t.find(id, idhash.String(id))
	return ok
}

// raw returns the encoded row id.
func (t *rowStore) raw(id string) (string, bool) {
	i, ok := t.find(id, idhash.String(id))
	if !ok {
		return "", false
	}
	return t.cells[i], true
}

// get decodes row id into a fresh message.
func (t *rowStore) get(id string) (*fsmv1.Reservation, bool) {
	row, ok := t.raw(id)
	if !ok {
		return nil, false
	}
	return decodeRow(row), true
}

// set stores r, replacing the row with its ID, and returns the stored
// row and its ID (a substring of the row).
func (t *rowStore) set(r *fsmv1.Reservation) (row, id string) {
	b := mustAppendRow(t.buf[:0], r)
	if verifyCodec {
		verifyRow(r, b)
	}
	t.buf = b
	row = string(b)
	id = rowID(row)
	t.insert(id, row)
	return row, id
}

// insert stores an encoded row under id (its ID, a substring of it),
// replacing the row with that ID. Replacing the cell's string drops the
// old row entirely: nothing else of the table refers to it.
func (t *rowStore) insert(id, row string) {
	h := idhash.String(id)
	i, ok := t.find(id, h)
	if ok {
		t.cells[i] = row
		return
	}
	if (t.n + 1) > len(t.cells)/4*3 {
		t.resize(max(minRowCells, 2*len(t.cells)))
		i, _ = t.find(id, h)
	}
	t.cells[i], t.tags[i] = row, uint32(h)
	t.n++
}

// rowPlace is one row of fillNew: the low half of its ID hash (its tag,
// whose low bits give its home cell) and its index in the batch.
type rowPlace struct{ tag, i uint32 }

// fillNew stores rows, whose IDs are distinct and none of them in the
// table (a restore's rows, which its scan checked in strictly ascending
// ID order), as inserting them one by one would, but placed range of
// home cells by range: one insert per row in a random cell of a table of
// tens of megabytes missed the cache for the cell and for its tag, and
// at 1M rows took most of the restore's row table stage. Which row sits
// in which cell of a probe run depends on the order of placement (the
// cells in use do not); that order is a fixed function of the rows, and
// nothing reads the layout (see rowStore).
func (t *rowStore) fillNew(rows []string) {
	if len(rows) < 1<<rangesort.Bits {
		for _, row := range rows {
			t.insert(rowID(row), row)
		}
		return
	}
	if size := rowCellsFor(t.n + len(rows)); size > len(t.cells) {
		t.resize(size)
	}
	mask := uint64(len(t.cells) - 1)
	shift := bits.Len64(mask) - min(rangesort.Bits, bits.Len64(mask))
	order := make([]rowPlace, len(rows))
	for i, row := range rows {
		order[i] = rowPlace{uint32(idhash.String(rowID(row))), uint32(i)}
	}
	rangesort.Sort(order, func(p rowPlace) uint32 { return uint32((uint64(p.tag) & mask) >> shift) })
	for _, p := range order {
		t.place(rows[p.i], p.tag)
	}
	t.n += len(rows)
}

// place puts row, whose tag is tag and whose ID is not in the table, in
// the first empty cell from its home cell on (n is the caller's to
// count).
func (t *rowStore) place(row string, tag uint32) {
	mask := uint64(len(t.cells) - 1)
	i := uint64(tag) & mask
	for t.cells[i] != "" {
		i = (i + 1) & mask
	}
	t.cells[i], t.tags[i] = row, tag
}

// del removes row id.
func (t *rowStore) del(id string) {
	i, ok := t.find(id, idhash.String(id))
	if !ok {
		return
	}
	// Backward shift: move each later row of the run whose home cell is
	// not between the hole and it into the hole (Knuth's algorithm R), so
	// every row stays reachable from its home cell without tombstones.
	mask := uint64(len(t.cells) - 1)
	for j := (i + 1) & mask; t.cells[j] != ""; j = (j + 1) & mask {
		if idhash.Movable(i, j, uint64(t.tags[j]), mask) {
			t.cells[i], t.tags[i] = t.cells[j], t.tags[j]
			i = j
		}
	}
	t.cells[i], t.tags[i] = "", 0
	t.n--
}

// resize moves the rows into a table of size cells (a power of two that
// holds them), placing each by its tag.
func (t *rowStore) resize(size int) {
	cells, tags := t.cells, t.tags
	t.cells, t.tags = probeCells[string](size), probeCells[uint32](size)
	for k, row := range cells {
		if row != "" {
			t.place(row, tags[k])
		}
	}
}

// all yields every row with its ID, in no particular order (for tests
// and checks: the state's order is the byID list's).
func (t *rowStore) all() iter.Seq2[string, string] {
	return func(yield func(id, row string) bool) {
		for _, row := range t.cells {
			if row != "" && !yield(rowID(row), row) {
				return
			}
		}
	}
}

// decodeRow decodes a stored row. Rows were encoded by set or checked by
// scanRow, so a failure is a bug. The message's strings share the row
// (decodeRowFast); the generic decoder is the fallback for anything the
// fast one does not read itself.
func decodeRow(row string) *fsmv1.Reservation {
	if r, ok := decodeRowFast(row); ok {
		if verifyCodec {
			verifyDecodedRow(row, r)
		}
		return r
	}
	r := new(fsmv1.Reservation)
	if err := proto.Unmarshal([]byte(row), r); err != nil {
		panic(fmt.Sprintf("fsm: stored reservation: %v", err))
	}
	return r
}

// rowID returns the ID of an encoded row: its first field (field 1,
// length-delimited), as the deterministic encoding puts it first. Rows
// without an ID are never stored. It runs some twenty times per
// search of the byID list (rowLess), so an ID shorter than 128 bytes,
// whose length is one byte, is read here, without a call (a comparison
// of two rows took a third longer with the call); rowIDLong reads the
// others.
func rowID(row string) string {
	if len(row) >= 2 && row[0] == 1<<3|2 && row[1] < 0x80 && int(row[1]) <= len(row)-2 {
		return row[2 : 2+int(row[1])]
	}
	return rowIDLong(row)
}

// rowIDLong is rowID for any length of ID.
func rowIDLong(row string) string {
	if len(row) < 2 || row[0] != 1<<3|2 {
		return ""
	}
	n, k := varintS(row[1:])
	if k < 0 || uint64(len(row)-1-k) < n {
		return ""
	}
	return row[1+k : 1+k+int(n)]
}

// rowLess orders rows by ID (the byID list).
func rowLess(a, b string) bool { return rowID(a) < rowID(b) }

// idPivot returns the shortest row whose ID is id: a search key for the
// byID list (rowLess reads nothing but the ID).
func idPivot(id string) string {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return string(protowire.AppendString(b, id))
}

// varintS reads a minimally encoded varint from the start of b and
// returns it and its length; the length is negative when b does not
// start with one (truncated, longer than 64 bits, or padded with a
// trailing zero byte, which a deterministic encoder never writes).
func varintS(b string) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		// One byte, as most tags, lengths and small values are.
		return uint64(b[0]), 1
	}
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i > 0 && c == 0 {
				return 0, -1
			}
			return x, i + 1
		}
	}
	return 0, -1
}

// rowMeta is what the table's bookkeeping (timers, counters, planner
// bookings) needs of a row, read from a message (metaOf) or straight from
// its encoding (scanRow).
type rowMeta struct {
	id                          string
	state                       fsmv1.Reservation_State
	kind                        fsmv1.Reservation_Kind
	probability                 uint32
	start, end, holdExp, update int64
	hasPending                  bool
	pendStart, pendEnd, pendExp int64
}

// scheduled is scheduled(r) for the row.
func (m *rowMeta) scheduled() bool {
	return m.kind == fsmv1.Reservation_KIND_VARIABLE_JOB || m.probability > 0
}

func metaOf(r *fsmv1.Reservation) rowMeta {
	m := rowMeta{
		id: r.GetId(), state: r.GetState(), kind: r.GetKind(), probability: r.GetProbabilityPermille(),
		start: r.GetStartMillis(), end: r.GetEndMillis(), holdExp: r.GetHoldExpiresMillis(), update: r.GetUpdatedMillis(),
	}
	if p := r.GetPending(); p != nil {
		m.hasPending = true
		m.pendStart, m.pendEnd, m.pendExp = p.GetStartMillis(), p.GetEndMillis(), p.GetHoldExpiresMillis()
	}
	return m
}
