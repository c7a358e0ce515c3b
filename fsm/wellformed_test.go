package fsm

import (
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// wellFormedSeeds are encoded Results touching every kind of field the
// schema has: strings, maps, nested and repeated messages, enums.
func wellFormedSeeds(t testing.TB) [][]byte {
	t.Helper()
	msgs := []*fsmv1.Result{
		{},
		{Status: fsmv1.Result_STATUS_OK, Version: 7, NowMillis: -3, Replayed: true, Expired: 2},
		{Status: fsmv1.Result_STATUS_REJECTED, Message: "no capacity", Reservation: &fsmv1.Reservation{
			Id: "r1", Owner: "alice", Labels: map[string]string{"team": "ml", "": "x"},
			Parts:       []*fsmv1.Part{{Resource: "gpu", Amount: 2, Units: []string{"g0", "g1"}}, {Resource: "cpu", Amount: 8}},
			StartMillis: 10, EndMillis: 20,
		}},
		{Resource: &fsmv1.Resource{Name: "gpu", Capacity: 8, Labels: map[string]string{"k": "v"},
			Windows: []*fsmv1.CapacityWindow{{FromMillis: 1, ToMillis: 2, Capacity: 3}}, Units: []string{"a", "b"}}},
		{Moved: []*fsmv1.Move{{Id: "j1", FromMillis: 1, ToMillis: 2}, {Id: "j2"}}},
	}
	var out [][]byte
	for _, m := range msgs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkWellFormed fails unless wellFormed accepts b exactly when
// proto.Unmarshal does (groups and deep nesting aside, where it may only
// refuse).
func checkWellFormed(t *testing.T, b []byte) {
	t.Helper()
	got := wellFormed(b, resultShape, 0)
	err := proto.Unmarshal(b, new(fsmv1.Result))
	if got && err != nil {
		t.Fatalf("wellFormed accepts %x, which proto.Unmarshal refuses: %v", b, err)
	}
	if !got && err == nil && !hasGroupOrDeep(b) {
		t.Fatalf("wellFormed refuses %x, which proto.Unmarshal accepts", b)
	}
}

// hasGroupOrDeep reports whether b contains a group wire type anywhere a
// nested walk finds it, or nests past wellFormedDepth: input wellFormed
// may leave to the generic decoder.
func hasGroupOrDeep(b []byte) bool {
	var walk func(b []byte, depth int) bool
	walk = func(b []byte, depth int) bool {
		if depth > wellFormedDepth {
			return true
		}
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return false
			}
			if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
				return true
			}
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				return false
			}
			if typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(b[n:])
				if walk(v, depth+1) {
					return true
				}
			}
			b = b[n+m:]
		}
		return false
	}
	return walk(b, 0)
}

func TestWellFormedAgreesWithUnmarshal(t *testing.T) {
	seeds := wellFormedSeeds(t)
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(tag(num, protowire.BytesType), v)
	}
	bad := []byte{0xff, 0xfe}
	cases := []struct {
		name string
		b    []byte
		want bool
	}{
		{"empty", nil, true},
		{"invalid UTF-8 message", bytesField(2, bad), false},
		{"invalid UTF-8 in reservation id", bytesField(6, bytesField(1, bad)), false},
		{"invalid UTF-8 in label key", bytesField(6, bytesField(3, bytesField(1, bad))), false},
		{"invalid UTF-8 in label value", bytesField(6, bytesField(3, bytesField(2, bad))), false},
		{"invalid UTF-8 in part unit", bytesField(6, bytesField(4, bytesField(40, bad))), false},
		{"invalid UTF-8 in unknown field", bytesField(900, bad), true},
		{"known field, other wire type", cat(tag(2, protowire.VarintType), []byte{5}), true},
		{"message field as varint", cat(tag(6, protowire.VarintType), []byte{5}), true},
		{"truncated varint", cat(tag(3, protowire.VarintType), []byte{0x80}), false},
		{"overlong varint", cat(tag(3, protowire.VarintType), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), false},
		{"truncated length", cat(tag(2, protowire.BytesType), []byte{5, 'a'}), false},
		{"field number 0", []byte{0x02, 0x00}, false},
		{"truncated fixed64 unknown", cat(tag(901, protowire.Fixed64Type), []byte{1, 2}), false},
		{"stray end group", tag(4, protowire.EndGroupType), false},
		{"nested garbage", bytesField(7, []byte{0x80}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wellFormed(tc.b, resultShape, 0); got != tc.want {
				t.Fatalf("wellFormed(%x) = %v, want %v", tc.b, got, tc.want)
			}
			checkWellFormed(t, tc.b)
		})
	}
	for i, b := range seeds {
		if !wellFormed(b, resultShape, 0) {
			t.Fatalf("seed %d refused", i)
		}
		// Every truncation and every single-byte change of a seed.
		for n := range len(b) {
			checkWellFormed(t, b[:n])
			for _, x := range []byte{0x00, 0x80, 0xff, b[n] ^ 0x07, b[n] + 1} {
				c := append([]byte(nil), b...)
				c[n] = x
				checkWellFormed(t, c)
			}
		}
	}
}

// FuzzWellFormed: wellFormed accepts what proto.Unmarshal accepts as a
// Result, and nothing it refuses.
func FuzzWellFormed(f *testing.F) {
	for _, b := range wellFormedSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkWellFormed(t, b) })
}

// BenchmarkIdemResultCheck compares the check of one stored result by
// wellFormed with a decode into a Result.
func BenchmarkIdemResultCheck(b *testing.B) {
	seeds := wellFormedSeeds(b)
	res := seeds[2]
	b.Run("wellFormed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !wellFormed(res, resultShape, 0) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		var r fsmv1.Result
		for b.Loop() {
			if err := proto.Unmarshal(res, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestResultShapeMatchesDescriptor: every field of Result and of the
// messages it contains has its kind in resultShape, and no other number
// is known.
func TestResultShapeMatchesDescriptor(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor, sh *msgShape)
	walk = func(md protoreflect.MessageDescriptor, sh *msgShape) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		known := 0
		for num := range protowire.Number(maxDenseField + 8) {
			fd := md.Fields().ByNumber(num)
			got := sh.field(num)
			if fd == nil {
				if got.kind != 0 {
					t.Fatalf("%s: field %d in the shape, not in the schema", md.FullName(), num)
				}
				continue
			}
			known++
			if got.kind != fd.Kind() || got.list != fd.IsList() {
				t.Fatalf("%s.%s: shape %v list=%v, schema %v list=%v", md.FullName(), fd.Name(), got.kind, got.list, fd.Kind(), fd.IsList())
			}
			if fd.Kind() == protoreflect.MessageKind {
				walk(fd.Message(), got.msg)
			}
		}
		if known != md.Fields().Len() {
			t.Fatalf("%s: %d fields below %d, schema has %d", md.FullName(), known, maxDenseField+8, md.Fields().Len())
		}
	}
	walk(resultDesc, resultShape)
}
