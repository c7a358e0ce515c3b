package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ledgerd/ledgerd/internal/pprofstr"
)

// profile encodes a profile holding only the given string table
// (pprofstr's tests cover the other fields being copied).
func profile(strs ...string) []byte {
	var b []byte
	for _, s := range strs {
		b = protowire.AppendString(protowire.AppendTag(b, 6, protowire.BytesType), s) // string_table
	}
	return b
}

func TestStrip(t *testing.T) {
	prefixes := []string{"/home/me/ledgerd/", "/opt/go/src/", "/home/me/go/pkg/mod/"}
	in := profile("", "cpu", "github.com/ledgerd/ledgerd/planner.(*IndexedTimeline).Book",
		"/home/me/ledgerd/planner/indexed.go", "/opt/go/src/runtime/mgc.go",
		"/home/me/go/pkg/mod/github.com/hashicorp/raft@v1.7.3/api.go", "/tmp/ledgerd-pgo-x/ledgerd", "planner/list.go")
	want := profile("", "cpu", "github.com/ledgerd/ledgerd/planner.(*IndexedTimeline).Book",
		"planner/indexed.go", "runtime/mgc.go", "github.com/hashicorp/raft@v1.7.3/api.go", "ledgerd", "planner/list.go")
	got, n, err := strip(in, prefixes)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || !bytes.Equal(got, want) {
		t.Fatalf("strip rewrote %d strings:\n got %q\nwant %q", n, got, want)
	}
	// Stripping a stripped profile changes nothing.
	if again, n, err := strip(got, prefixes); err != nil || n != 0 || !bytes.Equal(again, got) {
		t.Fatalf("second strip: %d rewritten, %v, changed: %v", n, err, !bytes.Equal(again, got))
	}
	if _, _, err := strip([]byte{0x32, 0x05, 'a'}, nil); err == nil {
		t.Fatal("a truncated string field was accepted")
	}
}

// FuzzStrip: any input either is refused or gives a profile whose strings
// are the input's, with no absolute path left, and that a second strip
// leaves as it is.
func FuzzStrip(f *testing.F) {
	f.Add(profile("/a/b/c.go", "x"), "/a/")
	f.Add([]byte{0x32, 0x01, '/'}, "")
	f.Add(profile("/a/b", "//"), "/a")
	f.Fuzz(func(t *testing.T, in []byte, prefix string) {
		out, _, err := strip(in, []string{prefix})
		if err != nil {
			return
		}
		strs := func(b []byte) (n int, abs bool) {
			all, _ := pprofstr.Strings(b)
			return len(all), slices.ContainsFunc(all, func(s string) bool { return strings.HasPrefix(s, "/") })
		}
		nin, _ := strs(in)
		nout, abs := strs(out)
		if nin != nout {
			t.Fatalf("%d strings in, %d out", nin, nout)
		}
		if abs {
			t.Fatalf("an absolute path is left in %q", out)
		}
		if again, n, err := strip(out, []string{prefix}); err != nil || n != 0 || !bytes.Equal(again, out) {
			t.Fatalf("second strip: %d rewritten, %v", n, err)
		}
	})
}
