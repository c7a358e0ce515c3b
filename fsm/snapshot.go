package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
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
func encodeSnapshotIdem(msg *fsmv1.Snapshot, rows []string, idem idemView) ([]byte, error) {
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
// twice: once to measure, once to write. msg's reservations (written
// before rows) are detached while its other fields are encoded, and put
// back.
func writeSnapshotIdem(w io.Writer, msg *fsmv1.Snapshot, rows []string, idem idemView) error {
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
		for _, row := range rows {
			buf = protowire.AppendTag(buf, snapshotResvField, protowire.BytesType)
			buf = protowire.AppendVarint(buf, uint64(len(row)))
			buf = append(buf, row...)
			if err := flush(false); err != nil {
				return err
			}
		}
		var rec []byte
		var ferr error
		idem.each(func(e idemRecord) {
			rec = appendIdemRecord(rec[:0], e)
			buf = protowire.AppendTag(buf, snapshotIdemField, protowire.BytesType)
			buf = protowire.AppendBytes(buf, rec)
			if err := flush(false); err != nil && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		if err := flush(true); err != nil {
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
		rec = protowire.AppendTag(rec, 1, protowire.BytesType)
		rec = protowire.AppendBytes(rec, e.owner)
	}
	if len(e.key) > 0 {
		rec = protowire.AppendTag(rec, 2, protowire.BytesType)
		rec = protowire.AppendBytes(rec, e.key)
	}
	if e.at != 0 {
		rec = protowire.AppendTag(rec, 3, protowire.VarintType)
		rec = protowire.AppendVarint(rec, uint64(e.at))
	}
	rec = protowire.AppendTag(rec, 4, protowire.BytesType)
	return protowire.AppendBytes(rec, e.result)
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
	rows    [][]byte
	idem    *idemStore
	idemRaw [][]byte
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
	out.idemRaw = nil
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
	// Count the reservations and records first (a walk over the tags is
	// cheap next to the rest), so that their lists are allocated once:
	// growing them by doubling copied tens of megabytes at 1M rows.
	var nRows, nIdem int
	for at := 0; at < len(body); {
		num, typ, n := protowire.ConsumeTag(body[at:])
		if n < 0 {
			return out, fmt.Errorf("%w: body: %v", ErrBadSnapshot, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, body[at+n:])
		if m < 0 {
			return out, fmt.Errorf("%w: body: %v", ErrBadSnapshot, protowire.ParseError(m))
		}
		if typ == protowire.BytesType {
			switch num {
			case snapshotResvField:
				nRows++
			case snapshotIdemField:
				nIdem++
			}
		}
		at += n + m
	}
	out.rows, out.idemRaw = make([][]byte, 0, nRows), make([][]byte, 0, nIdem)
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
	runStart := 0
	for at := 0; at < len(body); {
		num, typ, n := protowire.ConsumeTag(body[at:])
		m := protowire.ConsumeFieldValue(num, typ, body[at+n:])
		if (num == snapshotIdemField || num == snapshotResvField) && typ == protowire.BytesType {
			if err := flush(body[runStart:at]); err != nil {
				return out, err
			}
			v, _ := protowire.ConsumeBytes(body[at+n : at+n+m])
			if num == snapshotIdemField {
				out.idemRaw = append(out.idemRaw, v)
			} else {
				out.rows = append(out.rows, v)
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
func decodeIdem(raw [][]byte) (*idemStore, error) {
	idem := new(idemStore)
	idem.grow(len(raw))
	var check fsmv1.Result
	for i, r := range raw {
		e, err := decodeIdemRecord(r, &check)
		if err != nil {
			return nil, badf("idempotency[%d]: %v", i, err)
		}
		if !idem.add(e.owner, e.key, e.at, e.result) {
			return nil, badf("idempotency[%d]: duplicate key", i)
		}
	}
	return idem, nil
}

// decodeIdemRecord reads one encoded IdempotencyRecord (owner = 1, key =
// 2, at_millis = 3, result = 4), checking that the result decodes into
// check. Unknown fields and fields of an unexpected wire type are skipped,
// as proto.Unmarshal keeps them as unknown. The owner and key alias b;
// the result does too unless the record repeats the field, whose
// occurrences are then concatenated (merged).
func decodeIdemRecord(b []byte, check *fsmv1.Result) (idemRecord, error) {
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
	if err := proto.Unmarshal(e.result, check); err != nil {
		return e, fmt.Errorf("result: %w", err)
	}
	return e, nil
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
}

// StageRunner runs the stages of a restore (FSM.RestoreWith) and returns
// once every one has returned. The stages are independent: each builds
// its own part of the new state from data that none of them changes, so a
// runner may run them in any order or at the same time, on other
// goroutines, with the same outcome (the fsm package itself starts none).
// A stage never panics on bad input; it records its error, and the
// restore reports the first one in stage order.
type StageRunner func(stages []func())

// runInOrder runs stages one after the other: the default StageRunner.
func runInOrder(stages []func()) {
	for _, f := range stages {
		f()
	}
}

// restoreJob is a restore cut into stages. prepareRestore checks the
// snapshot's tables and scans every row once, in order; the stages then
// build the stores from what it collected, each its own part of the state
// and nothing else, so that they may run at the same time (see
// FSM.RestoreWith); finish checks the rest and assembles the state. Each
// stage is deterministic and its outcome does not depend on the others',
// so the state is the same whatever order or overlap they run in.
type restoreJob struct {
	s     *state
	split splitSnapshot
	// rows are the stored rows in ID order and ids their IDs (substrings
	// of the rows).
	rows, ids []string
	// timers are the rows' timers, in row order.
	timers []timer
	// books, unitBooks: the live rows' planner and unit bookings.
	books     bookings
	unitBooks map[string][]planner.UnitBooking
	// scheduledIDs are the scheduled rows; pinIDs the live rows with a
	// materialization record (restorePins).
	scheduledIDs, pinIDs []string
	// tracking: the limits table has entries, so the stage usage builds
	// their usage.
	tracking bool
	// errs holds each stage's error, by stage.
	errs [stageCount]error
}

// The stages of a restore, longest first (so that a runner with fewer
// workers than stages starts the long ones first).
const (
	stagePlanner = iota
	stageIdem
	stageTimers
	stageTable
	stageUsage
	stageCount
)

// prepareRestore checks the resources and rows of split and collects
// what the stages build from. The planner starts at the snapshot's log
// time; bookings and capacity windows that began earlier are entered from
// that instant on, which gives exactly the free profile the original
// planner has from its origin on (the only part it consults).
func prepareRestore(cfg Config, split splitSnapshot) (*restoreJob, error) {
	msg := split.msg
	s := newState(cfg)
	j := &restoreJob{s: s, split: split}
	s.index, s.now = msg.GetAppliedIndex(), msg.GetNowMillis()
	if s.now < 0 {
		return nil, badf("negative log time %d", s.now)
	}
	s.plan.Advance(s.now)
	origin := s.plan.Origin()

	prev := ""
	for i, r := range msg.GetResources() {
		name := r.GetName()
		if why := validResourceName(name); why != "" {
			return nil, badf("resources[%d].name: %s", i, why)
		}
		if i > 0 && name <= prev {
			return nil, badf("resources not sorted by name at %d (%q after %q)", i, name, prev)
		}
		prev = name
		if err := s.plan.AddResource(name, r.GetCapacity()); err != nil {
			return nil, badf("resources[%d]: %v", i, err)
		}
		for j, w := range r.GetWindows() {
			from := max(w.GetFromMillis(), origin)
			if w.GetToMillis() <= from {
				continue
			}
			if err := s.plan.SetCapacity(name, from, w.GetToMillis(), w.GetCapacity()); err != nil {
				return nil, badf("resources[%d].windows[%d]: %v", i, j, err)
			}
		}
		s.resources[name] = r
	}
	if err := s.restoreLimitTable(msg); err != nil {
		return nil, err
	}
	j.tracking = len(s.lim.table) > 0

	raw := split.rows
	j.rows, j.ids = make([]string, len(raw)), make([]string, len(raw))
	j.timers = make([]timer, 0, len(raw))
	// The live rows' bookings go to the planner in one bulk Load (sorted
	// edges per resource) rather than one admission check per row.
	j.books = bookings{list: make([]planner.Booking, 0, len(raw)), parts: make([]planner.Part, 0, len(raw))}
	for _, r := range s.resources {
		if len(r.GetUnits()) > 0 {
			j.unitBooks = make(map[string][]planner.UnitBooking)
			break
		}
	}
	var sc rowScan
	prev = ""
	for i, b := range raw {
		// One copy per row: the string is the stored row, and its ID
		// (a substring) the key.
		row := string(b)
		if err := scanRow(row, &sc); err != nil {
			return nil, badf("reservations[%d]: %v", i, err)
		}
		id := sc.id
		if i > 0 && id <= prev {
			return nil, badf("reservations not sorted by ID at %d (%q after %q)", i, id, prev)
		}
		prev = id
		st := sc.state
		if _, known := fsmv1.Reservation_State_name[int32(st)]; !known || st == fsmv1.Reservation_STATE_UNKNOWN {
			return nil, badf("reservations[%d]: unknown state %d", i, int32(st))
		}
		if sc.scheduled() {
			j.scheduledIDs = append(j.scheduledIDs, id)
		}
		if !isTerminal(st) && !sc.scheduled() {
			// The planner keeps its own copy of the ID: a row substring
			// would keep this row's bytes alive after the row changes.
			key := strings.Clone(id)
			j.books.add(s, key, sc.parts, sc.start, sc.end, origin)
			if sc.hasPending {
				j.books.add(s, modKey(key), sc.pendParts, sc.pendStart, sc.pendEnd, origin)
			}
			if j.unitBooks != nil {
				collectUnits(j.unitBooks, key, sc.parts, sc.start, sc.end, origin)
				if sc.hasPending {
					collectUnits(j.unitBooks, modKey(key), sc.pendParts, sc.pendStart, sc.pendEnd, origin)
				}
			}
		}
		j.rows[i], j.ids[i] = row, id
		// The counts here; the timers go to their tree in a stage.
		j.timers = s.timersFor(j.timers, &sc.rowMeta)
		s.byState[st]++
		if sc.hasPending {
			s.pendingMods++
		}
		if sc.hasRecord && j.unitBooks != nil && !isTerminal(st) {
			j.pinIDs = append(j.pinIDs, id)
		}
	}
	return j, nil
}

// stages returns the independent stages of j, indexed by the stage
// constants. Each writes only its own part of the state (and its slot of
// errs) and reads only what prepareRestore left, which nothing changes
// until finish.
func (j *restoreJob) stages() []func() {
	return []func(){
		stagePlanner: func() { j.errs[stagePlanner] = j.buildPlanner() },
		stageIdem:    func() { j.errs[stageIdem] = j.buildIdem() },
		stageTimers:  j.buildTimers,
		stageTable:   j.buildTable,
		stageUsage:   j.buildUsage,
	}
}

// buildPlanner books the live rows (and unit down windows) in the planner
// and the unit schedules: s.plan, s.units.
func (j *restoreJob) buildPlanner() error {
	s := j.s
	if j.unitBooks != nil {
		if err := s.restoreUnits(j.unitBooks, &j.books); err != nil {
			return err
		}
	}
	if err := s.plan.Load(j.books.list); err != nil {
		return badf("reservations: %v", err)
	}
	return nil
}

// buildIdem decodes the idempotency records: s.idem.
func (j *restoreJob) buildIdem() error {
	idem := j.split.idem
	if idem == nil {
		var err error
		if idem, err = decodeIdem(j.split.idemRaw); err != nil {
			return err
		}
	}
	j.s.idem = *idem
	return nil
}

// buildTimers enters the rows' timers: s.timers.
func (j *restoreJob) buildTimers() {
	for _, t := range j.timers {
		j.s.timers.ReplaceOrInsert(t)
	}
}

// buildTable stores the rows and their IDs: s.resv, s.ids.
func (j *restoreJob) buildTable() {
	s := j.s
	s.resv = newRowStore(len(j.rows))
	for i, row := range j.rows {
		// IDs are new and ascending: no old row to unlink, and ids
		// grows at its right edge.
		s.resv.insert(j.ids[i], row)
		s.ids.ReplaceOrInsert(j.ids[i])
	}
}

// buildUsage builds the usage the limits need of every row, in bulk
// (usageBuilder): s.lim.use.
func (j *restoreJob) buildUsage() {
	if !j.tracking {
		return
	}
	s := j.s
	b := newUsageBuilder()
	var sc rowScan
	for _, row := range j.rows {
		if err := scanRow(row, &sc); err != nil {
			// prepareRestore scanned it.
			panic(fmt.Sprintf("fsm: restored reservation: %v", err))
		}
		b.account(sc.owner, &sc.rowMeta, sc.parts, sc.pendParts)
	}
	s.lim.use = b.build()
}

// finish reports the first stage's error, restores what needs the
// stores built (pins, scheduler, series) and returns the state.
func (j *restoreJob) finish() (*state, error) {
	for _, err := range j.errs {
		if err != nil {
			return nil, err
		}
	}
	s, msg := j.s, j.split.msg
	if j.unitBooks != nil {
		s.restorePins(j.pinIDs)
	}
	if err := s.restoreScheduler(msg, j.scheduledIDs); err != nil {
		return nil, err
	}
	if err := s.restoreSeries(msg); err != nil {
		return nil, err
	}
	// A snapshot written under a larger cap (or none) keeps only the
	// newest keys, as applying its log under this cap would have — but
	// not the young ones that version 3 entries keep past the cap (see
	// IdempotencyMinAge): before version 3 the cap was never exceeded, so
	// this is what applying the log gives.
	s.idem.trimKeeping(s.cfg.IdempotencyMaxKeys, s.now, s.cfg.IdempotencyMinAge)
	s.history = append(s.history, msg.GetHistory()...)
	if n := len(s.history) - s.cfg.HistoryLimit; n > 0 {
		s.history = s.history[n:]
	}
	return s, nil
}

// bookings collects the planner bookings of a restored table, their
// parts sharing one array.
type bookings struct {
	list  []planner.Booking
	parts []planner.Part
}

// add adds the booking of parts over [max(start, origin), end) under key;
// a booking wholly in the past needs no capacity and is skipped. Resource
// names are the resource table's strings, not the row's substrings, so
// the planner does not keep rows alive.
func (b *bookings) add(s *state, key string, parts []scanPart, start, end, origin int64) {
	start = max(start, origin)
	if end <= start {
		return
	}
	from := len(b.parts)
	for _, p := range parts {
		name := p.resource
		if res, ok := s.resources[name]; ok {
			name = res.GetName()
		}
		b.parts = append(b.parts, planner.Part{Resource: name, Amount: p.amount})
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
