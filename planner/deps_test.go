package planner

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbiddenImports are the standard packages the deterministic core must
// not use: clocks, I/O, concurrency and unseeded randomness.
var forbiddenImports = map[string]string{
	"time":         "time is an argument, never read from a clock",
	"os":           "no I/O",
	"net":          "no I/O",
	"net/http":     "no I/O",
	"sync":         "no concurrency; the caller serialises access",
	"sync/atomic":  "no concurrency; the caller serialises access",
	"math/rand":    "no randomness in decisions",
	"math/rand/v2": "no randomness in decisions",
	"crypto/rand":  "no randomness in decisions",
	"io/ioutil":    "no I/O",
	"unsafe":       "no memory tricks in the replicated core",
}

// allowedModulePackages are the packages of this module the planner may
// import: each imports nothing itself, which its own tests check.
var allowedModulePackages = map[string]bool{
	"github.com/ledgerd/ledgerd/internal/idhash":    true,
	"github.com/ledgerd/ledgerd/internal/rangesort": true,
	"github.com/ledgerd/ledgerd/internal/stepsort":  true,
}

// TestForbiddenImports fails if a non-test file of the package imports a
// forbidden standard package or anything outside the standard library
// (raft, protobuf, ...).
func TestForbiddenImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, imp.Path.Value, err)
			}
			if why, ok := forbiddenImports[path]; ok {
				t.Errorf("%s imports %q: %s", name, path, why)
			}
			if allowedModulePackages[path] {
				continue
			}
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %q: the planner uses the standard library only", name, path)
			}
		}
	}
	if checked < 4 {
		t.Fatalf("checked only %d files; is the test running in the package directory?", checked)
	}
}
