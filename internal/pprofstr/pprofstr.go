// Package pprofstr reads and rewrites the string table of a pprof profile
// (the uncompressed protobuf of pprof's profile.proto), where a profile
// keeps every function and file name it refers to. It leaves every other
// field byte for byte as it is, and must not decode more of a profile
// than its top-level fields.
package pprofstr

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// stringTableField is the field number of Profile.string_table.
const stringTableField = 6

// Map returns prof with each string s of its string table replaced by
// f(s), and how many f changed; the strings keep their number and order,
// so every index into the table stays valid, and a field whose string f
// keeps is copied as it was. A malformed top-level field is an error.
func Map(prof []byte, f func(string) string) ([]byte, int, error) {
	out := make([]byte, 0, len(prof))
	n := 0
	for len(prof) > 0 {
		num, typ, tl := protowire.ConsumeTag(prof)
		if tl < 0 {
			return nil, 0, errors.New("bad field tag")
		}
		vl := protowire.ConsumeFieldValue(num, typ, prof[tl:])
		if vl < 0 {
			return nil, 0, fmt.Errorf("field %d: bad value", num)
		}
		if num == stringTableField && typ == protowire.BytesType {
			s, _ := protowire.ConsumeString(prof[tl:])
			if r := f(s); r != s {
				out = protowire.AppendTag(out, num, typ)
				out = protowire.AppendString(out, r)
				n++
				prof = prof[tl+vl:]
				continue
			}
		}
		out = append(out, prof[:tl+vl]...)
		prof = prof[tl+vl:]
	}
	return out, n, nil
}

// Strings returns the string table of prof, in order.
func Strings(prof []byte) ([]string, error) {
	var strs []string
	_, _, err := Map(prof, func(s string) string { strs = append(strs, s); return s })
	return strs, err
}
