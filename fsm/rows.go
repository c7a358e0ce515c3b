package fsm

import (
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
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
// Rows are immutable: put stores a new string. get decodes a fresh
// message the caller owns.
type rowStore struct {
	m map[string]string
	// buf is put's encoding scratch; rowStore is only changed under the
	// state's write lock.
	buf []byte
}

func newRowStore(n int) rowStore { return rowStore{m: make(map[string]string, n)} }

// len returns the number of rows.
func (t *rowStore) len() int { return len(t.m) }

// has reports whether row id exists.
func (t *rowStore) has(id string) bool {
	_, ok := t.m[id]
	return ok
}

// raw returns the encoded row id.
func (t *rowStore) raw(id string) (string, bool) {
	row, ok := t.m[id]
	return row, ok
}

// get decodes row id into a fresh message.
func (t *rowStore) get(id string) (*fsmv1.Reservation, bool) {
	row, ok := t.m[id]
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
	// Assigning to an existing string key replaces the key as well, so
	// the map does not keep the old row alive through its key.
	t.m[id] = row
	return row, id
}

// insert stores an encoded row under id (a substring of it) for restore.
func (t *rowStore) insert(id, row string) { t.m[id] = row }

// del removes row id.
func (t *rowStore) del(id string) { delete(t.m, id) }

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
// operation of the byID tree (rowLess), so an ID shorter than 128 bytes,
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

// rowLess orders rows by ID (the byID tree).
func rowLess(a, b string) bool { return rowID(a) < rowID(b) }

// idPivot returns the shortest row whose ID is id: a search key for the
// byID tree (rowLess reads nothing but the ID).
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
