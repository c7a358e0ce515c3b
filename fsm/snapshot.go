package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Snapshot file layout (all integers big-endian):
//
//	offset  size  field
//	0       4     magic "LDGS"
//	4       4     format version (SnapshotVersion)
//	8       8     body length in bytes
//	16      4     CRC-32C (Castagnoli) of the body
//	20      n     body: a deterministically encoded fsmv1.Snapshot
//
// The body lists resources sorted by name and reservations sorted by ID;
// idempotency records and history are in apply order. No map is encoded
// from iteration order (proto maps are sorted by the deterministic
// encoder), so replicas that applied the same log write identical bytes.
const (
	snapshotMagic  = "LDGS"
	headerLen      = 20
	maxSnapshotLen = 1 << 34
)

// SnapshotVersion is the snapshot format this release writes and reads.
const SnapshotVersion uint32 = 1

// ErrBadSnapshot marks a snapshot that cannot be restored: wrong magic,
// unknown format version, truncated, checksum mismatch, undecodable body,
// or contents that violate the table invariants.
var ErrBadSnapshot = errors.New("bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeSnapshot writes msg in the snapshot file format.
func EncodeSnapshot(msg *fsmv1.Snapshot) ([]byte, error) {
	body, err := marshalOpts.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return frameSnapshot(body), nil
}

// frameSnapshot prepends the header to an encoded body.
func frameSnapshot(body []byte) []byte {
	return append(snapshotHeader(uint64(len(body)), crc32.Checksum(body, castagnoli)), body...)
}

// snapshotHeader returns the header of a body of size bytes with
// checksum crc.
func snapshotHeader(size uint64, crc uint32) []byte {
	out := make([]byte, headerLen)
	copy(out, snapshotMagic)
	binary.BigEndian.PutUint32(out[4:], SnapshotVersion)
	binary.BigEndian.PutUint64(out[8:], size)
	binary.BigEndian.PutUint32(out[16:], crc)
	return out
}

// encodeSnapshotIdem is EncodeSnapshot for msg (without idempotency
// records) plus the encoded reservations rows and the compact records
// idem; see writeSnapshotIdem.
func encodeSnapshotIdem(msg *fsmv1.Snapshot, rows iter.Seq[string], idem idemView) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeSnapshotIdem(&buf, msg, rows, idem); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeSnapshotIdem writes to w the file EncodeSnapshot makes for msg
// (without idempotency records) with the encoded reservations rows
// appended to its reservations and the compact records idem, whose
// stored bytes are copied instead of decoded and encoded again. The
// deterministic encoder writes fields in field-number order and a nested
// message exactly as it encodes it alone, so the bytes equal
// EncodeSnapshot of the expanded message as long as the stored rows and
// results are deterministic encodings (rowStore.set and encodeResult
// make them; restored ones come from such a file and are checked).
//
// The body is streamed, never held whole: at a million reservations it
// is hundreds of megabytes, and holding it (three times over, as the
// encoding used to) was the largest spike of resident memory. The header
// needs the body's length and checksum first, so the body is encoded
// twice: once to measure, once to write (the idempotency records are
// the store's bytes as they stand, so that costs them a checksum, and a
// packed chunk an unpacking in each pass: a shutdown snapshot at a
// million keys took 0.76-0.91 s against 0.50-1.10 s before chunks were
// packed, benchmarks/results/recovery-1m/r19-idempack/; keeping the
// first pass's bytes would hold the whole log unpacked).
// msg's reservations (written before rows) are detached while its other
// fields are encoded, and put back.
func writeSnapshotIdem(w io.Writer, msg *fsmv1.Snapshot, rows iter.Seq[string], idem idemView) error {
	if len(msg.GetIdempotency()) > 0 {
		return errors.New("encode snapshot: idempotency records given twice")
	}
	msgRows := msg.Reservations
	msg.Reservations = nil
	rest, err := marshalOpts.Marshal(msg)
	msg.Reservations = msgRows
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	// Split the other fields before the first one numbered after the
	// idempotency records; reservations and records go between.
	cut := 0
	for cut < len(rest) {
		num, typ, n := protowire.ConsumeTag(rest[cut:])
		if n < 0 {
			return fmt.Errorf("encode snapshot: %w", protowire.ParseError(n))
		}
		if num > snapshotIdemField {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[cut+n:])
		if m < 0 {
			return fmt.Errorf("encode snapshot: %w", protowire.ParseError(m))
		}
		cut += n + m
	}
	body := func(emit func([]byte) error) error {
		if err := emit(rest[:cut]); err != nil {
			return err
		}
		var buf []byte
		flush := func(force bool) error {
			if len(buf) < 64<<10 && !force {
				return nil
			}
			err := emit(buf)
			buf = buf[:0]
			return err
		}
		for _, r := range msgRows {
			buf = protowire.AppendTag(buf, snapshotResvField, protowire.BytesType)
			buf = protowire.AppendVarint(buf, uint64(marshalOpts.Size(r)))
			var merr error
			if buf, merr = marshalOpts.MarshalAppend(buf, r); merr != nil {
				return fmt.Errorf("encode snapshot: reservation %q: %w", r.GetId(), merr)
			}
			if err := flush(false); err != nil {
				return err
			}
		}
		for row := range rows {
			buf = protowire.AppendTag(buf, snapshotResvField, protowire.BytesType)
			buf = protowire.AppendVarint(buf, uint64(len(row)))
			buf = append(buf, row...)
			if err := flush(false); err != nil {
				return err
			}
		}
		if err := flush(true); err != nil {
			return err
		}
		// The store keeps each record as these bytes (idemStore).
		if err := idem.eachChunk(emit); err != nil {
			return err
		}
		return emit(rest[cut:])
	}
	var size uint64
	crc := uint32(0)
	if err := body(func(b []byte) error {
		size += uint64(len(b))
		crc = crc32.Update(crc, castagnoli, b)
		return nil
	}); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(snapshotHeader(size, crc)); err != nil {
		return err
	}
	if err := body(func(b []byte) error { _, err := bw.Write(b); return err }); err != nil {
		return err
	}
	return bw.Flush()
}

// appendIdemRecord appends the IdempotencyRecord encoding of e.
func appendIdemRecord(rec []byte, e idemRecord) []byte {
	if len(e.owner) > 0 {
		rec = protowire.AppendBytes(append(rec, idemOwnerTag), e.owner)
	}
	if len(e.key) > 0 {
		rec = protowire.AppendBytes(append(rec, idemKeyTag), e.key)
	}
	if e.at != 0 {
		rec = protowire.AppendVarint(append(rec, idemAtTag), uint64(e.at))
	}
	return protowire.AppendBytes(append(rec, idemResultTag), e.result)
}

// DecodeSnapshot verifies the header and checksum and decodes the body.
// It does not check the table invariants; restoring does.
func DecodeSnapshot(b []byte) (*fsmv1.Snapshot, error) {
	body, err := checkHeader(b)
	if err != nil {
		return nil, err
	}
	msg := new(fsmv1.Snapshot)
	if err := proto.Unmarshal(body, msg); err != nil {
		return nil, fmt.Errorf("%w: body: %v", ErrBadSnapshot, err)
	}
	return msg, nil
}

// checkHeader verifies the header and checksum and returns the body.
func checkHeader(b []byte) ([]byte, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the header", ErrBadSnapshot, len(b))
	}
	if string(b[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrBadSnapshot, b[:4], snapshotMagic)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: format version %d, this release reads %d", ErrBadSnapshot, v, SnapshotVersion)
	}
	n := binary.BigEndian.Uint64(b[8:])
	if n > maxSnapshotLen || n != uint64(len(b)-headerLen) {
		return nil, fmt.Errorf("%w: body length %d, have %d bytes", ErrBadSnapshot, n, len(b)-headerLen)
	}
	body := b[headerLen:]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(b[16:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, header says %08x", ErrBadSnapshot, got, want)
	}
	return body, nil
}

// Field numbers of Snapshot.reservations and Snapshot.idempotency.
const (
	snapshotResvField = 4
	snapshotIdemField = 5
)

// splitSnapshot is a snapshot body as Restore reads it: the message
// without reservations and idempotency records, the encoded reservations
// (aliasing the file, not yet checked: rebuild scans them), and the
// idempotency records in their compact store (or, from splitBody, still
// encoded in idemRaw, aliasing the file).
type splitSnapshot struct {
	msg     *fsmv1.Snapshot
	rows    fieldList
	idem    *idemStore
	idemRaw fieldList
}

// fieldList lists occurrences of a length-delimited field in a body by
// the offset of each one's tag: 8 bytes an item instead of a 24-byte
// slice header (at 1M rows and 1.1M idempotency records, 34 MB less
// while a restore holds the snapshot's bytes, its peak). The offsets are
// kept in chunks of 1<<fieldChunkBits, so that splitBody appends them in
// one walk over the body without regrowing a list of millions: the
// copies were some 75 MB of garbage at 1M rows, a first walk to count
// them a tenth of a second.
type fieldList struct {
	body   []byte
	chunks [][]uint64
	n      int
}

// fieldChunkBits is log2 of the offsets per chunk of a fieldList (512
// KiB a chunk).
const fieldChunkBits = 16

// add appends the item whose tag is at offset at.
func (l *fieldList) add(at uint64) {
	if l.n&(1<<fieldChunkBits-1) == 0 {
		l.chunks = append(l.chunks, make([]uint64, 0, 1<<fieldChunkBits))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, at)
	l.n++
}

// len returns the number of items.
func (l fieldList) len() int { return l.n }

// at returns the offset of item i's tag in the body.
func (l fieldList) at(i int) int { return int(l.chunks[i>>fieldChunkBits][i&(1<<fieldChunkBits-1)]) }

// fieldLen returns the length of item i as a field: its tag, its length
// and its value.
func (l fieldList) fieldLen(i int) int {
	b := l.body[l.at(i):]
	_, _, n := protowire.ConsumeTag(b)
	return n + protowire.ConsumeFieldValue(0, protowire.BytesType, b[n:])
}

// get returns the value of item i (aliasing the body). The item was
// found by splitBody, so its tag and length are well formed.
func (l fieldList) get(i int) []byte {
	b := l.body[l.at(i):]
	_, _, n := protowire.ConsumeTag(b)
	v, _ := protowire.ConsumeBytes(b[n:])
	return v[:len(v):len(v)]
}

// decodeSplit is DecodeSnapshot for Restore: it leaves the reservations
// and the idempotency records out of the message. Reservations are
// returned as their encodings, which rebuild keeps (one string per row)
// after scanning them, instead of decoding a message per row. Idempotency
// records go to their compact store, so their results are kept as the
// stored bytes instead of being decoded into messages and encoded again;
// the results are still checked to decode. For the other fields the
// outcome is the one proto.Unmarshal gives: fields may come in any order,
// repeated occurrences of a message field merge (their bytes are
// concatenated) and the last scalar wins. They are decoded in place, run
// by run, with merging (decoding concatenated bytes is merging their
// decodings), rather than copied out first.
func decodeSplit(b []byte) (splitSnapshot, error) {
	out, err := splitBody(b)
	if err != nil {
		return out, err
	}
	if out.idem, err = decodeIdem(out.idemRaw); err != nil {
		return out, err
	}
	out.idemRaw = fieldList{}
	return out, nil
}

// splitBody is decodeSplit without decoding the idempotency records: they
// are left in idemRaw for decodeIdem.
func splitBody(b []byte) (splitSnapshot, error) {
	var out splitSnapshot
	body, err := checkHeader(b)
	if err != nil {
		return out, err
	}
	// One walk over the fields, the lists growing chunk by chunk
	// (fieldList): this is the one part of a restore that no other core
	// shares.
	msg := new(fsmv1.Snapshot)
	merge := proto.UnmarshalOptions{Merge: true}
	flush := func(run []byte) error {
		if len(run) == 0 {
			return nil
		}
		if err := merge.Unmarshal(run, msg); err != nil {
			return fmt.Errorf("%w: body: %v", ErrBadSnapshot, err)
		}
		return nil
	}
	out.rows.body, out.idemRaw.body = body, body
	runStart := 0
	for at := 0; at < len(body); {
		num, typ, n := protowire.ConsumeTag(body[at:])
		if n < 0 {
			return out, fmt.Errorf("%w: body: %v", ErrBadSnapshot, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, body[at+n:])
		if m < 0 {
			return out, fmt.Errorf("%w: body: %v", ErrBadSnapshot, protowire.ParseError(m))
		}
		if (num == snapshotIdemField || num == snapshotResvField) && typ == protowire.BytesType {
			if err := flush(body[runStart:at]); err != nil {
				return out, err
			}
			if num == snapshotIdemField {
				out.idemRaw.add(uint64(at))
			} else {
				out.rows.add(uint64(at))
			}
			runStart = at + n + m
		}
		at += n + m
	}
	if err := flush(body[runStart:]); err != nil {
		return out, err
	}
	out.msg = msg
	return out, nil
}

// decodeIdem decodes the encoded idempotency records raw into their
// compact store, checking each.
func decodeIdem(raw fieldList) (*idemStore, error) {
	idem := new(idemStore)
	idem.grow(raw.len())
	var check fsmv1.Result
	decode := func(b []byte) (idemRecord, error) { return decodeIdemRecord(b, &check) }
	if i, err := idem.load(raw, decode); err != nil {
		return nil, badf("idempotency[%d]: %v", i, err)
	}
	return idem, nil
}

// decodeIdemRecord reads one encoded IdempotencyRecord (owner = 1, key =
// 2, at_millis = 3, result = 4), checking that the result decodes as a
// Result (unless check is nil; check is the generic decoder's scratch
// when wellFormed cannot tell). Unknown fields and fields of an unexpected wire type are skipped,
// as proto.Unmarshal keeps them as unknown. The owner and key alias b;
// the result does too unless the record repeats the field, whose
// occurrences are then concatenated (merged).
func decodeIdemRecord(b []byte, check *fsmv1.Result) (idemRecord, error) {
	e, ok := decodeIdemPersisted(b, true)
	if !ok {
		var err error
		if e, err = decodeIdemAny(b); err != nil {
			return e, err
		}
	}
	if check == nil || wellFormed(e.result, resultShape, 0) {
		return e, nil
	}
	// Refused or beyond wellFormed: the generic decoder decides, and
	// names the problem.
	if err := proto.Unmarshal(e.result, check); err != nil {
		return e, fmt.Errorf("result: %w", err)
	}
	return e, nil
}

// decodeIdemPersisted reads a record as Persist writes it (appendIdemRecord:
// owner unless empty, a non-empty key, at_millis unless zero, result,
// each once, in that order, nothing else), with valid UTF-8 in owner and
// key unless checkUTF8 is false; ok is false for anything else, which
// decodeIdemAny then reads. On such bytes the two give the same record:
// the generic loop's work (a tag, a field value and a switch per field)
// was a third of a record's decoding at a restore, which reads every
// record twice.
func decodeIdemPersisted(b []byte, checkUTF8 bool) (e idemRecord, ok bool) {
	if len(b) > 0 && b[0] == idemOwnerTag {
		v, n := protowire.ConsumeBytes(b[1:])
		if n < 0 || len(v) == 0 {
			return e, false
		}
		e.owner, b = v, b[1+n:]
	}
	if len(b) == 0 || b[0] != idemKeyTag {
		return e, false
	}
	v, n := protowire.ConsumeBytes(b[1:])
	if n < 0 || len(v) == 0 {
		return e, false
	}
	e.key, b = v, b[1+n:]
	if len(b) > 0 && b[0] == idemAtTag {
		x, n := protowire.ConsumeVarint(b[1:])
		if n < 0 || x == 0 {
			return e, false
		}
		e.at, b = int64(x), b[1+n:]
	}
	if len(b) == 0 || b[0] != idemResultTag {
		return e, false
	}
	v, n = protowire.ConsumeBytes(b[1:])
	if n < 0 || 1+n != len(b) {
		return e, false
	}
	e.result = v[:len(v):len(v)]
	if checkUTF8 && (!utf8.Valid(e.owner) || !utf8.Valid(e.key)) {
		return e, false
	}
	return e, true
}

// decodeIdemAny is decodeIdemRecord's reading of any encoding, without
// the check of the result.
func decodeIdemAny(b []byte) (idemRecord, error) {
	var e idemRecord
	seenResult := false // an empty result message is encoded as zero bytes
	merged := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return e, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return e, protowire.ParseError(m)
		}
		v := b[n : n+m]
		b = b[n+m:]
		switch {
		case (num == 1 || num == 2) && typ == protowire.BytesType:
			str, _ := protowire.ConsumeBytes(v)
			if !utf8.Valid(str) {
				return e, fmt.Errorf("field %d: invalid UTF-8", num)
			}
			if num == 1 {
				e.owner = str
			} else {
				e.key = str
			}
		case num == 3 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(v)
			e.at = int64(x)
		case num == 4 && typ == protowire.BytesType:
			r, _ := protowire.ConsumeBytes(v)
			if seenResult && !merged {
				e.result = append([]byte(nil), e.result...)
				merged = true
			}
			if merged {
				e.result = append(e.result, r...)
			} else {
				e.result = r
			}
			seenResult = true
		}
	}
	if len(e.key) == 0 || !seenResult {
		return e, errors.New("empty key or result")
	}
	return e, nil
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
}

// bookings collects the planner bookings of a restored table, their
// parts sharing one array.
type bookings struct {
	list  []planner.Booking
	parts []planner.Part
}

// add adds the booking of parts over [max(start, origin), end) under key;
// a booking wholly in the past needs no capacity and is skipped. The
// parts' resource names may be substrings of a row: the planner only
// looks them up.
func (b *bookings) add(key string, parts []scanPart, start, end, origin int64) {
	start = max(start, origin)
	if end <= start {
		return
	}
	from := len(b.parts)
	for _, p := range parts {
		b.parts = append(b.parts, planner.Part{Resource: p.resource, Amount: p.amount})
	}
	b.list = append(b.list, planner.Booking{ID: key, Parts: b.parts[from:len(b.parts):len(b.parts)], Start: start, End: end})
}

// bookFrom books parts over [max(start, origin), end) under key; a booking
// wholly in the past needs no capacity and is skipped.
func bookFrom(p *planner.Planner, key string, parts []*fsmv1.Part, start, end, origin int64) error {
	start = max(start, origin)
	if end <= start {
		return nil
	}
	return p.Book(planner.Booking{ID: key, Parts: plannerParts(parts), Start: start, End: end})
}
