package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// keyedHarness applies a mix of keyed commands with OK, REJECTED,
// NOT_FOUND and superseded results.
func keyedHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, Config{})
	h.must(0, OK, createRes("cpu", 8))
	h.must(0, OK, hold("a", "cpu", 4, 100, withKey("k1"), withOwner("alice")))
	h.must(0, OK, commit("a", withKey("k2"), withOwner("alice")))
	h.must(0, OK, reserve("b", "cpu", 4, 100, withKey("k1"), withOwner("bob")))
	h.must(0, fsmv1.Result_STATUS_NOT_FOUND, abort("zzz", withKey("k3"), withOwner("bob")))
	h.must(0, OK, cancel("a", withKey("k4"), withOwner("alice")))
	return h
}

// TestDecodeSplitMatchesDecodeSnapshot checks that the compact restore
// path reads the same state as the plain decoder, and that a restored
// replica replays remembered keys with the original results.
func TestDecodeSplitMatchesDecodeSnapshot(t *testing.T) {
	h := keyedHarness(t)
	snap := snapshotBytes(t, h.f)

	full, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	split, err := decodeSplit(snap)
	if err != nil {
		t.Fatal(err)
	}
	msg, idem := split.msg, split.idem
	if len(full.GetIdempotency()) != 5 || idem.len() != len(full.GetIdempotency()) {
		t.Fatalf("idempotency records: split %d, full %d, want 5", idem.len(), len(full.GetIdempotency()))
	}
	recs := full.Idempotency
	full.Idempotency = nil
	if split.rows.len() == 0 || split.rows.len() != len(full.GetReservations()) {
		t.Fatalf("reservations: split %d, full %d", split.rows.len(), len(full.GetReservations()))
	}
	for i := range split.rows.len() {
		row := split.rows.get(i)
		if want, _ := marshalOpts.Marshal(full.GetReservations()[i]); !bytes.Equal(row, want) {
			t.Fatalf("reservations[%d]: split bytes differ from the full decode's encoding", i)
		}
	}
	full.Reservations = nil
	if !proto.Equal(msg, full) {
		t.Fatalf("split message differs from the full decode without reservations and idempotency")
	}
	back, err := expandIdem(idem.view())
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if !proto.Equal(back[i], recs[i]) {
			t.Errorf("idempotency[%d]: split %v, full %v", i, back[i], recs[i])
		}
	}

	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if got := snapshotBytes(t, g); !bytes.Equal(got, snap) {
		t.Fatal("snapshot → restore → snapshot is not byte-identical")
	}
	// The same keyed command on both replicas replays the stored result.
	r := &harness{t: t, f: g, index: h.index}
	for _, tc := range []struct {
		name string
		cmd  *fsmv1.Command
		want fsmv1.Result_Status
	}{
		{"ok hold", hold("a", "cpu", 4, 100, withKey("k1"), withOwner("alice")), OK},
		{"not found", abort("zzz", withKey("k3"), withOwner("bob")), fsmv1.Result_STATUS_NOT_FOUND},
	} {
		want := h.apply(0, proto.CloneOf(tc.cmd))
		got := r.apply(0, tc.cmd)
		if !got.GetReplayed() || got.GetStatus() != tc.want {
			t.Errorf("%s: replayed=%v status=%s, want replayed %s", tc.name, got.GetReplayed(), got.GetStatus(), tc.want)
		}
		got.Version, want.Version = 0, 0
		if !proto.Equal(got, want) {
			t.Errorf("%s: restored replica replays %v, original %v", tc.name, got, want)
		}
	}
}

// TestEncodeSnapshotIdem checks that writing the compact idempotency
// entries as stored bytes gives exactly the file the plain encoder writes
// for the expanded message, with and without history and records.
func TestEncodeSnapshotIdem(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history int
		keyed   bool
	}{
		{"records and history", DefaultHistoryLimit, true},
		{"records, no history", -1, true},
		{"history, no records", DefaultHistoryLimit, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{HistoryLimit: tc.history}
			if tc.history < 0 {
				cfg.HistoryLimit = 0
			}
			h := newHarness(t, cfg)
			if tc.history < 0 {
				h.f.cfg.HistoryLimit = 0
				h.f.st.cfg.HistoryLimit = 0
			}
			h.must(0, OK, createRes("cpu", 8))
			for i := range 20 {
				var opts []reqOpt
				if tc.keyed {
					opts = append(opts, withKey(fmt.Sprintf("k%d", i)), withOwner("o"))
				}
				h.apply(int64(i), hold(fmt.Sprintf("r%d", i), "cpu", 1+int64(i%3), 50, opts...))
			}
			msg, rows, idem := h.f.st.capture()
			recs, err := expandIdem(idem)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeSnapshotIdem(msg, ascend(rows), idem)
			if err != nil {
				t.Fatal(err)
			}
			msg.Idempotency = recs
			for row := range ascend(rows) {
				msg.Reservations = append(msg.Reservations, decodeRow(row))
			}
			want, err := EncodeSnapshot(msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("compact encoding (%d bytes) differs from the plain one (%d bytes)", len(got), len(want))
			}
			msg.Reservations = nil
			if _, err := encodeSnapshotIdem(msg, ascend(rows), idem); tc.keyed && err == nil {
				t.Fatal("records given both ways were accepted")
			}
		})
	}
}

// frameBody wraps body in a valid snapshot header.
func frameBody(body []byte) []byte {
	out := make([]byte, headerLen, headerLen+len(body))
	copy(out, snapshotMagic)
	binary.BigEndian.PutUint32(out[4:], SnapshotVersion)
	binary.BigEndian.PutUint64(out[8:], uint64(len(body)))
	binary.BigEndian.PutUint32(out[16:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return append(out, body...)
}

// idemField encodes one Snapshot.idempotency field from raw record fields.
func idemField(fields ...[]byte) []byte {
	var rec []byte
	for _, f := range fields {
		rec = append(rec, f...)
	}
	b := protowire.AppendTag(nil, snapshotIdemField, protowire.BytesType)
	return protowire.AppendBytes(b, rec)
}

func strField(num protowire.Number, v string) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func resultField(r []byte) []byte {
	b := protowire.AppendTag(nil, 4, protowire.BytesType)
	return protowire.AppendBytes(b, r)
}

func encResult(t *testing.T, r *fsmv1.Result) []byte {
	t.Helper()
	b, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreIdempotencyRecords covers hand-made idempotency records:
// what proto.Unmarshal accepts must be accepted the same way (merged
// repeated results, unknown fields), and what it or the table checks
// refuse must leave the old state untouched.
func TestRestoreIdempotencyRecords(t *testing.T) {
	ok := encResult(t, &fsmv1.Result{Status: OK, Version: 3})
	extra := encResult(t, &fsmv1.Result{Message: "second half", Expired: 2})
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	for _, tc := range []struct {
		name string
		body []byte
		bad  bool
	}{
		{"plain", idemField(strField(1, "o"), strField(2, "k"), resultField(ok)), false},
		{"merged results and unknown field", idemField(strField(1, "o"), resultField(ok), unknown, strField(2, "k"), resultField(extra)), false},
		{"two records", append(idemField(strField(2, "k1"), resultField(ok)), idemField(strField(2, "k2"), resultField(ok))...), false},
		{"empty key", idemField(strField(1, "o"), resultField(ok)), true},
		{"no result", idemField(strField(2, "k")), true},
		{"undecodable result", idemField(strField(2, "k"), resultField([]byte{0xff})), true},
		{"invalid UTF-8 key", idemField(strField(2, "k\xff"), resultField(ok)), true},
		{"duplicate key", append(idemField(strField(2, "k"), resultField(ok)), idemField(strField(2, "k"), resultField(ok))...), true},
		{"truncated record", protowire.AppendBytes(protowire.AppendTag(nil, snapshotIdemField, protowire.BytesType), []byte{0x0a, 0x05, 'o'}), true},
		{"truncated body", []byte{0x2a, 0x10, 0x01}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := frameBody(tc.body)
			_, fullErr := DecodeSnapshot(snap)
			_, splitErr := decodeSplit(snap)
			if tc.bad != (splitErr != nil || tc.name == "duplicate key") {
				t.Fatalf("decodeSplit error %v, want bad=%v", splitErr, tc.bad)
			}
			if fullErr != nil && splitErr == nil {
				t.Fatalf("DecodeSnapshot refuses (%v) what decodeSplit accepts", fullErr)
			}
			h := keyedHarness(t)
			before := snapshotBytes(t, h.f)
			err := h.f.Restore(io.NopCloser(bytes.NewReader(snap)))
			if tc.bad {
				if !errors.Is(err, ErrBadSnapshot) {
					t.Fatalf("Restore: %v, want ErrBadSnapshot", err)
				}
				if !bytes.Equal(snapshotBytes(t, h.f), before) {
					t.Fatal("a refused restore changed the state")
				}
				return
			}
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			// Persist writes what the plain decoder reads.
			full, err := DecodeSnapshot(snap)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeSnapshot(snapshotBytes(t, h.f))
			if err != nil {
				t.Fatal(err)
			}
			if len(again.GetIdempotency()) != len(full.GetIdempotency()) {
				t.Fatalf("%d records after restore, want %d", len(again.GetIdempotency()), len(full.GetIdempotency()))
			}
			for i, rec := range full.GetIdempotency() {
				// Unknown fields of a record are not kept by the compact form.
				rec.ProtoReflect().SetUnknown(nil)
				if !proto.Equal(again.GetIdempotency()[i], rec) {
					t.Errorf("record %d: %v after restore, want %v", i, again.GetIdempotency()[i], rec)
				}
			}
		})
	}
}

// TestRestoreShortInput checks that inputs shorter than their header says
// are refused, not read past or preallocated without bound.
func TestRestoreShortInput(t *testing.T) {
	valid := frameBody(nil)
	huge := bytes.Clone(valid)
	binary.BigEndian.PutUint64(huge[8:], maxSnapshotLen)
	more := bytes.Clone(valid)
	binary.BigEndian.PutUint64(more[8:], 100)
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"partial header", valid[:10]},
		{"header claims more", more},
		{"huge length", huge},
		{"trailing bytes", append(bytes.Clone(valid), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Restore(io.NopCloser(bytes.NewReader(tc.in))); !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("Restore: %v, want ErrBadSnapshot", err)
			}
		})
	}
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(valid))); err != nil {
		t.Fatalf("empty snapshot: %v", err)
	}
}

// expandIdem decodes compact idempotency records into the records of
// the snapshot format.
func expandIdem(v idemView) ([]*fsmv1.IdempotencyRecord, error) {
	var out []*fsmv1.IdempotencyRecord
	var err error
	v.each(func(e idemRecord) {
		r := new(fsmv1.Result)
		if uerr := proto.Unmarshal(e.result, r); uerr != nil && err == nil {
			err = fmt.Errorf("idempotency record %d: %w", len(out), uerr)
		}
		out = append(out, &fsmv1.IdempotencyRecord{Owner: string(e.owner), Key: string(e.key), AtMillis: e.at, Result: r})
	})
	return out, err
}

// TestRestoreLargeSnapshot restores a snapshot longer than readSnapshot's
// first read, delivered in small pieces, and checks that the restored
// state snapshots to the same bytes.
func TestRestoreLargeSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 30,000 reservations")
	}
	f, _ := loaded(t, 30000)
	snap := snapshotBytes(t, f)
	if len(snap) <= 4<<20 {
		t.Fatalf("snapshot of %d bytes does not exceed the 4 MiB first read", len(snap))
	}
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(iotest.HalfReader(bytes.NewReader(snap)))); err != nil {
		t.Fatal(err)
	}
	if got := snapshotBytes(t, g); !bytes.Equal(got, snap) {
		t.Fatalf("restored state snapshots to %d bytes that differ from the %d restored", len(got), len(snap))
	}
}

// TestRestoreIdemFirstError checks that a record refused only for the
// UTF-8 of its key (which the store's build leaves to the check stages)
// is reported at its own index, before a later repeat of it that the
// build refuses as a duplicate, whatever order the stages run in.
func TestRestoreIdemFirstError(t *testing.T) {
	ok := encResult(t, &fsmv1.Result{Status: OK, Version: 3})
	var body []byte
	for _, key := range []string{"a", "k\xff", "k\xff", "b"} {
		body = append(body, idemField(strField(1, "o"), strField(2, key), resultField(ok))...)
	}
	backwards := func(stages []func()) {
		for i := len(stages) - 1; i >= 0; i-- {
			stages[i]()
		}
	}
	for name, run := range map[string]StageRunner{"in order": nil, "backwards": backwards} {
		h := keyedHarness(t)
		err := h.f.RestoreWith(io.NopCloser(bytes.NewReader(frameBody(body))), run)
		if !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), "idempotency[1]: field 2: invalid UTF-8") {
			t.Fatalf("%s: Restore: %v, want idempotency[1]'s invalid UTF-8", name, err)
		}
	}
}
