package fsm

import (
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// resultDesc is the schema a stored idempotency result is checked
// against, and resultShape its fields as wellFormed reads them.
var (
	resultDesc  = (&fsmv1.Result{}).ProtoReflect().Descriptor()
	resultShape = newMsgShape(resultDesc, map[protoreflect.FullName]*msgShape{})
)

// wellFormedDepth bounds the nesting wellFormed follows; deeper input is
// left to the generic decoder (whose own limit is far larger).
const wellFormedDepth = 64

// msgShape is what wellFormed needs of a message descriptor, looked up
// by field number in a slice: the descriptor's own lookup (a map for
// sparse numbers) was half of the walk's time.
type msgShape struct {
	proto3 bool
	// fields[num] is field num (kind 0: no such field); numbers past
	// the slice are in far.
	fields []fieldShape
	far    map[protowire.Number]fieldShape
}

// fieldShape is one field of a msgShape.
type fieldShape struct {
	kind protoreflect.Kind
	list bool
	msg  *msgShape
}

// maxDenseField bounds msgShape.fields.
const maxDenseField = 128

// newMsgShape builds the shape of md and of the messages it contains;
// seen holds the shapes under construction, for recursive types.
func newMsgShape(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*msgShape) *msgShape {
	if sh, ok := seen[md.FullName()]; ok {
		return sh
	}
	sh := &msgShape{proto3: md.ParentFile().Syntax() == protoreflect.Proto3}
	seen[md.FullName()] = sh
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		f := fieldShape{kind: fd.Kind(), list: fd.IsList()}
		if f.kind == protoreflect.MessageKind {
			f.msg = newMsgShape(fd.Message(), seen)
		}
		if num := fd.Number(); num < maxDenseField {
			if int(num) >= len(sh.fields) {
				sh.fields = append(sh.fields, make([]fieldShape, int(num)+1-len(sh.fields))...)
			}
			sh.fields[num] = f
		} else {
			if sh.far == nil {
				sh.far = make(map[protowire.Number]fieldShape)
			}
			sh.far[num] = f
		}
	}
	return sh
}

// field returns field num of the message (kind 0: none).
func (sh *msgShape) field(num protowire.Number) fieldShape {
	if int(num) < len(sh.fields) {
		return sh.fields[num]
	}
	return sh.far[num]
}

// wellFormed reports whether b is an encoding of a message of shape sh
// that proto.Unmarshal accepts, without building the message: a restore
// checks every stored idempotency result (262,144 at the default key
// cap, a million in older snapshots), and decoding each into a Result
// allocated its sub-messages and strings only to throw them away. It
// walks the schema as the generic decoder does: a field it does not
// know, or of an unexpected wire type, is skipped as an unknown field; a
// string of a proto3 message must be valid UTF-8; a message field is
// checked in turn; a packed repeated scalar must hold whole elements.
//
// It may refuse what the generic decoder accepts (a group field, nesting
// past wellFormedDepth): callers then ask proto.Unmarshal, which also
// gives the error to report. It must never accept what the generic
// decoder refuses; FuzzWellFormed checks both directions.
func wellFormed(b []byte, sh *msgShape, depth int) bool {
	if depth > wellFormedDepth {
		return false
	}
	for len(b) > 0 {
		var (
			num protowire.Number
			typ protowire.Type
		)
		if b[0] < 0x80 {
			// A one-byte tag (fields 1 to 15), as most are: read here
			// rather than by ConsumeTag, a call per field.
			num, typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
			b = b[1:]
			if num == 0 {
				return false
			}
		} else {
			var n int
			num, typ, n = protowire.ConsumeTag(b)
			if n < 0 || num > protowire.MaxValidNumber {
				// ConsumeTag takes numbers up to 2^31-1; the decoder
				// refuses those past the largest valid one.
				return false
			}
			b = b[n:]
		}
		fd := sh.field(num)
		if fd.kind == 0 || !wireMatches(fd, typ) || typ != protowire.BytesType {
			// An unknown field, or a known one the decoder keeps as
			// unknown, or a scalar in its own wire type (wireMatches never
			// matches a group): only its encoding can be wrong.
			if typ == protowire.VarintType && len(b) > 0 && b[0] < 0x80 {
				// A one-byte varint.
				b = b[1:]
				continue
			}
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return false
		}
		b = b[m:]
		switch fd.kind {
		case protoreflect.StringKind:
			if sh.proto3 && !utf8.Valid(v) {
				return false
			}
		case protoreflect.BytesKind:
		case protoreflect.MessageKind:
			if !wellFormed(v, fd.msg, depth+1) {
				return false
			}
		default:
			// A packed list of scalars.
			if !packedWellFormed(v, scalarWire(fd.kind)) {
				return false
			}
		}
	}
	return true
}

// wireMatches reports whether the generic decoder reads a field fd
// arriving with wire type typ as that field (otherwise it keeps it as an
// unknown field). Groups are never matched here, so that wellFormed
// leaves them to the generic decoder.
func wireMatches(fd fieldShape, typ protowire.Type) bool {
	switch fd.kind {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return typ == protowire.BytesType
	case protoreflect.GroupKind:
		return false
	default:
		if typ == scalarWire(fd.kind) {
			return true
		}
		// A repeated scalar is read packed or not, whatever it declares.
		return fd.list && typ == protowire.BytesType
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
