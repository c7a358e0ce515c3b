package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a write that fails half-way leaves the old file as it was
// and no temporary file; one that succeeds replaces it whole, readable by
// its owner only.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ledger.snap")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("source went away")
	for _, tc := range []struct {
		name  string
		write func(io.Writer) error
		want  string
		err   error
	}{
		{"fails half-way", func(w io.Writer) error { _, _ = io.WriteString(w, "half of a new"); return boom }, "old", boom},
		{"succeeds", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, "new", nil},
		{"empty", func(io.Writer) error { return nil }, "", nil},
	} {
		if err := Write(file, tc.write); !errors.Is(err, tc.err) {
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.err)
		}
		if b, _ := os.ReadFile(file); string(b) != tc.want {
			t.Fatalf("%s: file holds %q, want %q", tc.name, b, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("%s: %d entries in the directory, want the file alone", tc.name, len(entries))
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if err := WriteBytes(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}
