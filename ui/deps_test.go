package ui_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the ui package a plain file server: it is a client of the
// public API like any other and must not reach into the ledger's packages.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "hashicorpmetrics",
		"-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/ledgerd/ledgerd/ui").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/ledgerd/ledgerd/ui" {
			t.Errorf("ui imports %s; it must depend on the standard library only", p)
		}
	}
}
