package idhash

import (
	"go/parser"
	"go/token"
	"testing"
)

// TestKnownValues pins the function: the tables that use it do not
// store hashes, but a change would silently change their layouts and the
// benchmarks measured on them. The FNV-1a part is checked against the
// published test vectors (before Finish).
func TestKnownValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fnv  uint64
		want uint64
	}{
		{"", 0xcbf29ce484222325, Finish(0xcbf29ce484222325)},
		{"a", 0xaf63dc4c8601ec8c, Finish(0xaf63dc4c8601ec8c)},
		{"foobar", 0x85944171f73967e8, Finish(0x85944171f73967e8)},
	} {
		if got := Add(Offset, tc.in); got != tc.fnv {
			t.Errorf("Add(Offset, %q) = %#x, want %#x (FNV-1a)", tc.in, got, tc.fnv)
		}
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
		if got := String([]byte(tc.in)); got != tc.want {
			t.Errorf("String([]byte(%q)) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
	if got, want := String("foobar"), uint64(0x2c22194922d1672b); got != want {
		t.Errorf("String(\"foobar\") = %#x, want %#x", got, want)
	}
	if got, want := Finish(1), uint64(0xb456bcfc34c2cb2c); got != want {
		t.Errorf("Finish(1) = %#x, want %#x", got, want)
	}
}

// TestAddByteIsAdd: a separator byte hashes as a one-byte string.
func TestAddByteIsAdd(t *testing.T) {
	for b := range 256 {
		if got, want := AddByte(Offset, byte(b)), Add(Offset, []byte{byte(b)}); got != want {
			t.Fatalf("AddByte(%d) = %#x, Add = %#x", b, got, want)
		}
	}
}

// TestMovable checks the backward-shift rule against its definition, for
// every hole, position and home cell of two small tables: an entry may
// move unless a walk from just after the hole to its position passes its
// home cell.
func TestMovable(t *testing.T) {
	for _, size := range []uint64{8, 16} {
		mask := size - 1
		for hole := range size {
			for at := range size {
				if at == hole {
					continue
				}
				for home := range size {
					between := false // home in (hole, at], cyclically
					for c := (hole + 1) & mask; ; c = (c + 1) & mask {
						if c == home {
							between = true
						}
						if c == at {
							break
						}
					}
					if got := Movable(hole, at, home, mask); got != !between {
						t.Fatalf("size %d: Movable(hole %d, at %d, home %d) = %v, want %v", size, hole, at, home, got, !between)
					}
				}
			}
		}
	}
}

// TestImportsNothing keeps the package usable by the planner.
func TestImportsNothing(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "idhash.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Imports) != 0 {
		t.Fatalf("idhash.go imports %d packages, want none", len(f.Imports))
	}
}
