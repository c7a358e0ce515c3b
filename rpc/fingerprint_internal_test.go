package rpc

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// fingerprintReference is the definition of a fingerprint (and how it
// was computed before): clone, clear the key, encode deterministically,
// hash the message name, a zero byte and the encoding. Fingerprints are
// stored in the log and compared by servers of other releases, so
// fingerprint must agree with it byte for byte.
func fingerprintReference(msg proto.Message) []byte {
	m := proto.Clone(msg)
	r := m.ProtoReflect()
	if f := r.Descriptor().Fields().ByName("idempotency_key"); f != nil {
		r.Clear(f)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil
	}
	h := sha256.New()
	h.Write([]byte(r.Descriptor().FullName()))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)
}

// keyedTypes are the API's request messages with an idempotency key:
// every message the edge fingerprints.
func keyedTypes(t testing.TB) []protoreflect.MessageType {
	var out []protoreflect.MessageType
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		d := mt.Descriptor()
		if d.ParentFile().Package() == "ledgerd.v1" && d.Fields().ByName("idempotency_key") != nil {
			out = append(out, mt)
		}
		return true
	})
	if len(out) < 10 {
		t.Fatalf("found %d keyed request types; the registry lookup is broken", len(out))
	}
	return out
}

// fill sets a random subset of m's fields to random values, recursing
// into messages up to depth.
func fill(rng *rand.Rand, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if rng.IntN(3) == 0 || (fd.Message() != nil && depth == 0) {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range rng.IntN(4) {
				k := randScalar(rng, fd.MapKey())
				if fd.MapValue().Message() != nil {
					v := mp.NewValue()
					fill(rng, v.Message(), depth-1)
					mp.Set(k.MapKey(), v)
				} else {
					mp.Set(k.MapKey(), randScalar(rng, fd.MapValue()))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range rng.IntN(4) {
				if fd.Message() != nil {
					v := l.NewElement()
					fill(rng, v.Message(), depth-1)
					l.Append(v)
				} else {
					l.Append(randScalar(rng, fd))
				}
			}
		case fd.Message() != nil:
			fill(rng, m.Mutable(fd).Message(), depth-1)
		default:
			m.Set(fd, randScalar(rng, fd))
		}
	}
}

func randScalar(rng *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rng.IntN(2) == 0)
	case protoreflect.EnumKind:
		vs := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vs.Get(rng.IntN(vs.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(rng.Int32() - rng.Int32())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(rng.Int64() - rng.Int64())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(rng.Uint32())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(rng.Uint64())
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(rng.Float32())
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(rng.Float64())
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(randString(rng)))
	default:
		return protoreflect.ValueOfString(randString(rng))
	}
}

func randString(rng *rand.Rand) string {
	const alphabet = "abcxyz-_.0189é"
	r := []rune(alphabet)
	s := make([]rune, rng.IntN(20))
	for i := range s {
		s[i] = r[rng.IntN(len(r))]
	}
	return string(s)
}

// TestFingerprintMatchesReference: for random requests of every keyed
// type, with and without a key, with unknown fields, the fingerprint is
// the reference's, and a request differing only in its key has the same
// fingerprint.
func TestFingerprintMatchesReference(t *testing.T) {
	seed := uint64(20261126)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, mt := range keyedTypes(t) {
		t.Run(string(mt.Descriptor().Name()), func(t *testing.T) {
			for i := range 300 {
				m := mt.New()
				fill(rng, m, 3)
				if i%7 == 0 {
					// An unknown field, as a newer client's would be, and
					// one with the key's number but another wire type
					// (what decoding makes of such a field).
					u := protowire.AppendTag(nil, 1000, protowire.VarintType)
					u = protowire.AppendVarint(u, uint64(i))
					u = protowire.AppendTag(u, m.Descriptor().Fields().ByName("idempotency_key").Number(), protowire.VarintType)
					m.SetUnknown(protowire.AppendVarint(u, 7))
				}
				msg := m.Interface()
				got, want := fingerprint(msg), fingerprintReference(msg)
				if !bytes.Equal(got, want) || len(got) != sha256.Size {
					b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
					t.Fatalf("case %d: fingerprint %x, reference %x; message %x", i, got, want, b)
				}
				key := m.Descriptor().Fields().ByName("idempotency_key")
				other := proto.Clone(msg)
				other.ProtoReflect().Set(key, protoreflect.ValueOfString(fmt.Sprintf("another-key-%d", i)))
				if g := fingerprint(other); !bytes.Equal(g, got) {
					t.Fatalf("case %d: changing only the key changed the fingerprint", i)
				}
			}
		})
	}
}

// TestFingerprintSeesEveryField: changing any field but the key changes
// the fingerprint (here: the first field of a Reserve's shape, and the id
// of a Commit).
func TestFingerprintSeesEveryField(t *testing.T) {
	a := &ledgerdv1.CommitRequest{Id: "r1", IdempotencyKey: "k"}
	b := &ledgerdv1.CommitRequest{Id: "r2", IdempotencyKey: "k"}
	c := &ledgerdv1.AbortRequest{Id: "r1", IdempotencyKey: "k"}
	if bytes.Equal(fingerprint(a), fingerprint(b)) {
		t.Error("commits of r1 and r2 share a fingerprint")
	}
	if bytes.Equal(fingerprint(a), fingerprint(c)) {
		t.Error("a commit and an abort of r1 share a fingerprint")
	}
}

// FuzzFingerprint decodes bytes as every keyed request type (unknown
// fields, repeated keys and keys of the wrong wire type included) and
// compares the fingerprint with the reference's.
func FuzzFingerprint(f *testing.F) {
	f.Add([]byte{0x0a, 0x02, 'r', '1', 0x12, 0x01, 'k'})
	f.Add([]byte{0x12, 0x01, 'k', 0x10, 0x05, 0x12, 0x01, 'j'})
	f.Add([]byte{0x10, 0x07, 0x0a, 0x00})
	types := keyedTypes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mt := range types {
			m := mt.New().Interface()
			if proto.Unmarshal(data, m) != nil {
				continue
			}
			if got, want := fingerprint(m), fingerprintReference(m); !bytes.Equal(got, want) {
				t.Fatalf("%s from %x: fingerprint %x, reference %x", mt.Descriptor().Name(), data, got, want)
			}
		}
	})
}

// BenchmarkFingerprint: the fingerprint of a typical Reserve request.
func BenchmarkFingerprint(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := (&ledgerdv1.ReserveRequest{}).ProtoReflect()
	fill(rng, m, 3)
	m.Set(m.Descriptor().Fields().ByName("idempotency_key"), protoreflect.ValueOfString("bench-key-0123456789"))
	msg := m.Interface()
	for _, c := range []struct {
		name string
		fn   func(proto.Message) []byte
	}{{"reference", fingerprintReference}, {"fingerprint", fingerprint}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.fn(msg)
			}
		})
	}
}
