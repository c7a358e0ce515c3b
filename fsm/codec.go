package fsm

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// CurrentVersion is the newest command envelope version this release
// writes. A replica applies every version from 1 up to CurrentVersion and
// refuses anything newer, so a cluster must be upgraded before new writers
// appear. Encode writes the lowest version that has every feature the
// command uses (minVersion), so entries that older replicas understand
// stay readable to them during a rolling upgrade.
const CurrentVersion uint32 = max(versionUnits, versionSeries, versionLimits, versionBridge, versionGroup, versionRetention)

// versionPolicies is the first envelope version with admission policies
// and variable jobs (TYPE_SET_POLICY, TYPE_SUBMIT_JOB,
// CreateResource.policy) and co-reservation (TYPE_CO_RESERVE). A replica of version 1 would ignore the policy
// field and diverge, so such entries must carry version 2.
const versionPolicies uint32 = 2

// versionEdge is the first envelope version whose Apply
//
//   - refuses every time after MaxTimeMillis (9999-12-31T23:59:59.999Z),
//     the end of a window and the end of an exact start included, and
//     books nothing that would end after it (a version 2 replica books
//     such a window, which no Timestamp can then carry);
//   - refuses an idempotency key reused with another fingerprint
//     (Command.fingerprint; a version 2 replica answers the first result);
//   - deletes a resource with everything on it in one entry
//     (DeleteResource.force);
//   - picks a modification's start itself (Modify.window_duration_millis).
//
// Only the last three are features an entry can be seen to use; the first
// is a change of what an existing entry means, so the edge writes version
// 3 for every command once every server can apply it (see MinVersion) and
// older entries keep their meaning.
const versionEdge uint32 = 3

// versionSeries is the first envelope version with standing reservations
// (TYPE_CREATE_SERIES, TYPE_EXPAND_SERIES, TYPE_CANCEL_SERIES) and the
// occurrence IDs ("<series>@<local start>") they create, which commit,
// abort, modify, cancel and complete accept as targets from this version
// on. Older replicas know none of it.
const versionSeries uint32 = 4

// versionLimits is the first envelope version with per-tenant limits and
// approval (TYPE_SET_LIMITS, TYPE_APPROVE, TYPE_DENY). A version 3
// replica does not know these types.
const versionLimits uint32 = 4

// MaxTimeMillis is the last instant every time in the ledger may reach,
// 9999-12-31T23:59:59.999Z in Unix milliseconds: the largest that a
// google.protobuf.Timestamp (and so every reader, JSON included) can
// carry at millisecond precision. Entries of version 3 refuse any time,
// start, end or deadline after it.
const MaxTimeMillis int64 = 253402300799999

// minVersion returns the lowest envelope version that can carry c.
func minVersion(c *fsmv1.Command) uint32 {
	switch {
	case c.GetType() == fsmv1.Command_TYPE_SET_RETENTION:
		return versionRetention
	case c.GetType() == fsmv1.Command_TYPE_GROUP:
		return versionGroup
	case usesUnits(c):
		return versionUnits
	case c.GetType() == fsmv1.Command_TYPE_CREATE_SERIES, c.GetType() == fsmv1.Command_TYPE_EXPAND_SERIES,
		c.GetType() == fsmv1.Command_TYPE_CANCEL_SERIES:
		return versionSeries
	case c.GetType() == fsmv1.Command_TYPE_SET_LIMITS, c.GetType() == fsmv1.Command_TYPE_APPROVE,
		c.GetType() == fsmv1.Command_TYPE_DENY:
		return versionLimits
	case c.GetType() == fsmv1.Command_TYPE_SET_MATERIALIZATION:
		return versionBridge
	case c.GetType() == fsmv1.Command_TYPE_CHANGE_UNITS:
		return versionUnits
	case len(c.GetFingerprint()) > 0, c.GetDeleteResource().GetForce(),
		c.GetModify().GetWindowDurationMillis() != 0 || c.GetModify().GetNotBeforeMillis() != 0 || c.GetModify().GetDeadlineMillis() != 0:
		return versionEdge
	case c.GetType() == fsmv1.Command_TYPE_SET_POLICY, c.GetType() == fsmv1.Command_TYPE_SUBMIT_JOB,
		c.GetType() == fsmv1.Command_TYPE_CO_RESERVE, c.GetCreateResource().GetPolicy() != nil:
		return versionPolicies
	}
	return 1
}

// MinVersion returns the lowest envelope version that can carry cmd: the
// version Encode writes when cmd.Version is zero. The edge compares it
// with the version every server of the cluster can apply before it
// proposes cmd; a command that needs more must wait, take an older path,
// or be refused as unavailable.
func MinVersion(cmd *fsmv1.Command) uint32 { return minVersion(cmd) }

// ErrMalformed marks bytes that are not a command this release can apply:
// undecodable protobuf, an unknown or missing type, an unsupported envelope
// version, or a payload that does not match the type. Decode returns
// them; the cluster layer calls it on every command that arrives from
// another node before it is proposed, and returns the error to the client.
// The same condition inside Apply is a panic, because a log entry no
// replica can interpret would make replicas diverge.
var ErrMalformed = errors.New("malformed command")

var marshalOpts = proto.MarshalOptions{Deterministic: true}

// Encode checks the envelope of cmd and returns its deterministic wire
// encoding. A zero Version is written as minVersion(cmd) (cmd itself is
// not modified). Field-level problems (a negative amount, an unknown resource)
// are not checked here: they are domain results of Apply, and Check
// reports those that no state can make acceptable before a command is
// encoded.
func Encode(cmd *fsmv1.Command) ([]byte, error) {
	if cmd == nil {
		return nil, fmt.Errorf("encode command: %w: nil command", ErrMalformed)
	}
	if cmd.GetVersion() == 0 {
		cmd = proto.CloneOf(cmd)
		cmd.Version = minVersion(cmd)
	}
	if err := checkEnvelope(cmd); err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	b, err := marshalOpts.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	return b, nil
}

// Decode parses an encoded command and checks its envelope (known type,
// supported version, payload matching the type). Every entry Decode accepts
// can be applied without panicking; every error wraps ErrMalformed. The
// cluster layer calls it on every command forwarded by another node before
// proposing it (Stamp does not check); bytes made by Encode in-process
// need no such check.
//
// A group entry (TYPE_GROUP) is accepted only when every member is: each
// decodes and passes these checks, is of a type that may be grouped, and
// is not itself a group (see group.go); DecodeGroup returns the members.
func Decode(b []byte) (*fsmv1.Command, error) {
	cmd, _, err := decodeChecked(b)
	if err != nil {
		return nil, fmt.Errorf("decode command: %w", err)
	}
	return cmd, nil
}

// decodeChecked parses and checks b, returning a group's decoded members
// too (nil for a lone command).
func decodeChecked(b []byte) (*fsmv1.Command, []*fsmv1.Command, error) {
	cmd, ok := decodeCommandFast(b)
	if ok && verifyCodec {
		verifyCommand(b, cmd)
	}
	if !ok {
		cmd = new(fsmv1.Command)
		if err := proto.Unmarshal(b, cmd); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	members, err := checkEnvelopeMembers(cmd)
	if err != nil {
		return nil, nil, err
	}
	return cmd, members, nil
}

// Stamp returns a copy of the encoded command with the leader's clock
// (Unix milliseconds) set as its now_millis. The leader calls it right
// before raft.Apply; apply itself never reads a clock.
//
// Stamp does not decode the command. It walks the envelope's top-level
// fields (a handful of tags and lengths; the payload is skipped by its
// length, not parsed), drops any now_millis already there and writes the
// new one where the deterministic encoder puts it: before the first field
// with a higher number. For the output of Encode the result is byte for
// byte what decoding, setting now_millis and re-encoding gives (what Stamp
// did before), so the log format is unchanged and every release reads the
// entry as before; for any other bytes that Decode accepts, the result
// decodes to the same command as that reference with now_millis set
// (TestStampMatchesReference, FuzzStamp). It costs one allocation.
//
// Stamp checks only that cmd is a sequence of complete protobuf fields,
// so the stamp can never be swallowed by a truncated field; it refuses
// anything else with ErrMalformed and never panics. It does not check the
// envelope or the payload: bytes made in-process by Encode need no check,
// and commands that arrive from other nodes must pass Decode before they
// are proposed (see the package documentation).
func Stamp(cmd []byte, nowMillis int64) ([]byte, error) {
	out, _, err := StampType(cmd, nowMillis)
	return out, err
}

// StampType is Stamp that also returns the command's type as the decoder
// reads it (the last type field; 0 when there is none), found in the same
// walk over the fields. The leader's stamp uses it to leave every command
// but the few it rewrites as Stamp makes it, without a second walk.
func StampType(cmd []byte, nowMillis int64) ([]byte, fsmv1.Command_Type, error) {
	out := make([]byte, 0, len(cmd)+stampLen(nowMillis))
	stamped := false
	var t fsmv1.Command_Type
	for rest := cmd; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil, 0, fmt.Errorf("stamp: %w: %v", ErrMalformed, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return nil, 0, fmt.Errorf("stamp: %w: field %d: %v", ErrMalformed, num, protowire.ParseError(m))
		}
		field := rest[:n+m]
		rest = rest[n+m:]
		if !stamped && num > nowMillisField {
			out, stamped = appendStamp(out, nowMillis), true
		}
		if num == typeField && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(field[n:]) // complete: ConsumeFieldValue read it
			t = fsmv1.Command_Type(int32(v))
		}
		if num == nowMillisField && typ == protowire.VarintType {
			// An earlier stamp: the decoder would let the last one
			// win, so only the new one is kept.
			continue
		}
		out = append(out, field...)
	}
	if !stamped {
		out = appendStamp(out, nowMillis)
	}
	return out, t, nil
}

// nowMillisField is the field number of Command.now_millis
// (TestNowMillisField checks it against the schema).
const nowMillisField protowire.Number = 3

// stampLen is the encoded size of now_millis = v (0: proto3 omits a zero).
func stampLen(v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(nowMillisField) + protowire.SizeVarint(uint64(v))
}

// appendStamp appends now_millis = v as the deterministic encoder writes
// it: nothing for zero, else the tag and the varint.
func appendStamp(b []byte, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, nowMillisField, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// TickCommand returns an encoded TYPE_EXPIRE command without a timestamp.
// The leader stamps it (Stamp) and applies it periodically so holds expire
// even when no other writes arrive.
func TickCommand() []byte {
	b, err := Encode(&fsmv1.Command{
		Type:    fsmv1.Command_TYPE_EXPIRE,
		Version: 1,
		Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}},
	})
	if err != nil {
		// A constant, well-formed message always encodes.
		panic(fmt.Sprintf("fsm: encode tick: %v", err))
	}
	return b
}

// DecodeResult parses the bytes Apply returned for an entry.
func DecodeResult(b []byte) (*fsmv1.Result, error) {
	r := new(fsmv1.Result)
	if err := proto.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	if r.GetStatus() == fsmv1.Result_STATUS_UNKNOWN {
		return nil, fmt.Errorf("decode result: missing status")
	}
	return r, nil
}

// resultReservationField is the field number of Result.reservation
// (TestResultReservationField checks it against the schema).
const resultReservationField protowire.Number = 6

// encodeResult returns the deterministic encoding of r. The reservation
// in it, most of the bytes, is written by the row codec (appendRow) and
// spliced in at its place in field order; the generic encoder writes the
// rest. The bytes are those the generic encoder writes for the whole
// result (TestEncodeResultMatchesProto).
func encodeResult(r *fsmv1.Result) []byte { return encodeResultRow(r, nil, "") }

// encodeResult is encodeResult for the entry just applied: a result
// that reports the row put stored last (as most do) takes that row's
// stored encoding instead of encoding it again.
func (s *state) encodeResult(r *fsmv1.Result) []byte {
	b := encodeResultRow(r, s.lastPut, s.lastRow)
	if verifyCodec {
		verifyResult(r, b)
	}
	return b
}

// encodeResultRow is encodeResult where known, when not nil, is a
// stored row message and row its stored encoding.
func encodeResultRow(r *fsmv1.Result, known *fsmv1.Reservation, row string) []byte {
	rv := r.Reservation
	if rv == nil || (rv != known && !rowEncodable(rv)) {
		b, err := marshalOpts.Marshal(r)
		if err != nil {
			panic(fmt.Sprintf("fsm: encode result: %v", err))
		}
		return b
	}
	if rv != known {
		row = ""
	}
	size := len(row)
	if row == "" {
		size = rowSize(rv)
	}
	if plainResult(r) {
		return appendPlainResult(nil, r, size, row)
	}
	field := protowire.SizeTag(resultReservationField) + protowire.SizeBytes(size)
	// r is the caller's own message, not yet shared with any reader:
	// it is encoded without its reservation, which is then put back.
	r.Reservation = nil
	b, err := marshalOpts.MarshalAppend(make([]byte, 0, field+64+len(r.Message)), r)
	r.Reservation = rv
	if err != nil {
		panic(fmt.Sprintf("fsm: encode result: %v", err))
	}
	// The encoder writes fields in number order: the reservation goes
	// before the first field numbered above it.
	at := 0
	for at < len(b) {
		num, typ, n := protowire.ConsumeTag(b[at:])
		if n < 0 || num > resultReservationField {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, b[at+n:])
		if m < 0 {
			break
		}
		at += n + m
	}
	b = slices.Grow(b, field)[:len(b)+field]
	copy(b[at+field:], b[at:len(b)-field])
	hdr := protowire.AppendTag(b[at:at], resultReservationField, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(size))
	// The row is written into the gap, within b's capacity.
	if row != "" {
		copy(b[at+len(hdr):], row)
	} else if row := mustAppendRow(hdr[len(hdr):], rv); len(row) != size || len(hdr)+size != field {
		panic(fmt.Sprintf("fsm: encode result: reservation of %d bytes, sized %d", len(row), size))
	}
	return b
}

// plainResult reports whether r has nothing but what appendPlainResult
// writes: the scalars, the message, the reservation and the
// fingerprint. That is the result of nearly every admission; the others
// (a resource, moves, a co-admission, a refusal's detail, a limit,
// series outcomes) go through the generic encoder. r's reservation is
// one rowEncodable accepts.
func plainResult(r *fsmv1.Result) bool {
	return r.Resource == nil && len(r.Moved) == 0 && r.CoAdmission == nil && r.Detail == nil &&
		r.Limit == nil && len(r.Series) == 0 && len(r.ProtoReflect().GetUnknown()) == 0 &&
		utf8.ValidString(r.Message)
}

// appendPlainResult appends the deterministic encoding of a result
// plainResult accepts, whose reservation encodes in rowSize bytes: row
// when it is not empty, else appendRow's.
func appendPlainResult(b []byte, r *fsmv1.Result, rowSize int, row string) []byte {
	n := varintSize(1, uint64(int64(r.Status))) + stringSize(2, r.Message) + varintSize(3, r.Version) +
		varintSize(4, uint64(r.NowMillis)) + protowire.SizeTag(resultReservationField) + protowire.SizeBytes(rowSize) +
		varintSize(8, uint64(r.Expired))
	if r.Replayed {
		n += varintSize(5, 1)
	}
	if len(r.Fingerprint) > 0 {
		n += protowire.SizeTag(14) + protowire.SizeBytes(len(r.Fingerprint))
	}
	b = slices.Grow(b, n)
	b = appendVarint(b, 1, uint64(int64(r.Status)))
	b = appendString(b, 2, r.Message)
	b = appendVarint(b, 3, r.Version)
	b = appendVarint(b, 4, uint64(r.NowMillis))
	if r.Replayed {
		b = appendVarint(b, 5, 1)
	}
	b = protowire.AppendTag(b, resultReservationField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(rowSize))
	if row != "" {
		b = append(b, row...)
	} else {
		b = mustAppendRow(b, r.Reservation)
	}
	b = appendVarint(b, 8, uint64(r.Expired))
	if len(r.Fingerprint) > 0 {
		b = protowire.AppendTag(b, 14, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Fingerprint)
	}
	return b
}

// checkEnvelope verifies what every replica must agree on before applying:
// the version, a known type, and the payload that type requires.
func checkEnvelope(c *fsmv1.Command) error {
	_, err := checkEnvelopeMembers(c)
	return err
}

// checkEnvelopeMembers is checkEnvelope that also returns the decoded
// members of a group (nil for a lone command).
func checkEnvelopeMembers(c *fsmv1.Command) ([]*fsmv1.Command, error) {
	if v := c.GetVersion(); v == 0 || v > CurrentVersion {
		return nil, fmt.Errorf("%w: version %d not supported (this release applies 1..%d)", ErrMalformed, v, CurrentVersion)
	}
	if v, need := c.GetVersion(), minVersion(c); v < need {
		return nil, fmt.Errorf("%w: version %d entry uses features of version %d", ErrMalformed, v, need)
	}
	if err := checkPayload(c); err != nil {
		return nil, err
	}
	if c.GetType() == fsmv1.Command_TYPE_GROUP {
		return checkGroup(c)
	}
	return nil, nil
}

// checkPayload verifies that c has a known type and the payload that type
// requires.
func checkPayload(c *fsmv1.Command) error {
	var ok bool
	switch c.GetType() {
	case fsmv1.Command_TYPE_CREATE_RESOURCE:
		ok = c.GetCreateResource() != nil
	case fsmv1.Command_TYPE_UPDATE_RESOURCE:
		ok = c.GetUpdateResource() != nil
	case fsmv1.Command_TYPE_DELETE_RESOURCE:
		ok = c.GetDeleteResource() != nil
	case fsmv1.Command_TYPE_HOLD, fsmv1.Command_TYPE_RESERVE:
		ok = c.GetRequest() != nil
	case fsmv1.Command_TYPE_COMMIT, fsmv1.Command_TYPE_ABORT, fsmv1.Command_TYPE_CANCEL:
		ok = c.GetTarget() != nil
	case fsmv1.Command_TYPE_MODIFY:
		ok = c.GetModify() != nil
	case fsmv1.Command_TYPE_EXPIRE:
		ok = c.GetExpire() != nil
	case fsmv1.Command_TYPE_COMPLETE:
		ok = c.GetComplete() != nil
	case fsmv1.Command_TYPE_SET_POLICY:
		ok = c.GetSetPolicy() != nil
	case fsmv1.Command_TYPE_SUBMIT_JOB:
		ok = c.GetSubmitJob() != nil
	case fsmv1.Command_TYPE_CO_RESERVE:
		ok = c.GetCoReserve() != nil
	case fsmv1.Command_TYPE_UNIT_DOWN:
		ok = c.GetUnitDown() != nil
	case fsmv1.Command_TYPE_UNIT_UP:
		ok = c.GetUnitUp() != nil
	case fsmv1.Command_TYPE_CREATE_SERIES:
		ok = c.GetCreateSeries() != nil
	case fsmv1.Command_TYPE_EXPAND_SERIES:
		ok = c.GetExpandSeries() != nil
	case fsmv1.Command_TYPE_CANCEL_SERIES:
		ok = c.GetCancelSeries() != nil
	case fsmv1.Command_TYPE_SET_LIMITS:
		ok = c.GetSetLimits() != nil
	case fsmv1.Command_TYPE_APPROVE, fsmv1.Command_TYPE_DENY:
		ok = c.GetDecision() != nil
	case fsmv1.Command_TYPE_SET_MATERIALIZATION:
		ok = c.GetSetMaterialization() != nil
	case fsmv1.Command_TYPE_CHANGE_UNITS:
		ok = c.GetChangeUnits() != nil
	case fsmv1.Command_TYPE_GROUP:
		ok = c.GetGroup() != nil
	case fsmv1.Command_TYPE_SET_RETENTION:
		ok = c.GetSetRetention() != nil
	default:
		return fmt.Errorf("%w: unknown type %d", ErrMalformed, int32(c.GetType()))
	}
	if !ok {
		return fmt.Errorf("%w: type %s without its payload", ErrMalformed, c.GetType())
	}
	return nil
}
