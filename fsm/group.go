package fsm

import (
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// Group commit: several admissions share one log entry (TYPE_GROUP), so
// one disk sync and one replication round carry them all. A group at
// index i applies its members in order, each exactly as if it were the
// entry alone at index i with the group's log time, except that the event
// sequence number continues from member to member (events stay unique by
// version and seq). Each member keeps its own result, idempotency record
// and error; a member's failure does not touch the others.
//
// Only members whose meaning does not depend on being alone at their
// index may be grouped:
//
//   - HOLD and RESERVE: their row is created at the index (created and
//     updated version), which is the same alone or grouped. A request
//     without a client-chosen ID (every one the public API makes) gets its
//     ID from the index: the first such member of a group gets AutoID(i),
//     as it would alone, and the n-th after it AutoID(i)+"-n"
//     (GroupAutoID) — the one other thing besides the event sequence that
//     a group changes, for the same reason: two members must not share a
//     name that the index alone would give both.
//   - COMMIT, ABORT, MODIFY and CANCEL: they change a named row, stamped
//     with the index and log time.
//
// Everything else stays alone: UNIT_DOWN names its window after the index,
// series and limits commands change tables whose changed-at version is the
// index, resource commands and the tick are rare. A group never nests.

// versionGroup is the first envelope version with TYPE_GROUP. A version 4
// replica does not know the type and would stop on it, so a leader
// proposes groups only once every server announces version 5.
const versionGroup uint32 = 5

// GroupVersion is the lowest envelope version every server of a cluster
// must apply before the leader may propose a group entry (see
// cluster.Config.GroupVersion).
const GroupVersion = versionGroup

// Bounds of one group entry that GroupCommands builds: at most
// MaxGroupMembers members, and members of at most MaxGroupBytes encoded
// bytes in all (a single larger member is still proposed, alone).
const (
	MaxGroupMembers = 256
	MaxGroupBytes   = 1 << 20
)

// groupPayloadField is the field number of Command.group and
// groupMembersField that of Group.members; the others are Command's
// (TestGroupFieldNumbers checks them all against the schema).
const (
	typeField         protowire.Number = 1
	versionField      protowire.Number = 2
	groupPayloadField protowire.Number = 60
	groupMembersField protowire.Number = 1
	requestField      protowire.Number = 13
	targetField       protowire.Number = 14
	modifyField       protowire.Number = 15
)

// groupable reports whether a command of type t may be a group member.
func groupable(t fsmv1.Command_Type) bool {
	switch t {
	case fsmv1.Command_TYPE_HOLD, fsmv1.Command_TYPE_RESERVE, fsmv1.Command_TYPE_COMMIT,
		fsmv1.Command_TYPE_ABORT, fsmv1.Command_TYPE_MODIFY, fsmv1.Command_TYPE_CANCEL:
		return true
	}
	return false
}

// takesAutoID reports whether member m gets its reservation ID from the
// index (a hold or reserve whose request names none).
func takesAutoID(m *fsmv1.Command) bool {
	t := m.GetType()
	return (t == fsmv1.Command_TYPE_HOLD || t == fsmv1.Command_TYPE_RESERVE) && m.GetRequest().GetId() == ""
}

// scanMember reads, without decoding the payload, whether the encoded
// command b may be a group member, and its now_millis. It is
// conservative: anything it does not read exactly as the decoder would (a
// repeated type or stamp, several payload fields, a wire type that does
// not match the schema) is not groupable, so the leader proposes it
// alone. It reads the envelope of well-formed commands only; members are
// still decoded and checked in full by every replica (checkGroup).
func scanMember(b []byte) (now int64, ok bool) {
	var (
		typ             uint64
		sawType, sawNow bool
		payload         protowire.Number
		payloadFields   int
	)
	for rest := b; len(rest) > 0; {
		num, wt, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return 0, false
		}
		rest = rest[n:]
		switch {
		case num == typeField || num == nowMillisField:
			if wt != protowire.VarintType {
				return 0, false
			}
			v, m := protowire.ConsumeVarint(rest)
			if m < 0 {
				return 0, false
			}
			rest = rest[m:]
			if num == typeField {
				if sawType {
					return 0, false
				}
				typ, sawType = v, true
			} else {
				if sawNow {
					return 0, false
				}
				now, sawNow = int64(v), true
			}
			continue
		case num >= 10:
			// Every field from 10 on is a payload of the oneof, a
			// message.
			if wt != protowire.BytesType {
				return 0, false
			}
			payload = num
			payloadFields++
		}
		m := protowire.ConsumeFieldValue(num, wt, rest)
		if m < 0 {
			return 0, false
		}
		rest = rest[m:]
	}
	t := fsmv1.Command_Type(typ)
	if !sawType || payloadFields != 1 || uint64(t) != typ || !groupable(t) {
		return 0, false
	}
	want := targetField
	switch t {
	case fsmv1.Command_TYPE_HOLD, fsmv1.Command_TYPE_RESERVE:
		want = requestField
	case fsmv1.Command_TYPE_MODIFY:
		want = modifyField
	}
	return now, payload == want
}

// GroupCommands is the leader's group builder (cluster.Config.Group). cmds
// are stamped, well-formed commands about to be proposed, in order. It
// returns the longest prefix of at least two that may share one log entry
// (every one a group-safe admission with the same now_millis, within
// MaxGroupMembers and MaxGroupBytes) as the encoded TYPE_GROUP entry and
// its length n; n < 2 (and no entry) when cmds[0] must be proposed alone.
// It does not decode the members: it reads their envelopes (scanMember)
// and copies their bytes. It never panics.
func GroupCommands(cmds [][]byte) ([]byte, int) {
	if len(cmds) < 2 {
		return nil, len(cmds)
	}
	now, ok := scanMember(cmds[0])
	if !ok || len(cmds[0]) > MaxGroupBytes {
		return nil, 1
	}
	n, size := 1, len(cmds[0])
	for n < len(cmds) && n < MaxGroupMembers {
		t, ok := scanMember(cmds[n])
		if !ok || t != now || size+len(cmds[n]) > MaxGroupBytes {
			break
		}
		size += len(cmds[n])
		n++
	}
	if n < 2 {
		return nil, 1
	}
	return appendGroup(nil, now, cmds[:n]), n
}

// appendGroup appends the encoding of a TYPE_GROUP entry of the given
// members, stamped with now, exactly as the deterministic encoder writes
// it (fields in number order, zero now_millis omitted), so that Decode
// and re-Encode give the same bytes (TestGroupEncodingCanonical).
func appendGroup(b []byte, now int64, members [][]byte) []byte {
	inner := 0
	for _, m := range members {
		inner += protowire.SizeTag(groupMembersField) + protowire.SizeBytes(len(m))
	}
	size := protowire.SizeTag(typeField) + protowire.SizeVarint(uint64(fsmv1.Command_TYPE_GROUP)) +
		protowire.SizeTag(versionField) + protowire.SizeVarint(uint64(versionGroup)) +
		stampLen(now) + protowire.SizeTag(groupPayloadField) + protowire.SizeBytes(inner)
	if b == nil {
		b = make([]byte, 0, size)
	}
	b = protowire.AppendTag(b, typeField, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(fsmv1.Command_TYPE_GROUP))
	b = protowire.AppendTag(b, versionField, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(versionGroup))
	b = appendStamp(b, now)
	b = protowire.AppendTag(b, groupPayloadField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	for _, m := range members {
		b = protowire.AppendTag(b, groupMembersField, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b
}

// checkGroup decodes and checks every member of the group envelope c
// (whose payload checkPayload has seen): at least one member, each a
// command Decode accepts, of a group-safe type, stamped with the group's
// now_millis; the envelope itself carries no owner, key, fingerprint or
// privilege (a group has no meaning of its own to apply them to). It
// returns the decoded members, so that nothing is applied before the
// whole group is known to be good.
func checkGroup(c *fsmv1.Command) ([]*fsmv1.Command, error) {
	switch {
	case c.GetOwner() != "" || c.GetIdempotencyKey() != "" || len(c.GetFingerprint()) > 0 || c.GetPrivileged():
		return nil, fmt.Errorf("%w: group: the group envelope carries an owner, idempotency key, fingerprint or privilege (only its members may)", ErrMalformed)
	case len(c.GetGroup().GetMembers()) == 0:
		return nil, fmt.Errorf("%w: group: group.members is empty", ErrMalformed)
	}
	raw := c.GetGroup().GetMembers()
	out := make([]*fsmv1.Command, len(raw))
	for i, b := range raw {
		m, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("group.members[%d]: %w", i, err)
		}
		switch {
		case m.GetType() == fsmv1.Command_TYPE_GROUP:
			return nil, fmt.Errorf("%w: group.members[%d]: a group never nests", ErrMalformed, i)
		case !groupable(m.GetType()):
			return nil, fmt.Errorf("%w: group.members[%d]: type %s may not be grouped", ErrMalformed, i, m.GetType())
		case m.GetNowMillis() != c.GetNowMillis():
			return nil, fmt.Errorf("%w: group.members[%d]: now_millis %d differs from the group's %d", ErrMalformed, i, m.GetNowMillis(), c.GetNowMillis())
		}
		out[i] = m
	}
	return out, nil
}

// DecodeGroup returns the decoded members of an entry Decode accepted:
// nil for a command that is not a group.
func DecodeGroup(cmd *fsmv1.Command) ([]*fsmv1.Command, error) {
	if cmd.GetType() != fsmv1.Command_TYPE_GROUP {
		return nil, nil
	}
	return checkGroup(cmd)
}

// decodeEntry is Decode for Apply: it also returns a group's members,
// decoded once (nil for a lone command).
func decodeEntry(b []byte) (*fsmv1.Command, []*fsmv1.Command, error) {
	cmd, members, err := decodeChecked(b)
	if err != nil {
		return nil, nil, fmt.Errorf("decode command: %w", err)
	}
	return cmd, members, nil
}

// applyGroup applies the members of a group entry at index, in order, and
// returns one *Applied per member. The event sequence number starts
// at zero for the entry and continues across the members, and the members
// that take their ID from the index are numbered (GroupAutoID); everything
// else is per member, as in applyEncoded.
func (s *state) applyGroup(index uint64, members []*fsmv1.Command) []any {
	s.seq = 0
	out := make([]any, len(members))
	autos := 0
	for i, m := range members {
		s.autoN = autos
		if takesAutoID(m) {
			autos++
		}
		res, enc := s.applyMember(index, m)
		if enc == nil {
			enc = s.encodeResult(res)
		}
		out[i] = newApplied(res, enc)
	}
	return out
}
