package bridge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbiddenImports are what the resource-manager-neutral core must not use:
// it does no I/O and starts nothing; drivers and the ledger side do.
var forbiddenImports = map[string]string{
	"os":           "no I/O",
	"os/exec":      "no I/O: drivers run commands",
	"net":          "no I/O",
	"net/http":     "no I/O",
	"sync":         "no concurrency; the caller serialises rounds",
	"sync/atomic":  "no concurrency; the caller serialises rounds",
	"math/rand":    "no randomness in plans",
	"math/rand/v2": "no randomness in plans",
	"unsafe":       "no memory tricks",
}

// forbiddenCalls read a clock or wait: time is an argument of Reconcile.
var forbiddenCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true}

// TestPureCore fails if a non-test file imports a forbidden package or
// anything outside the standard library and this module, calls a clock of
// package time, or starts a goroutine.
func TestPureCore(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, ok := forbiddenImports[path]; ok {
				t.Errorf("%s imports %q: %s", name, path, why)
			}
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %q: the core uses the standard library only", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: starts a goroutine", name)
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && forbiddenCalls[n.Sel.Name] {
					t.Errorf("%s: calls time.%s: time is an argument", name, n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 3 {
		t.Fatalf("checked only %d files; is the test running in the package directory?", checked)
	}
}
