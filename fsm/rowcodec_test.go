package fsm

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// randRow returns a random Reservation that sets every field sometimes,
// with the values the encoder treats specially (zero, negative, the
// largest, empty strings in maps and repeated fields, multi-byte runes).
func randRow(rng *rand.Rand) *fsmv1.Reservation {
	str := func() string {
		switch rng.IntN(5) {
		case 0:
			return ""
		case 1:
			return "é☃"
		case 2:
			return string(bytes.Repeat([]byte("x"), 130)) // two-byte length
		}
		return fmt.Sprintf("s%d", rng.IntN(1000))
	}
	i64 := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return -1 - rng.Int64N(1000)
		case 2:
			return math.MaxInt64
		case 3:
			return math.MinInt64
		}
		return rng.Int64N(1 << 45)
	}
	u64 := func() uint64 {
		if rng.IntN(3) == 0 {
			return 0
		}
		return rng.Uint64() >> rng.IntN(64)
	}
	u32 := func() uint32 { return uint32(u64()) }
	parts := func() []*fsmv1.Part {
		var ps []*fsmv1.Part
		for range rng.IntN(4) {
			p := &fsmv1.Part{Resource: str(), Amount: i64()}
			for range rng.IntN(3) {
				p.Units = append(p.Units, str())
			}
			ps = append(ps, p)
		}
		return ps
	}
	r := &fsmv1.Reservation{
		Id: str(), Owner: str(), Parts: parts(),
		StartMillis: i64(), EndMillis: i64(),
		State:             fsmv1.Reservation_State([]int32{0, 1, 2, 3, 7, 30, 31, -1, math.MaxInt32}[rng.IntN(9)]),
		HoldExpiresMillis: i64(), CreatedVersion: u64(), UpdatedVersion: u64(),
		CreatedMillis: i64(), UpdatedMillis: i64(),
		RequestedDurationMillis: i64(), ActualEndMillis: i64(),
		Kind:                fsmv1.Reservation_Kind([]int32{0, 1, -5}[rng.IntN(3)]),
		ProbabilityPermille: u32(), Relaxed: rng.IntN(2) == 0, Pushes: u32(),
		ShortUnits: i64(), NotBeforeMillis: i64(),
		ApprovalReason: str(), DecisionReason: str(),
	}
	if n := rng.IntN(4); n > 0 {
		r.Labels = map[string]string{}
		for range n {
			r.Labels[str()] = str()
		}
	}
	if rng.IntN(3) == 0 {
		r.Pending = &fsmv1.Modification{Parts: parts(), StartMillis: i64(), EndMillis: i64(), HoldExpiresMillis: i64(), Version: u64()}
	}
	if rng.IntN(4) == 0 {
		r.Materialization = &fsmv1.Materialization{
			State: fsmv1.Materialization_State(rng.IntN(3)), Message: str(), Name: str(),
			Units: []string{str(), str()}, StartMillis: i64(), EndMillis: i64(), Version: u64(), AtMillis: i64(),
		}
	}
	return r
}

// checkRowCodec holds appendRow and decodeRowFast to the generic codec
// for r.
func checkRowCodec(t *testing.T, r *fsmv1.Reservation) {
	t.Helper()
	want, wantErr := marshalOpts.Marshal(r)
	got, err := appendRow([]byte("prefix"), r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendRow error %v, generic encoder %v, for %v", err, wantErr, r)
	}
	if err != nil {
		return
	}
	if rowEncodable(r) && rowSize(r) != len(want) {
		t.Fatalf("rowSize %d, encoding of %d bytes, for %v", rowSize(r), len(want), r)
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("appendRow wrote\n%x\nthe generic encoder\n%x\nfor %v", got[len("prefix"):], want, r)
	}
	ref := new(fsmv1.Reservation)
	if err := proto.Unmarshal(want, ref); err != nil {
		t.Fatalf("generic decoder: %v", err)
	}
	dec, ok := decodeRowFast(string(want))
	if !ok && rowHasUnknown(ref) {
		return // left to the generic decoder, as it must be
	}
	if !ok {
		t.Fatalf("decodeRowFast refused the encoding of %v", r)
	}
	if !proto.Equal(dec, ref) {
		t.Fatalf("decodeRowFast read\n%v\nthe generic decoder\n%v", dec, ref)
	}
	var sc rowScan
	if ref.GetId() != "" && scanRow(string(want), &sc) == nil {
		var m rowMeta
		if err := scanMeta(string(want), &m); err != nil || m != sc.rowMeta {
			t.Fatalf("scanMeta read %+v (%v), scanRow %+v", m, err, sc.rowMeta)
		}
	}
	if c := cloneRow(ref); !proto.Equal(c, ref) {
		t.Fatalf("cloneRow gave\n%v\nfor\n%v", c, ref)
	}
	if again := mustAppendRow(nil, dec); !bytes.Equal(again, want) {
		t.Fatalf("re-encoding the fast decoding differs:\n%x\n%x", again, want)
	}
}

var rowSeed = flag.Uint64("fsm.rowseed", 0, "TestRowCodecMatchesProto's seed (0: from the clock)")

// rowHasUnknown reports whether r, its parts or its modification carry
// unknown fields, which decodeRowFast leaves to the generic decoder.
func rowHasUnknown(r *fsmv1.Reservation) bool {
	ms := []proto.Message{r}
	if r.Pending != nil {
		ms = append(ms, r.Pending)
		for _, p := range r.Pending.Parts {
			ms = append(ms, p)
		}
	}
	for _, p := range r.Parts {
		ms = append(ms, p)
	}
	for _, m := range ms {
		if len(m.ProtoReflect().GetUnknown()) > 0 {
			return true
		}
	}
	return false
}

func TestRowCodecMatchesProto(t *testing.T) {
	seed := *rowSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -fsm.rowseed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 23))
	for range 20_000 {
		checkRowCodec(t, randRow(rng))
	}
	// Fixed cases: the empty row, an empty modification and part, and
	// rows the generic encoder refuses or writes itself.
	checkRowCodec(t, &fsmv1.Reservation{})
	checkRowCodec(t, &fsmv1.Reservation{Id: "a", Pending: &fsmv1.Modification{}, Parts: []*fsmv1.Part{{}}})
	checkRowCodec(t, &fsmv1.Reservation{Id: "a", Labels: map[string]string{"": ""}})
	checkRowCodec(t, &fsmv1.Reservation{Id: "bad\xff"})
	checkRowCodec(t, &fsmv1.Reservation{Id: "a", Labels: map[string]string{"k": "\xff"}})
	checkRowCodec(t, &fsmv1.Reservation{Id: "a", Parts: []*fsmv1.Part{{Units: []string{"\xfe"}}}})
	withUnknown := &fsmv1.Reservation{Id: "a"}
	withUnknown.ProtoReflect().SetUnknown(protoreflect.RawFields{0xf8, 0x07, 0x01}) // field 127, varint 1
	checkRowCodec(t, withUnknown)
}

// TestRowDecodeFallback: bytes the fast decoder must leave to the
// generic one (a repeated scalar, fields out of order, an unknown field,
// a non-minimal varint) are refused by it, and decodeRow still decodes
// them as the generic decoder does.
func TestRowDecodeFallback(t *testing.T) {
	for name, b := range map[string][]byte{
		"repeated scalar": {0x0a, 0x01, 'a', 0x28, 0x01, 0x28, 0x02},
		"out of order":    {0x28, 0x01, 0x0a, 0x01, 'a'},
		"unknown field":   {0x0a, 0x01, 'a', 0xf8, 0x07, 0x01},
		"padded varint":   {0x0a, 0x01, 'a', 0x28, 0x81, 0x00},
		"repeated pend":   {0x0a, 0x01, 'a', 0x6a, 0x02, 0x10, 0x01, 0x6a, 0x02, 0x18, 0x01},
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := decodeRowFast(string(b)); ok {
				t.Fatalf("decodeRowFast accepted %x", b)
			}
			ref := new(fsmv1.Reservation)
			if err := proto.Unmarshal(b, ref); err != nil {
				t.Fatal(err)
			}
			if got := decodeRow(string(b)); !proto.Equal(got, ref) {
				t.Fatalf("decodeRow %v, generic %v", got, ref)
			}
		})
	}
}

// FuzzRowCodec: whatever the fast decoder accepts, the generic one
// decodes to an equal message; whatever the generic one decodes, the
// fast encoder encodes exactly as the generic encoder does.
func FuzzRowCodec(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		b, err := marshalOpts.Marshal(randRow(rng))
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ref := new(fsmv1.Reservation)
		refErr := proto.Unmarshal(b, ref)
		if dec, ok := decodeRowFast(string(b)); ok {
			if refErr != nil {
				t.Fatalf("decodeRowFast accepted %x, which the generic decoder refuses: %v", b, refErr)
			}
			if !proto.Equal(dec, ref) {
				t.Fatalf("decodeRowFast read\n%v\nthe generic decoder\n%v", dec, ref)
			}
		}
		if refErr == nil {
			checkRowCodec(t, ref)
		}
	})
}

// TestRowCodecCoversSchema fails when Reservation, Part or Modification
// gains (or loses) a field: appendRow and decodeRowFast must then learn
// it, or a field would be silently dropped from every stored row.
func TestRowCodecCoversSchema(t *testing.T) {
	for _, tc := range []struct {
		msg  proto.Message
		want []protoreflect.FieldNumber
	}{
		{&fsmv1.Reservation{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 50, 60, 61}},
		{&fsmv1.Part{}, []protoreflect.FieldNumber{1, 2, 40}},
		{&fsmv1.Modification{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5}},
		// plainResult and appendPlainResult (codec.go) know these.
		{&fsmv1.Result{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 30, 60, 61}},
	} {
		fields := tc.msg.ProtoReflect().Descriptor().Fields()
		var got []protoreflect.FieldNumber
		for i := range fields.Len() {
			got = append(got, fields.Get(i).Number())
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s has fields %v; the row codec knows %v: teach rowcodec.go (appendRow, rowSize, decodeRowFast, cloneRow) or plainResult in codec.go the change",
				tc.msg.ProtoReflect().Descriptor().FullName(), got, tc.want)
		}
	}
}

// TestAutoIDMatchesFmt holds the hand-written IDs to the format they
// always had.
func TestAutoIDMatchesFmt(t *testing.T) {
	for _, index := range []uint64{0, 1, 9, 10, 12345, 1<<32 + 7, math.MaxInt64, math.MaxUint64} {
		if got, want := AutoID(index), fmt.Sprintf("%s%020d", AutoIDPrefix, index); got != want {
			t.Errorf("AutoID(%d) = %q, want %q", index, got, want)
		}
		for _, n := range []int{0, 1, 9, 10, 255, 1000} {
			want := fmt.Sprintf("%s%020d-%d", AutoIDPrefix, index, n)
			if n == 0 {
				want = AutoID(index)
			}
			if got := GroupAutoID(index, n); got != want {
				t.Errorf("GroupAutoID(%d, %d) = %q, want %q", index, n, got, want)
			}
		}
	}
}

// TestEncodeResultMatchesProto: a result encoded with its reservation
// spliced in is byte for byte the generic encoding, whatever fields
// surround it.
func TestEncodeResultMatchesProto(t *testing.T) {
	seed := *rowSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -fsm.rowseed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	for range 5_000 {
		r := &fsmv1.Result{
			Status:    fsmv1.Result_Status(rng.IntN(8)),
			Version:   rng.Uint64() >> rng.IntN(64),
			NowMillis: rng.Int64N(1 << 42),
			Replayed:  rng.IntN(4) == 0,
			Expired:   rng.Int64N(3),
		}
		if rng.IntN(2) == 0 {
			r.Message = fmt.Sprintf("message %d é", rng.IntN(100))
		}
		if rng.IntN(4) != 0 {
			r.Reservation = randRow(rng)
		}
		if rng.IntN(5) == 0 {
			r.Resource = &fsmv1.Resource{Name: "cpu", Capacity: rng.Int64N(100)}
		}
		for range rng.IntN(3) {
			r.Moved = append(r.Moved, &fsmv1.Move{Id: fmt.Sprintf("j%d", rng.IntN(9)), FromMillis: rng.Int64N(99), ToMillis: rng.Int64N(99)})
		}
		if rng.IntN(3) == 0 {
			r.Fingerprint = []byte{byte(rng.IntN(256)), 1, 2}
		}
		switch rng.IntN(5) {
		case 1:
			r.Detail = &fsmv1.Result_Rejected{Rejected: &fsmv1.Rejected{LaterOk: true, LaterStartMillis: rng.Int64N(1e6)}}
		case 2:
			r.Detail = &fsmv1.Result_Invalid{Invalid: &fsmv1.Invalid{Field: "request.id", Reason: "bad"}}
		case 3:
			r.Detail = &fsmv1.Result_Conflict{Conflict: &fsmv1.Conflict{Kind: fsmv1.Conflict_KIND_WRONG_STATE, ViolatedIds: []string{"a"}}}
		case 4:
			r.Detail = &fsmv1.Result_LimitExceeded{LimitExceeded: &fsmv1.LimitExceeded{}}
		}
		keep := r.Reservation
		want, wantErr := marshalOpts.Marshal(r)
		if wantErr != nil {
			// The generic encoder refuses it (invalid UTF-8 in the
			// row): encodeResult must panic as it always did.
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("encodeResult accepted what the generic encoder refuses: %v", wantErr)
					}
				}()
				encodeResult(r)
			}()
			continue
		}
		if got := encodeResult(r); !bytes.Equal(got, want) {
			t.Fatalf("encodeResult wrote\n%x\nthe generic encoder\n%x\nfor %v", got, want, r)
		}
		if r.Reservation != keep {
			t.Fatal("encodeResult did not put the reservation back")
		}
	}
}

// TestResultReservationField checks the field number encodeResult
// splices the reservation at.
func TestResultReservationField(t *testing.T) {
	f := (&fsmv1.Result{}).ProtoReflect().Descriptor().Fields().ByName("reservation")
	if f == nil || f.Number() != resultReservationField {
		t.Fatalf("Result.reservation is %v, encodeResult assumes field %d", f, resultReservationField)
	}
}
