// Package testbin builds the ledgerd binary from this tree for tests that
// run it as a real process (config checks, metrics scrapes, rehearsals).
// It is test support only: product code must not import it.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	bin  string
	err  error
)

// Ledgerd returns the path of a ledgerd binary built once per test process
// from the module that contains the working directory. Call Cleanup from
// TestMain to remove it.
func Ledgerd(t testing.TB) string {
	t.Helper()
	once.Do(func() { bin, err = build() })
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Cleanup removes the binary built by Ledgerd, if any.
func Cleanup() {
	if bin != "" {
		os.RemoveAll(filepath.Dir(bin))
	}
}

func build() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	dir, err := os.MkdirTemp("", "ledgerd-test-bin-")
	if err != nil {
		return "", fmt.Errorf("build ledgerd: %w", err)
	}
	path := filepath.Join(dir, "ledgerd")
	cmd := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", path, "./cmd/ledgerd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/ledgerd: %w\n%s", err, out)
	}
	return path, nil
}
