package fsm

import (
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// A hand-written decoder of the commands a group carries (and most lone
// entries are): the envelope and the payloads of HOLD, RESERVE, COMMIT,
// ABORT, CANCEL and MODIFY, and the group envelope itself. Every replica decodes every admission of the
// log, and the generic decoder, which walks the message by reflection,
// was the largest cost of a group entry after the admissions themselves.
//
// decodeCommandFast reads exactly what proto.Unmarshal reads, into the
// same message (strings are copied out of the entry as the generic
// decoder copies them, so nothing keeps the log entry alive), and reports
// false for anything it does not read itself: another payload, an unknown
// field, a field that appears twice where the decoder would merge or
// replace, a wire type the schema does not give the field, invalid UTF-8,
// a malformed field. The caller then uses proto.Unmarshal, so what is
// accepted, refused and decoded is unchanged (TestCommandDecodeMatchesProto,
// FuzzCommandDecode; TestCommandCodecCoversSchema fails when one of these
// messages gains a field).

// Field numbers of Command, ReservationRequest and Modify.
const (
	cmdType        = 1
	cmdVersion     = 2
	cmdNow         = 3
	cmdKey         = 4
	cmdOwner       = 5
	cmdPrivileged  = 6
	cmdFingerprint = 7

	reqID        = 1
	reqParts     = 2
	reqDuration  = 3
	reqNotBefore = 4
	reqDeadline  = 5
	reqStart     = 6
	reqHoldTTL   = 7
	reqLabels    = 8

	modifyID        = 1
	modifyParts     = 2
	modifyStart     = 3
	modifyEnd       = 4
	modifyHoldTTL   = 5
	modifyWindow    = 6
	modifyNotBefore = 7
	modifyDeadline  = 8
)

// wireField is one field of an encoded message: its number and wire
// type, its varint value or its bytes (aliasing the input).
type wireField struct {
	num protowire.Number
	typ protowire.Type
	x   uint64
	b   []byte
}

// walkFields walks the varint and length-delimited fields of b, calling f for
// each; it stops and reports false on a malformed field, another wire
// type, or when f does.
func walkFields(b []byte, f func(wireField) bool) bool {
	var w wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		w = wireField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			w.x, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			w.b, n = protowire.ConsumeBytes(b)
		default:
			return false
		}
		if n < 0 {
			return false
		}
		b = b[n:]
		if !f(w) {
			return false
		}
	}
	return true
}

// str returns w's bytes as a string, copied, if w is a length-delimited
// field of valid UTF-8 (what the decoder requires of a proto3 string).
func (w wireField) str() (string, bool) {
	if w.typ != protowire.BytesType || !utf8.Valid(w.b) {
		return "", false
	}
	return string(w.b), true
}

// seen tracks which field numbers (below 64) a message has had, to leave
// repeated singular fields to the generic decoder.
type seen uint64

// first reports whether num is new, recording it; numbers of 64 and
// above are never new, so they leave a message to the generic decoder.
func (s *seen) first(num protowire.Number) bool {
	if num >= 64 || *s&(1<<num) != 0 {
		return false
	}
	*s |= 1 << num
	return true
}

// decodeCommandFast decodes b as proto.Unmarshal would into a fresh
// Command, or reports false (see above).
func decodeCommandFast(b []byte) (*fsmv1.Command, bool) {
	c := new(fsmv1.Command)
	var s seen
	ok := walkFields(b, func(w wireField) bool {
		if !s.first(w.num) {
			return false
		}
		var ok bool
		switch w.num {
		case cmdType, cmdVersion, cmdNow, cmdPrivileged:
			if w.typ != protowire.VarintType {
				return false
			}
			switch w.num {
			case cmdType:
				c.Type = fsmv1.Command_Type(int32(w.x))
			case cmdVersion:
				c.Version = uint32(w.x)
			case cmdNow:
				c.NowMillis = int64(w.x)
			default:
				c.Privileged = w.x != 0
			}
			return true
		case cmdKey:
			c.IdempotencyKey, ok = w.str()
			return ok
		case cmdOwner:
			c.Owner, ok = w.str()
			return ok
		case cmdFingerprint:
			if w.typ != protowire.BytesType {
				return false
			}
			c.Fingerprint = append([]byte{}, w.b...)
			return true
		case groupPayloadField:
			if w.typ != protowire.BytesType || c.Payload != nil {
				return false
			}
			var g *fsmv1.Group
			if g, ok = decodeGroupMembers(w.b); ok {
				c.Payload = &fsmv1.Command_Group{Group: g}
			}
			return ok
		case requestField, targetField, modifyField:
			if w.typ != protowire.BytesType || c.Payload != nil {
				// Two payloads: the decoder keeps the last, merging
				// equal ones.
				return false
			}
			switch w.num {
			case requestField:
				var r *fsmv1.ReservationRequest
				if r, ok = decodeRequest(w.b); ok {
					c.Payload = &fsmv1.Command_Request{Request: r}
				}
			case targetField:
				var t *fsmv1.Target
				if t, ok = decodeTarget(w.b); ok {
					c.Payload = &fsmv1.Command_Target{Target: t}
				}
			default:
				var m *fsmv1.Modify
				if m, ok = decodeModify(w.b); ok {
					c.Payload = &fsmv1.Command_Modify{Modify: m}
				}
			}
			return ok
		}
		return false
	})
	return c, ok
}

func decodeTarget(b []byte) (*fsmv1.Target, bool) {
	t := new(fsmv1.Target)
	var s seen
	ok := walkFields(b, func(w wireField) bool {
		if w.num != 1 || !s.first(w.num) {
			return false
		}
		var ok bool
		t.Id, ok = w.str()
		return ok
	})
	return t, ok
}

func decodeRequest(b []byte) (*fsmv1.ReservationRequest, bool) {
	r := new(fsmv1.ReservationRequest)
	var s seen
	ok := walkFields(b, func(w wireField) bool {
		var ok bool
		switch w.num {
		case reqParts:
			var p *fsmv1.Part
			if p, ok = decodePartBytes(w); ok {
				r.Parts = append(r.Parts, p)
			}
			return ok
		case reqLabels:
			var k, v string
			if k, v, ok = decodeLabelBytes(w); ok {
				if r.Labels == nil {
					r.Labels = make(map[string]string, 1)
				}
				r.Labels[k] = v
			}
			return ok
		}
		if !s.first(w.num) {
			return false
		}
		switch w.num {
		case reqID:
			r.Id, ok = w.str()
			return ok
		case reqDuration, reqNotBefore, reqDeadline, reqStart, reqHoldTTL:
			if w.typ != protowire.VarintType {
				return false
			}
			switch v := int64(w.x); w.num {
			case reqDuration:
				r.DurationMillis = v
			case reqNotBefore:
				r.NotBeforeMillis = v
			case reqDeadline:
				r.DeadlineMillis = v
			case reqStart:
				r.StartMillis = ptrTo(v)
			default:
				r.HoldTtlMillis = v
			}
			return true
		}
		return false
	})
	return r, ok
}

func decodeModify(b []byte) (*fsmv1.Modify, bool) {
	m := new(fsmv1.Modify)
	var s seen
	ok := walkFields(b, func(w wireField) bool {
		var ok bool
		if w.num == modifyParts {
			var p *fsmv1.Part
			if p, ok = decodePartBytes(w); ok {
				m.Parts = append(m.Parts, p)
			}
			return ok
		}
		if !s.first(w.num) {
			return false
		}
		switch w.num {
		case modifyID:
			m.Id, ok = w.str()
			return ok
		case modifyStart, modifyEnd, modifyHoldTTL, modifyWindow, modifyNotBefore, modifyDeadline:
			if w.typ != protowire.VarintType {
				return false
			}
			switch v := int64(w.x); w.num {
			case modifyStart:
				m.StartMillis = ptrTo(v)
			case modifyEnd:
				m.EndMillis = ptrTo(v)
			case modifyHoldTTL:
				m.HoldTtlMillis = v
			case modifyWindow:
				m.WindowDurationMillis = v
			case modifyNotBefore:
				m.NotBeforeMillis = v
			default:
				m.DeadlineMillis = v
			}
			return true
		}
		return false
	})
	return m, ok
}

// decodePartBytes decodes a Part field (resource 1, amount 2, units 40).
func decodePartBytes(w wireField) (*fsmv1.Part, bool) {
	if w.typ != protowire.BytesType {
		return nil, false
	}
	p := new(fsmv1.Part)
	var s seen
	ok := walkFields(w.b, func(w wireField) bool {
		var ok bool
		switch {
		case w.num == partUnits:
			var u string
			if u, ok = w.str(); ok {
				p.Units = append(p.Units, u)
			}
			return ok
		case !s.first(w.num):
			return false
		case w.num == 1:
			p.Resource, ok = w.str()
			return ok
		case w.num == 2 && w.typ == protowire.VarintType:
			p.Amount = int64(w.x)
			return true
		}
		return false
	})
	return p, ok
}

// decodeLabelBytes decodes one labels map entry: key 1 and value 2, each
// at most once, in either order (the decoder reads a missing one as
// empty).
func decodeLabelBytes(w wireField) (key, value string, ok bool) {
	if w.typ != protowire.BytesType {
		return "", "", false
	}
	var s seen
	ok = walkFields(w.b, func(w wireField) bool {
		if (w.num != 1 && w.num != 2) || !s.first(w.num) {
			return false
		}
		v, ok := w.str()
		if w.num == 1 {
			key = v
		} else {
			value = v
		}
		return ok
	})
	return key, value, ok
}

// decodeGroupMembers decodes a Group (members = 1, repeated bytes). The
// members are copied out of the entry, as the generic decoder copies
// them, but into one allocation; each is capped at its own length, so an
// append to one cannot overwrite the next.
func decodeGroupMembers(b []byte) (*fsmv1.Group, bool) {
	buf := append([]byte(nil), b...)
	n := 0
	ok := walkFields(buf, func(w wireField) bool {
		n++
		return w.num == groupMembersField && w.typ == protowire.BytesType
	})
	if !ok {
		return nil, false
	}
	g := &fsmv1.Group{Members: make([][]byte, 0, n)}
	walkFields(buf, func(w wireField) bool {
		g.Members = append(g.Members, w.b[:len(w.b):len(w.b)])
		return true
	})
	return g, true
}

// ptrTo returns a pointer to a new copy of v (an optional field's value).
func ptrTo(v int64) *int64 { return &v }
