package fsm

import (
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// resultDesc is the schema a stored idempotency result is checked
// against.
var resultDesc = (&fsmv1.Result{}).ProtoReflect().Descriptor()

// wellFormedDepth bounds the nesting wellFormed follows; deeper input is
// left to the generic decoder (whose own limit is far larger).
const wellFormedDepth = 64

// wellFormed reports whether b is an encoding of a message of type md
// that proto.Unmarshal accepts, without building the message: a restore
// checks every stored idempotency result (262,144 at the default key
// cap, a million in older snapshots), and decoding each into a Result
// allocated its sub-messages and strings only to throw them away. It
// walks the descriptor as the generic decoder does: a field it does not
// know, or of an unexpected wire type, is skipped as an unknown field; a
// string of a proto3 message must be valid UTF-8; a message field is
// checked in turn; a packed repeated scalar must hold whole elements.
//
// It may refuse what the generic decoder accepts (a group field, nesting
// past wellFormedDepth): callers then ask proto.Unmarshal, which also
// gives the error to report. It must never accept what the generic
// decoder refuses; FuzzWellFormed checks both directions.
func wellFormed(b []byte, md protoreflect.MessageDescriptor, depth int) bool {
	if depth > wellFormedDepth {
		return false
	}
	fields := md.Fields()
	proto3 := md.ParentFile().Syntax() == protoreflect.Proto3
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			// ConsumeTag takes numbers up to 2^31-1; the decoder refuses
			// those past the largest valid one.
			return false
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil || !wireMatches(fd, typ) {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			b = b[m:]
			switch fd.Kind() {
			case protoreflect.StringKind:
				if proto3 && !utf8.Valid(v) {
					return false
				}
			case protoreflect.BytesKind:
			case protoreflect.MessageKind:
				if !wellFormed(v, fd.Message(), depth+1) {
					return false
				}
			default:
				// A packed list of scalars.
				if !packedWellFormed(v, scalarWire(fd.Kind())) {
					return false
				}
			}
		case protowire.VarintType:
			_, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			b = b[m:]
		case protowire.Fixed32Type:
			_, m := protowire.ConsumeFixed32(b)
			if m < 0 {
				return false
			}
			b = b[m:]
		case protowire.Fixed64Type:
			_, m := protowire.ConsumeFixed64(b)
			if m < 0 {
				return false
			}
			b = b[m:]
		default:
			return false
		}
	}
	return true
}

// wireMatches reports whether the generic decoder reads a field fd
// arriving with wire type typ as that field (otherwise it keeps it as an
// unknown field). Groups are never matched here, so that wellFormed
// leaves them to the generic decoder.
func wireMatches(fd protoreflect.FieldDescriptor, typ protowire.Type) bool {
	switch k := fd.Kind(); k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return typ == protowire.BytesType
	case protoreflect.GroupKind:
		return false
	default:
		w := scalarWire(k)
		if typ == w {
			return true
		}
		// A repeated scalar is read packed or not, whatever it declares.
		return fd.IsList() && typ == protowire.BytesType
	}
}

// scalarWire is the wire type of one element of a scalar kind.
func scalarWire(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	default:
		return protowire.VarintType
	}
}

// packedWellFormed reports whether v is a whole number of elements of
// wire type w.
func packedWellFormed(v []byte, w protowire.Type) bool {
	switch w {
	case protowire.Fixed32Type:
		return len(v)%4 == 0
	case protowire.Fixed64Type:
		return len(v)%8 == 0
	}
	for len(v) > 0 {
		_, m := protowire.ConsumeVarint(v)
		if m < 0 {
			return false
		}
		v = v[m:]
	}
	return true
}
