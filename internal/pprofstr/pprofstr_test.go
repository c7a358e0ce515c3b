package pprofstr

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// profile encodes a message with the given string table and, before it,
// a bytes field and a varint field, as a profile has.
func profile(strs ...string) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType) // sample_type
	b = protowire.AppendBytes(b, []byte{8, 1, 16, 2})
	b = protowire.AppendTag(b, 9, protowire.VarintType) // time_nanos
	b = protowire.AppendVarint(b, 1795790000)
	for _, s := range strs {
		b = protowire.AppendTag(b, stringTableField, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

func TestMap(t *testing.T) {
	in := profile("", "cpu", "a/b.go", "x")
	got, n, err := Map(in, strings.ToUpper)
	if want := profile("", "CPU", "A/B.GO", "X"); err != nil || n != 3 || !bytes.Equal(got, want) {
		t.Fatalf("Map: %d changed, %v:\n got %q\nwant %q", n, err, got, want)
	}
	if strs, err := Strings(in); err != nil || !slices.Equal(strs, []string{"", "cpu", "a/b.go", "x"}) {
		t.Fatalf("Strings = %q, %v", strs, err)
	}
	if _, _, err := Map([]byte{0x32, 0x05, 'a'}, strings.ToUpper); err == nil {
		t.Fatal("a truncated string field was accepted")
	}
}

// FuzzMap: any input is refused or, mapped by the identity, comes back
// byte for byte with nothing counted as changed.
func FuzzMap(f *testing.F) {
	f.Add(profile("/a/b/c.go", "x"))
	f.Add([]byte{0x32, 0x01, '/'})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, n, err := Map(in, func(s string) string { return s })
		if err != nil {
			return
		}
		if n != 0 || !bytes.Equal(out, in) {
			t.Fatalf("identity map changed %d strings: %q -> %q", n, in, out)
		}
	})
}
