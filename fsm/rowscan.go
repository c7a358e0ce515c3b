package fsm

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// rowScan is what scanRow reads from an encoded Reservation: the
// bookkeeping fields, the owner and the parts (their strings alias the
// row).
type rowScan struct {
	rowMeta
	owner            string
	parts, pendParts []scanPart
	// hasRecord: the row carries a materialization record (field 50).
	hasRecord bool
}

// books reports whether the row or its pending modification has a part
// on resource.
func (sc *rowScan) books(resource string) bool {
	for _, ps := range [2][]scanPart{sc.parts, sc.pendParts} {
		for _, p := range ps {
			if p.resource == resource {
				return true
			}
		}
	}
	return false
}

// scanPart is one Part read by scanRow.
type scanPart struct {
	resource string
	amount   int64
	// units are the part's unit names on a resource with units (Part.units,
	// field 40), aliasing the row; nil otherwise.
	units []string
}

// Field numbers of Reservation, Part and Modification that scanRow reads.
const (
	resvID          = 1
	resvOwner       = 2
	resvLabels      = 3
	resvParts       = 4
	resvStart       = 5
	resvEnd         = 6
	resvState       = 7
	resvHoldExp     = 8
	resvUpdated     = 12
	resvPending     = 13
	resvKind        = 16
	resvProbability = 17
	resvRelaxed     = 18
	resvPushes      = 19
	// resvMaterialization is Reservation.materialization.
	resvMaterialization = 50
	resvLast            = 61
)

// value kinds of the Reservation fields, indexed by field number.
type valueKind uint8

const (
	vkNone valueKind = iota
	vkString
	vkInt64
	vkUint64
	vkEnum
	vkUint32
	vkBool
	vkMessage
)

var resvKinds = [resvLast + 1]valueKind{
	resvID: vkString, resvOwner: vkString, resvLabels: vkMessage, resvParts: vkMessage,
	resvStart: vkInt64, resvEnd: vkInt64, resvState: vkEnum, resvHoldExp: vkInt64,
	9: vkUint64, 10: vkUint64, 11: vkInt64, resvUpdated: vkInt64, resvPending: vkMessage,
	14: vkInt64, 15: vkInt64, resvKind: vkEnum, resvProbability: vkUint32, resvRelaxed: vkBool,
	resvPushes: vkUint32, 20: vkInt64, 21: vkInt64, resvMaterialization: vkMessage,
	60: vkString, 61: vkString, // approval_reason, decision_reason (limits.go)
}

// fieldName names Reservation field num in errors.
func fieldName(num protowire.Number) string {
	return string((&fsmv1.Reservation{}).ProtoReflect().Descriptor().Fields().ByNumber(num).Name())
}

// errNotCanonical marks bytes that decode but are not what the
// deterministic encoder writes for the message they decode to.
var errNotCanonical = errors.New("not the deterministic encoding")

// scanRow reads an encoded Reservation without decoding it into a
// message, as restore does for every row of a snapshot. It accepts only
// the deterministic encoding of a message with an ID and no unknown
// fields (what Persist writes): fields in number order, no zero scalars,
// minimal varints, valid UTF-8, map entries sorted. Anything else is
// refused with an error naming the field, so a stored row always decodes,
// and re-encodes to the same bytes.
func scanRow(row string, sc *rowScan) error {
	*sc = rowScan{parts: sc.parts[:0], pendParts: sc.pendParts[:0]}
	var last protowire.Number
	lastKey, haveKey := "", false
	for b := row; len(b) > 0; {
		f, err := nextField(b)
		if err != nil {
			return err
		}
		b = b[f.size:]
		if f.num > resvLast || resvKinds[f.num] == vkNone {
			return fmt.Errorf("field %d: unknown", f.num)
		}
		if f.num < last || f.num == last && f.num != resvLabels && f.num != resvParts {
			return fmt.Errorf("%s: %w: fields out of order or repeated", fieldName(f.num), errNotCanonical)
		}
		last = f.num
		if err := f.check(resvKinds[f.num]); err != nil {
			return fmt.Errorf("%s: %w", fieldName(f.num), err)
		}
		if sc.rowMeta.take(f) {
			continue
		}
		switch f.num {
		case resvOwner:
			sc.owner = f.str
		case resvLabels:
			k, err := scanLabel(f.str)
			if err == nil && haveKey && k <= lastKey {
				err = fmt.Errorf("%w: keys not sorted", errNotCanonical)
			}
			if err != nil {
				return fmt.Errorf("labels: %w", err)
			}
			lastKey, haveKey = k, true
		case resvParts:
			if sc.parts, err = scanPartMsg(f.str, sc.parts); err != nil {
				return fmt.Errorf("parts[%d]: %w", len(sc.parts), err)
			}
		case resvPending:
			sc.hasPending = true
			if err := scanModification(f.str, sc); err != nil {
				return fmt.Errorf("pending.%w", err)
			}
		case resvMaterialization:
			if err := checkRecord(f.str); err != nil {
				return fmt.Errorf("materialization: %w", err)
			}
			sc.hasRecord = true
		}
	}
	if sc.id == "" {
		return errors.New("id: missing")
	}
	return nil
}

// field is one field read by nextField: its number, its varint value or
// its length-delimited bytes, and its size with the tag.
type field struct {
	num  protowire.Number
	typ  protowire.Type
	x    uint64
	str  string
	size int
}

// nextField reads the field at the start of b: a varint or
// length-delimited field with minimal varints (the only wire types of
// these messages).
func nextField(b string) (field, error) {
	var f field
	tag, n := varintS(b)
	if n < 0 || tag>>3 == 0 || tag>>3 > uint64(protowire.MaxValidNumber) {
		return f, errors.New("malformed tag")
	}
	f.num, f.typ = protowire.Number(tag>>3), protowire.Type(tag&7)
	switch f.typ {
	case protowire.VarintType:
		x, m := varintS(b[n:])
		if m < 0 {
			return f, fmt.Errorf("field %d: malformed varint", f.num)
		}
		f.x, f.size = x, n+m
	case protowire.BytesType:
		l, m := varintS(b[n:])
		if m < 0 || l > uint64(len(b)-n-m) {
			return f, fmt.Errorf("field %d: malformed or truncated length", f.num)
		}
		f.str, f.size = b[n+m:n+m+int(l)], n+m+int(l)
	default:
		return f, fmt.Errorf("field %d: wire type %d not used here", f.num, f.typ)
	}
	return f, nil
}

// check verifies f against the kind of its field: the wire type, and the
// value the deterministic encoder would write (it omits zero scalars and
// empty strings, writes a bool as 1, and an enum as its sign-extended
// int32).
func (f *field) check(k valueKind) error {
	wantBytes := k == vkString || k == vkMessage
	if (f.typ == protowire.BytesType) != wantBytes {
		return fmt.Errorf("wire type %d", f.typ)
	}
	switch k {
	case vkString:
		if f.str == "" {
			return fmt.Errorf("%w: empty string", errNotCanonical)
		}
		if !utf8.ValidString(f.str) {
			return errors.New("invalid UTF-8")
		}
	case vkInt64, vkUint64:
		if f.x == 0 {
			return fmt.Errorf("%w: zero", errNotCanonical)
		}
	case vkEnum:
		if f.x == 0 || uint64(int64(int32(f.x))) != f.x {
			return fmt.Errorf("%w: enum value %d", errNotCanonical, f.x)
		}
	case vkUint32:
		if f.x == 0 || f.x > math.MaxUint32 {
			return fmt.Errorf("%w: value %d", errNotCanonical, f.x)
		}
	case vkBool:
		if f.x != 1 {
			return fmt.Errorf("%w: bool %d", errNotCanonical, f.x)
		}
	}
	return nil
}

// partUnits is the field number of Part.units.
const partUnits protowire.Number = 40

// scanPartMsg reads a Part (resource = 1, amount = 2) and appends it.
func scanPartMsg(b string, parts []scanPart) ([]scanPart, error) {
	var p scanPart
	var last protowire.Number
	for len(b) > 0 {
		f, err := nextField(b)
		if err != nil {
			return parts, err
		}
		b = b[f.size:]
		switch {
		case f.num == partUnits && last == partUnits:
			// Repeated: one field per unit.
			err = f.check(vkString)
			p.units = append(p.units, f.str)
		case f.num <= last:
			return parts, fmt.Errorf("field %d: %w: out of order or repeated", f.num, errNotCanonical)
		case f.num == partUnits:
			err = f.check(vkString)
			p.units = append(p.units, f.str)
		case f.num == 1:
			err = f.check(vkString)
			p.resource = f.str
		case f.num == 2:
			err = f.check(vkInt64)
			p.amount = int64(f.x)
		default:
			return parts, fmt.Errorf("field %d: unknown", f.num)
		}
		if err != nil && f.num == partUnits {
			return parts, fmt.Errorf("units[%d]: %w", len(p.units)-1, err)
		}
		if err != nil {
			return parts, fmt.Errorf("%s: %w", []string{"", "resource", "amount"}[f.num], err)
		}
		last = f.num
	}
	return append(parts, p), nil
}

// scanModification reads a Modification (parts = 1, start = 2, end = 3,
// hold expiry = 4, version = 5) into sc.
func scanModification(b string, sc *rowScan) error {
	names := []string{"", "parts", "start_millis", "end_millis", "hold_expires_millis", "version"}
	var last protowire.Number
	for len(b) > 0 {
		f, err := nextField(b)
		if err != nil {
			return err
		}
		b = b[f.size:]
		if f.num > 5 {
			return fmt.Errorf("field %d: unknown", f.num)
		}
		if f.num < last || f.num == last && f.num != 1 {
			return fmt.Errorf("%s: %w: out of order or repeated", names[f.num], errNotCanonical)
		}
		last = f.num
		if f.num == 1 {
			if err := f.check(vkMessage); err != nil {
				return fmt.Errorf("parts: %w", err)
			}
			if sc.pendParts, err = scanPartMsg(f.str, sc.pendParts); err != nil {
				return fmt.Errorf("parts[%d]: %w", len(sc.pendParts), err)
			}
			continue
		}
		k := vkInt64
		if f.num == 5 {
			k = vkUint64
		}
		if err := f.check(k); err != nil {
			return fmt.Errorf("%s: %w", names[f.num], err)
		}
		sc.rowMeta.takePending(f)
	}
	return nil
}

// take stores f in m when it is one of the row's scalar bookkeeping
// fields (everything of rowMeta but the pending modification) and
// reports whether it was. scanRow and scanMeta both read them through it.
func (m *rowMeta) take(f field) bool {
	switch f.num {
	case resvID:
		m.id = f.str
	case resvStart:
		m.start = int64(f.x)
	case resvEnd:
		m.end = int64(f.x)
	case resvState:
		m.state = fsmv1.Reservation_State(int32(f.x))
	case resvHoldExp:
		m.holdExp = int64(f.x)
	case resvUpdated:
		m.update = int64(f.x)
	case resvKind:
		m.kind = fsmv1.Reservation_Kind(int32(f.x))
	case resvProbability:
		m.probability = uint32(f.x)
	default:
		return false
	}
	return true
}

// takePending stores f, a field of the pending Modification, in m when
// it is one of its times.
func (m *rowMeta) takePending(f field) {
	switch f.num {
	case modStart:
		m.pendStart = int64(f.x)
	case modEnd:
		m.pendEnd = int64(f.x)
	case modHoldExp:
		m.pendExp = int64(f.x)
	}
}

// scanLabel reads one labels map entry and returns its key. The
// deterministic encoder writes both key (1) and value (2), even empty.
func scanLabel(b string) (string, error) {
	var kv [2]string
	for i := range kv {
		f, err := nextField(b)
		if err != nil {
			return "", err
		}
		if f.num != protowire.Number(i+1) || f.typ != protowire.BytesType {
			return "", fmt.Errorf("%w: entry field %d", errNotCanonical, f.num)
		}
		if !utf8.ValidString(f.str) {
			return "", errors.New("invalid UTF-8")
		}
		kv[i], b = f.str, b[f.size:]
	}
	if len(b) > 0 {
		return "", fmt.Errorf("%w: entry has more fields", errNotCanonical)
	}
	return kv[0], nil
}
