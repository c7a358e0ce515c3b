package fsm

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// scanSamples are rows covering every field scanRow reads or checks.
func scanSamples() []*fsmv1.Reservation {
	return []*fsmv1.Reservation{
		{Id: "a"},
		{Id: "r-1", Owner: "alice", Parts: []*fsmv1.Part{part("cpu", 4)}, StartMillis: 10, EndMillis: 20,
			State: fsmv1.Reservation_STATE_HELD, HoldExpiresMillis: 15, CreatedVersion: 3, UpdatedVersion: 3, CreatedMillis: 5, UpdatedMillis: 5},
		{Id: "job.7", Owner: "bob", Labels: map[string]string{"z": "", "a": "x", "": "empty key", "é": "ü"},
			Parts: []*fsmv1.Part{part("cpu", 1), part("gpu", 2), {}}, StartMillis: -5, EndMillis: 1 << 40,
			State: fsmv1.Reservation_STATE_COMMITTED, UpdatedMillis: 99,
			Pending:                 &fsmv1.Modification{Parts: []*fsmv1.Part{part("gpu", 1)}, StartMillis: 30, EndMillis: 40, HoldExpiresMillis: 25, Version: 8},
			RequestedDurationMillis: 7, ActualEndMillis: 9, Kind: fsmv1.Reservation_KIND_VARIABLE_JOB, ProbabilityPermille: 1000,
			Relaxed: true, Pushes: 3, ShortUnits: 2, NotBeforeMillis: 11},
		{Id: "neg", State: fsmv1.Reservation_State(-3), Kind: fsmv1.Reservation_Kind(77), Pending: &fsmv1.Modification{}},
	}
}

// checkScan checks scanRow against proto.Unmarshal on b: if it accepts,
// the message decodes, re-encodes to exactly b, and every field scanRow
// read equals the decoded one; if it refuses, it says why.
func checkScan(t *testing.T, b []byte) {
	t.Helper()
	var sc rowScan
	err := scanRow(string(b), &sc)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		return
	}
	r := new(fsmv1.Reservation)
	if uerr := proto.Unmarshal(b, r); uerr != nil {
		t.Fatalf("scanRow accepts what proto.Unmarshal refuses (%v): %x", uerr, b)
	}
	if enc, _ := marshalOpts.Marshal(r); !bytes.Equal(enc, b) {
		t.Fatalf("scanRow accepts a non-canonical encoding:\n%x\nre-encodes to\n%x", b, enc)
	}
	if got, want := sc.rowMeta, metaOf(r); got != want {
		t.Fatalf("meta %+v, want %+v", got, want)
	}
	if sc.owner != r.GetOwner() || rowID(string(b)) != r.GetId() {
		t.Fatalf("owner %q id %q, want %q %q", sc.owner, rowID(string(b)), r.GetOwner(), r.GetId())
	}
	same := func(got []scanPart, want []*fsmv1.Part) bool {
		return slices.EqualFunc(got, want, func(g scanPart, w *fsmv1.Part) bool {
			return g.resource == w.GetResource() && g.amount == w.GetAmount()
		})
	}
	if !same(sc.parts, r.GetParts()) || !same(sc.pendParts, r.GetPending().GetParts()) {
		t.Fatalf("parts %v / %v, want %v / %v", sc.parts, sc.pendParts, r.GetParts(), r.GetPending().GetParts())
	}
}

// FuzzRowScan checks that the snapshot row scanner agrees with
// proto.Unmarshal (and the deterministic encoder) or refuses cleanly.
func FuzzRowScan(f *testing.F) {
	for _, r := range scanSamples() {
		b, err := marshalOpts.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(checkScan)
}

// TestScanRow checks the scanner on every sample and on malformed and
// non-canonical variants, each refused with an error naming the field.
func TestScanRow(t *testing.T) {
	for _, r := range scanSamples() {
		b, _ := marshalOpts.Marshal(r)
		var sc rowScan
		if err := scanRow(string(b), &sc); err != nil {
			t.Fatalf("%s: %v", r.GetId(), err)
		}
		checkScan(t, b)
		// Every truncation is refused (a cut inside a field) or is a
		// shorter canonical row; none panics.
		for i := range b {
			checkScan(t, b[:i])
		}
	}
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(tag(num, protowire.BytesType), v)
	}
	vint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(num, protowire.VarintType), v)
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	id := str(1, "x")
	for _, tc := range []struct {
		name string
		row  []byte
		want string
	}{
		{"no id", vint(5, 1), "id: missing"},
		{"empty id", cat(str(1, ""), vint(5, 1)), "id: "},
		{"bad utf-8 owner", cat(id, str(2, "\xff")), "owner: invalid UTF-8"},
		{"zero start", cat(id, vint(5, 0)), "start_millis: "},
		{"out of order", cat(id, vint(6, 1), vint(5, 1)), "start_millis: "},
		{"repeated scalar", cat(id, vint(5, 1), vint(5, 2)), "start_millis: "},
		{"wrong wire type", cat(id, str(5, "x")), "start_millis: wire type 2"},
		{"unknown field", cat(id, vint(40, 1)), "field 40: unknown"},
		{"bool 2", cat(id, vint(18, 2)), "relaxed: "},
		{"uint32 overflow", cat(id, vint(17, 1<<32)), "probability_permille: "},
		{"enum overflow", cat(id, vint(7, 1<<31)), "state: "},
		{"padded varint", cat(id, tag(5, protowire.VarintType), []byte{0x81, 0x00}), "field 5: malformed varint"},
		{"truncated length", cat(id, tag(2, protowire.BytesType), []byte{9, 'a'}), "field 2: malformed or truncated length"},
		{"fixed64", cat(id, protowire.AppendFixed64(tag(5, protowire.Fixed64Type), 1)), "field 5: wire type 1"},
		{"part unknown field", cat(id, str(4, string(vint(3, 1)))), "parts[0]: field 3: unknown"},
		{"part zero amount", cat(id, str(4, string(vint(2, 0)))), "parts[0]: amount: "},
		{"pending bad end", cat(id, str(13, string(vint(3, 0)))), "pending.end_millis: "},
		{"pending part", cat(id, str(13, string(str(1, string(str(1, "\xfe")))))), "pending.parts[0]: resource: invalid UTF-8"},
		{"label missing value", cat(id, str(3, string(str(1, "k")))), "labels: "},
		{"labels unsorted", cat(id, str(3, string(cat(str(1, "b"), str(2, "")))), str(3, string(cat(str(1, "a"), str(2, ""))))), "labels: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sc rowScan
			err := scanRow(string(tc.row), &sc)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
			checkScan(t, tc.row)
			if errors.Is(err, errNotCanonical) {
				// Refused only for its form: proto.Unmarshal reads it.
				if uerr := proto.Unmarshal(tc.row, new(fsmv1.Reservation)); uerr != nil {
					t.Fatalf("marked non-canonical but undecodable: %v", uerr)
				}
			}
		})
	}
}

// BenchmarkScanRow: scanRow over a typical committed one-part row and a
// held row with a pending modification, as restore scans every row.
func BenchmarkScanRow(b *testing.B) {
	rows := make([]string, 0, 2)
	for _, r := range []*fsmv1.Reservation{
		{Id: "r-0001234567", Owner: "tenant-07", Parts: []*fsmv1.Part{part("cluster-0042", 16)}, StartMillis: 1_795_700_000_000,
			EndMillis: 1_795_703_600_000, State: fsmv1.Reservation_STATE_COMMITTED, CreatedVersion: 3, UpdatedVersion: 3,
			CreatedMillis: 1_795_600_000_000, UpdatedMillis: 1_795_600_000_100},
		{Id: "r-0001234568", Owner: "tenant-08", Parts: []*fsmv1.Part{part("cluster-0043", 4), part("gpu-0043", 1)}, StartMillis: 1_795_700_000_000,
			EndMillis: 1_795_703_600_000, State: fsmv1.Reservation_STATE_HELD, HoldExpiresMillis: 1_795_600_030_000, CreatedVersion: 3,
			UpdatedVersion: 3, CreatedMillis: 1_795_600_000_000, UpdatedMillis: 1_795_600_000_100,
			Pending: &fsmv1.Modification{StartMillis: 1_795_700_000_000, EndMillis: 1_795_707_200_000, HoldExpiresMillis: 1_795_600_030_000}},
	} {
		rows = append(rows, string(mustAppendRow(nil, r)))
	}
	var sc rowScan
	for b.Loop() {
		for _, row := range rows {
			if err := scanRow(row, &sc); err != nil {
				b.Fatal(err)
			}
		}
	}
}
