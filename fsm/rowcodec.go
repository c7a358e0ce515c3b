package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The row codec: a hand-written encoder and decoder of Reservation, the
// message every admission stores (rowStore.set) and every later change
// reads back (rowStore.get), several times per entry (the command, then
// the activation or completion its log time makes due). The generic
// protobuf codec walks the message by reflection and copies every string
// out of the row; these walk the fixed schema and, when decoding, let the
// message's strings share the row, which is immutable.
//
// Both are exact, not approximations:
//
//   - appendRow writes byte for byte what marshalOpts (deterministic)
//     writes: fields in number order, zero scalars and empty strings
//     omitted, map entries sorted by key with both key and value, enums
//     sign-extended. Anything it does not write itself (unknown fields,
//     invalid UTF-8, which the generic encoder refuses) it leaves to the
//     generic encoder, so the outcome is the same as before in every case.
//   - decodeRowFast accepts only what it reads exactly as proto.Unmarshal
//     would (every stored row: each was written by appendRow or checked
//     by scanRow), and reports false on anything else, for which the
//     caller falls back to proto.Unmarshal.
//
// TestRowCodecMatchesProto and FuzzRowCodec hold them to the generic
// codec on random rows; TestRowCodecCoversSchema fails when Reservation,
// Part or Modification gains a field this file does not know, so a
// schema change cannot silently drop a field.

// Field numbers of Reservation that appendRow writes beyond those
// scanRow names.
const (
	resvCreatedVersion    = 9
	resvUpdatedVersion    = 10
	resvCreatedMillis     = 11
	resvRequestedDuration = 14
	resvActualEnd         = 15
	resvShortUnits        = 20
	resvNotBefore         = 21
	resvApprovalReason    = 60
	resvDecisionReason    = 61
)

// Field numbers of Modification.
const (
	modParts   = 1
	modStart   = 2
	modEnd     = 3
	modHoldExp = 4
	modVersion = 5
)

// appendRow appends the deterministic encoding of r to b.
func appendRow(b []byte, r *fsmv1.Reservation) ([]byte, error) {
	if !rowEncodable(r) {
		return marshalOpts.MarshalAppend(b, r)
	}
	b = appendString(b, resvID, r.Id)
	b = appendString(b, resvOwner, r.Owner)
	if len(r.Labels) > 0 {
		b = appendLabels(b, r.Labels)
	}
	for _, p := range r.Parts {
		b = protowire.AppendTag(b, resvParts, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(partSize(p)))
		b = appendPart(b, p)
	}
	b = appendVarint(b, resvStart, uint64(r.StartMillis))
	b = appendVarint(b, resvEnd, uint64(r.EndMillis))
	b = appendVarint(b, resvState, uint64(int64(r.State)))
	b = appendVarint(b, resvHoldExp, uint64(r.HoldExpiresMillis))
	b = appendVarint(b, resvCreatedVersion, r.CreatedVersion)
	b = appendVarint(b, resvUpdatedVersion, r.UpdatedVersion)
	b = appendVarint(b, resvCreatedMillis, uint64(r.CreatedMillis))
	b = appendVarint(b, resvUpdated, uint64(r.UpdatedMillis))
	if m := r.Pending; m != nil {
		b = protowire.AppendTag(b, resvPending, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(modificationSize(m)))
		for _, p := range m.Parts {
			b = protowire.AppendTag(b, modParts, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(partSize(p)))
			b = appendPart(b, p)
		}
		b = appendVarint(b, modStart, uint64(m.StartMillis))
		b = appendVarint(b, modEnd, uint64(m.EndMillis))
		b = appendVarint(b, modHoldExp, uint64(m.HoldExpiresMillis))
		b = appendVarint(b, modVersion, m.Version)
	}
	b = appendVarint(b, resvRequestedDuration, uint64(r.RequestedDurationMillis))
	b = appendVarint(b, resvActualEnd, uint64(r.ActualEndMillis))
	b = appendVarint(b, resvKind, uint64(int64(r.Kind)))
	b = appendVarint(b, resvProbability, uint64(r.ProbabilityPermille))
	if r.Relaxed {
		b = appendVarint(b, resvRelaxed, 1)
	}
	b = appendVarint(b, resvPushes, uint64(r.Pushes))
	b = appendVarint(b, resvShortUnits, uint64(r.ShortUnits))
	b = appendVarint(b, resvNotBefore, uint64(r.NotBeforeMillis))
	if m := r.Materialization; m != nil {
		// Rare (bridged rows only), and without maps: the generic
		// encoder writes it as it would inside the row.
		b = protowire.AppendTag(b, resvMaterialization, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(marshalOpts.Size(m)))
		var err error
		if b, err = marshalOpts.MarshalAppend(b, m); err != nil {
			return nil, err
		}
	}
	b = appendString(b, resvApprovalReason, r.ApprovalReason)
	b = appendString(b, resvDecisionReason, r.DecisionReason)
	return b, nil
}

// rowSize is the length of appendRow's encoding of r, for a row
// rowEncodable accepts.
func rowSize(r *fsmv1.Reservation) int {
	n := stringSize(resvID, r.Id) + stringSize(resvOwner, r.Owner)
	for k, v := range r.Labels {
		n += protowire.SizeTag(resvLabels) + protowire.SizeBytes(protowire.SizeTag(1)+protowire.SizeBytes(len(k))+protowire.SizeTag(2)+protowire.SizeBytes(len(v)))
	}
	for _, p := range r.Parts {
		n += protowire.SizeTag(resvParts) + protowire.SizeBytes(partSize(p))
	}
	n += varintSize(resvStart, uint64(r.StartMillis)) + varintSize(resvEnd, uint64(r.EndMillis)) +
		varintSize(resvState, uint64(int64(r.State))) + varintSize(resvHoldExp, uint64(r.HoldExpiresMillis)) +
		varintSize(resvCreatedVersion, r.CreatedVersion) + varintSize(resvUpdatedVersion, r.UpdatedVersion) +
		varintSize(resvCreatedMillis, uint64(r.CreatedMillis)) + varintSize(resvUpdated, uint64(r.UpdatedMillis))
	if m := r.Pending; m != nil {
		n += protowire.SizeTag(resvPending) + protowire.SizeBytes(modificationSize(m))
	}
	n += varintSize(resvRequestedDuration, uint64(r.RequestedDurationMillis)) + varintSize(resvActualEnd, uint64(r.ActualEndMillis)) +
		varintSize(resvKind, uint64(int64(r.Kind))) + varintSize(resvProbability, uint64(r.ProbabilityPermille))
	if r.Relaxed {
		n += varintSize(resvRelaxed, 1)
	}
	n += varintSize(resvPushes, uint64(r.Pushes)) + varintSize(resvShortUnits, uint64(r.ShortUnits)) +
		varintSize(resvNotBefore, uint64(r.NotBeforeMillis))
	if m := r.Materialization; m != nil {
		n += protowire.SizeTag(resvMaterialization) + protowire.SizeBytes(marshalOpts.Size(m))
	}
	return n + stringSize(resvApprovalReason, r.ApprovalReason) + stringSize(resvDecisionReason, r.DecisionReason)
}

// rowEncodable reports whether appendRow writes r itself: no unknown
// fields in it or its parts and modification, and valid UTF-8 in every
// string (the generic encoder refuses invalid UTF-8; Decode does too, so
// no command can bring any in).
func rowEncodable(r *fsmv1.Reservation) bool {
	if len(r.ProtoReflect().GetUnknown()) > 0 ||
		!utf8.ValidString(r.Id) || !utf8.ValidString(r.Owner) ||
		!utf8.ValidString(r.ApprovalReason) || !utf8.ValidString(r.DecisionReason) {
		return false
	}
	for k, v := range r.Labels {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	if !partsEncodable(r.Parts) {
		return false
	}
	if m := r.Pending; m != nil && (len(m.ProtoReflect().GetUnknown()) > 0 || !partsEncodable(m.Parts)) {
		return false
	}
	return true
}

func partsEncodable(ps []*fsmv1.Part) bool {
	for _, p := range ps {
		if p == nil {
			// The generic encoder writes a nil element as an empty
			// message; leave that oddity to it.
			return false
		}
		if len(p.ProtoReflect().GetUnknown()) > 0 || !utf8.ValidString(p.Resource) {
			return false
		}
		for _, u := range p.Units {
			if !utf8.ValidString(u) {
				return false
			}
		}
	}
	return true
}

// appendVarint appends a varint field unless v is zero (proto3 omits
// zero scalars).
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendString appends a string field unless s is empty.
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(s)))
	return append(b, s...)
}

// varintSize is the size of a varint field as appendVarint writes it.
func varintSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// stringSize is the size of a string field as appendString writes it.
func stringSize(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

// partSize is the encoded size of p without its tag and length.
func partSize(p *fsmv1.Part) int {
	n := stringSize(1, p.Resource) + varintSize(2, uint64(p.Amount))
	for _, u := range p.Units {
		// Repeated elements are written even when empty.
		n += protowire.SizeTag(partUnits) + protowire.SizeBytes(len(u))
	}
	return n
}

func appendPart(b []byte, p *fsmv1.Part) []byte {
	b = appendString(b, 1, p.Resource)
	b = appendVarint(b, 2, uint64(p.Amount))
	for _, u := range p.Units {
		b = protowire.AppendTag(b, partUnits, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(u)))
		b = append(b, u...)
	}
	return b
}

// modificationSize is the encoded size of m without its tag and length.
func modificationSize(m *fsmv1.Modification) int {
	n := 0
	for _, p := range m.Parts {
		n += protowire.SizeTag(modParts) + protowire.SizeBytes(partSize(p))
	}
	return n + varintSize(modStart, uint64(m.StartMillis)) + varintSize(modEnd, uint64(m.EndMillis)) +
		varintSize(modHoldExp, uint64(m.HoldExpiresMillis)) + varintSize(modVersion, m.Version)
}

// appendLabels appends the labels map as the deterministic encoder does:
// one entry per key in key order, each with its key (1) and value (2)
// even when empty.
func appendLabels(b []byte, labels map[string]string) []byte {
	var small [8]string
	keys := small[:0]
	for k := range labels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare[string])
	for _, k := range keys {
		v := labels[k]
		b = protowire.AppendTag(b, resvLabels, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(k))+protowire.SizeTag(2)+protowire.SizeBytes(len(v))))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(k)))
		b = append(b, k...)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// decodeRowFast decodes row as proto.Unmarshal would, except that the
// message's strings share row. It reports false, having decoded
// nothing useful, for anything it does not read exactly as
// proto.Unmarshal does: an unknown field, a wire type the schema does
// not give the field, a repeated scalar or message field (the decoder
// would merge them), invalid UTF-8 or a malformed field.
func decodeRowFast(row string) (*fsmv1.Reservation, bool) {
	r := new(fsmv1.Reservation)
	var last protowire.Number
	for b := row; len(b) > 0; {
		f, err := nextField(b)
		if err != nil {
			return nil, false
		}
		b = b[f.size:]
		if f.num < last || f.num == last && f.num != resvLabels && f.num != resvParts {
			return nil, false
		}
		last = f.num
		if f.num > resvLast || resvKinds[f.num] == vkNone {
			return nil, false
		}
		k := resvKinds[f.num]
		if (f.typ == protowire.BytesType) != (k == vkString || k == vkMessage) {
			return nil, false
		}
		if k == vkString && !utf8.ValidString(f.str) {
			return nil, false
		}
		switch f.num {
		case resvID:
			r.Id = f.str
		case resvOwner:
			r.Owner = f.str
		case resvLabels:
			k, v, ok := decodeLabel(f.str)
			if !ok {
				return nil, false
			}
			if r.Labels == nil {
				r.Labels = make(map[string]string, 1)
			}
			r.Labels[k] = v
		case resvParts:
			p, ok := decodePart(f.str)
			if !ok {
				return nil, false
			}
			r.Parts = append(r.Parts, p)
		case resvStart:
			r.StartMillis = int64(f.x)
		case resvEnd:
			r.EndMillis = int64(f.x)
		case resvState:
			r.State = fsmv1.Reservation_State(int32(f.x))
		case resvHoldExp:
			r.HoldExpiresMillis = int64(f.x)
		case resvCreatedVersion:
			r.CreatedVersion = f.x
		case resvUpdatedVersion:
			r.UpdatedVersion = f.x
		case resvCreatedMillis:
			r.CreatedMillis = int64(f.x)
		case resvUpdated:
			r.UpdatedMillis = int64(f.x)
		case resvPending:
			m, ok := decodeModification(f.str)
			if !ok {
				return nil, false
			}
			r.Pending = m
		case resvRequestedDuration:
			r.RequestedDurationMillis = int64(f.x)
		case resvActualEnd:
			r.ActualEndMillis = int64(f.x)
		case resvKind:
			r.Kind = fsmv1.Reservation_Kind(int32(f.x))
		case resvProbability:
			r.ProbabilityPermille = uint32(f.x)
		case resvRelaxed:
			r.Relaxed = f.x != 0
		case resvPushes:
			r.Pushes = uint32(f.x)
		case resvShortUnits:
			r.ShortUnits = int64(f.x)
		case resvNotBefore:
			r.NotBeforeMillis = int64(f.x)
		case resvMaterialization:
			m := new(fsmv1.Materialization)
			if err := proto.Unmarshal([]byte(f.str), m); err != nil {
				return nil, false
			}
			r.Materialization = m
		case resvApprovalReason:
			r.ApprovalReason = f.str
		case resvDecisionReason:
			r.DecisionReason = f.str
		default:
			// resvKinds names a field this switch does not decode.
			return nil, false
		}
	}
	return r, true
}

// decodePart decodes a Part (resource 1, amount 2, units 40) in field
// order.
func decodePart(b string) (*fsmv1.Part, bool) {
	p := new(fsmv1.Part)
	var last protowire.Number
	for len(b) > 0 {
		f, err := nextField(b)
		if err != nil || f.num < last || f.num == last && f.num != partUnits {
			return nil, false
		}
		b, last = b[f.size:], f.num
		switch {
		case f.num == 1 && f.typ == protowire.BytesType && utf8.ValidString(f.str):
			p.Resource = f.str
		case f.num == 2 && f.typ == protowire.VarintType:
			p.Amount = int64(f.x)
		case f.num == partUnits && f.typ == protowire.BytesType && utf8.ValidString(f.str):
			p.Units = append(p.Units, f.str)
		default:
			return nil, false
		}
	}
	return p, true
}

// decodeModification decodes a Modification in field order.
func decodeModification(b string) (*fsmv1.Modification, bool) {
	m := new(fsmv1.Modification)
	var last protowire.Number
	for len(b) > 0 {
		f, err := nextField(b)
		if err != nil || f.num < last || f.num == last && f.num != modParts {
			return nil, false
		}
		b, last = b[f.size:], f.num
		if f.num == modParts {
			if f.typ != protowire.BytesType {
				return nil, false
			}
			p, ok := decodePart(f.str)
			if !ok {
				return nil, false
			}
			m.Parts = append(m.Parts, p)
			continue
		}
		if f.typ != protowire.VarintType {
			return nil, false
		}
		switch f.num {
		case modStart:
			m.StartMillis = int64(f.x)
		case modEnd:
			m.EndMillis = int64(f.x)
		case modHoldExp:
			m.HoldExpiresMillis = int64(f.x)
		case modVersion:
			m.Version = f.x
		default:
			return nil, false
		}
	}
	return m, true
}

// decodeLabel decodes one labels map entry. The decoder reads a missing
// key or value as empty and lets a repeated one win, so only the
// canonical entry (key 1, then value 2, each once) is accepted here.
func decodeLabel(b string) (key, value string, ok bool) {
	var kv [2]string
	var last protowire.Number
	for len(b) > 0 {
		f, err := nextField(b)
		if err != nil || f.typ != protowire.BytesType || f.num <= last || f.num > 2 || !utf8.ValidString(f.str) {
			return "", "", false
		}
		kv[f.num-1], last, b = f.str, f.num, b[f.size:]
	}
	return kv[0], kv[1], true
}

// mustAppendRow is appendRow for rows the state machine built: failing
// to encode one is a bug.
func mustAppendRow(b []byte, r *fsmv1.Reservation) []byte {
	out, err := appendRow(b, r)
	if err != nil {
		panic(fmt.Sprintf("fsm: encode reservation %q: %v", r.GetId(), err))
	}
	return out
}

// cloneRow returns a new message with r's fields, sharing its labels,
// parts, modification and materialization record, which a stored row
// never changes in place. It stands in for decoding a row that put has
// just stored (s.lastPut) when a timer of the same entry changes it at
// once; the caller may only assign r's top-level fields.
func cloneRow(r *fsmv1.Reservation) *fsmv1.Reservation {
	return &fsmv1.Reservation{
		Id: r.Id, Owner: r.Owner, Labels: r.Labels, Parts: r.Parts,
		StartMillis: r.StartMillis, EndMillis: r.EndMillis, State: r.State, HoldExpiresMillis: r.HoldExpiresMillis,
		CreatedVersion: r.CreatedVersion, UpdatedVersion: r.UpdatedVersion,
		CreatedMillis: r.CreatedMillis, UpdatedMillis: r.UpdatedMillis, Pending: r.Pending,
		RequestedDurationMillis: r.RequestedDurationMillis, ActualEndMillis: r.ActualEndMillis,
		Kind: r.Kind, ProbabilityPermille: r.ProbabilityPermille, Relaxed: r.Relaxed, Pushes: r.Pushes,
		ShortUnits: r.ShortUnits, NotBeforeMillis: r.NotBeforeMillis,
		ApprovalReason: r.ApprovalReason, DecisionReason: r.DecisionReason, Materialization: r.Materialization,
	}
}

// scanMeta reads what the table's bookkeeping needs of a stored row
// (rowMeta) as scanRow does, without the rest: labels and parts are
// skipped by their length and nothing is checked beyond the fields it
// reads. put uses it on the row it replaces when no tenant limit needs
// the owner and parts; a stored row was written by appendRow or checked
// by scanRow, so its form is known. With verifyCodec, put compares the
// two.
func scanMeta(row string, m *rowMeta) error {
	*m = rowMeta{}
	for b := row; len(b) > 0; {
		f, err := nextField(b)
		if err != nil {
			return err
		}
		b = b[f.size:]
		if m.take(f) || f.num != resvPending {
			continue
		}
		m.hasPending = true
		for p := f.str; len(p) > 0; {
			g, err := nextField(p)
			if err != nil {
				return fmt.Errorf("pending: %w", err)
			}
			p = p[g.size:]
			m.takePending(g)
		}
	}
	return nil
}
