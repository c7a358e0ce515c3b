package series

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EncodingVersion is the version byte Encode writes first. A new field or a
// change of meaning gets a new version; Decode keeps reading every version
// it ever wrote (testdata/spec-v1.hex is the upgrade test).
const EncodingVersion = 1

// Bounds on the encoded strings, so a corrupt length cannot ask for much.
const maxEncodedLen = 4 + maxRuleLen + maxZoneNameLen + 32 + 4*binary.MaxVarintLen64

// Encode returns the spec's stable binary form (version 1):
//
//	byte    version = 1
//	uvarint len, bytes  Rule  (canonical RRULE)
//	uvarint len, bytes  Zone
//	uvarint len, bytes  Start (YYYYMMDDTHHMMSS)
//	varint  NotBefore, End, Duration, Horizon (zig-zag, ms)
//
// Equal specs encode to equal bytes. Encode does not check the spec; the
// writer (the edge, the leader) has Compiled it, and Decode checks it.
func (s Spec) Encode() []byte {
	b := make([]byte, 0, 1+len(s.Rule)+len(s.Zone)+len(s.Start)+3+4*binary.MaxVarintLen64)
	b = append(b, EncodingVersion)
	for _, str := range []string{s.Rule, s.Zone, s.Start} {
		b = binary.AppendUvarint(b, uint64(len(str)))
		b = append(b, str...)
	}
	for _, v := range []int64{s.NotBefore, s.End, s.Duration, s.Horizon} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// Decode reads what Encode wrote and checks it as validate does: the rule
// (syntax, RFC 5545 constraints, canonical form), the shape of the zone
// name and of Start, the ranges of the numbers. It needs neither the zone
// database nor the limits, so every replica reads every stored spec the
// same way; whether the zone exists and the limits hold is the business of
// Compile, on the leader. Errors are *FieldError; bad bytes never panic.
func Decode(b []byte) (Spec, error) {
	if len(b) == 0 {
		return Spec{}, fieldErr(FieldEncoding, "empty")
	}
	if len(b) > maxEncodedLen {
		return Spec{}, fieldErr(FieldEncoding, "%d bytes is longer than any spec", len(b))
	}
	if b[0] != EncodingVersion {
		return Spec{}, fieldErr(FieldEncoding, "version %d is unknown (this release reads 1)", b[0])
	}
	rest := b[1:]
	var strs [3]string
	for i := range strs {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return Spec{}, fieldErr(FieldEncoding, "string %d: bad length", i)
		}
		strs[i] = string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
	}
	var nums [4]int64
	for i := range nums {
		v, k := binary.Varint(rest)
		if k <= 0 {
			return Spec{}, fieldErr(FieldEncoding, "number %d: bad varint", i)
		}
		nums[i] = v
		rest = rest[k:]
	}
	if len(rest) != 0 {
		return Spec{}, fieldErr(FieldEncoding, "%d trailing bytes", len(rest))
	}
	s := Spec{Rule: strs[0], Zone: strs[1], Start: strs[2], NotBefore: nums[0], End: nums[1], Duration: nums[2], Horizon: nums[3]}
	if _, _, err := s.validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return Spec{}, err
		}
		return Spec{}, fmt.Errorf("series: decode: %w", err)
	}
	return s, nil
}
