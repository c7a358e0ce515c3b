package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDeterministicSource keeps the non-test sources of this package free
// of what would make replicas diverge: clocks, random sources, the
// environment, the network, and goroutines.
func TestDeterministicSource(t *testing.T) {
	forbidden := map[string]string{
		"time":                            "apply must not read a clock; log time comes from the entry",
		"math/rand":                       "apply must not draw random numbers",
		"math/rand/v2":                    "apply must not draw random numbers",
		"crypto/rand":                     "apply must not draw random numbers",
		"os":                              "the FSM does no I/O of its own",
		"net":                             "the FSM knows nothing of networks",
		"net/http":                        "the FSM knows nothing of networks",
		"github.com/hashicorp/memberlist": "the FSM knows nothing of membership",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := forbidden[path]; bad {
				t.Errorf("%s imports %q: %s", name, path, why)
			}
		}
		full, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: goroutine started at %s; the FSM runs on its caller's goroutine", name, fset.Position(g.Pos()))
			}
			return true
		})
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}
