package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIClientErrorsNameTheCommand: every command that talks to the
// agents reports a client setup error (here an unreadable -ca-file) under
// its own name with exit code 1, before it sends anything.
func TestCLIClientErrorsNameTheCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-ca.pem")
	shape := []string{"-res", "gpu=1", "-dur", "1h"}
	for _, tc := range []struct {
		name string // as printed after "ledgerd "
		args []string
	}{
		{"reserve", append([]string{"reserve"}, shape...)},
		{"hold", append([]string{"hold"}, shape...)},
		{"commit", []string{"commit", "r1"}},
		{"abort", []string{"abort", "r1"}},
		{"cancel", []string{"cancel", "r1"}},
		{"complete", []string{"complete", "r1"}},
		{"modify", append([]string{"modify", "r1"}, shape...)},
		{"get", []string{"get", "r1"}},
		{"list", []string{"list"}},
		{"find", append([]string{"find"}, shape...)},
		{"offers", append([]string{"offers"}, shape...)},
		{"availability", []string{"availability", "gpu"}},
		{"watch", []string{"watch"}},
		{"resources", []string{"resources"}},
		{"resources", []string{"resources", "list"}},
		{"resources create", []string{"resources", "create", "x", "-capacity", "1"}},
		{"resources update", []string{"resources", "update", "x", "-capacity", "1"}},
		{"resources delete", []string{"resources", "delete", "x"}},
		{"resources policy set", []string{"resources", "policy", "set", "x", "-policy", "reject"}},
		{"members", []string{"members"}},
		{"snapshot", []string{"snapshot", "save", filepath.Join(t.TempDir(), "snap")}},
		{"job submit", []string{"job", "submit", "-resource", "gpu", "-amount", "1", "-duration", "1h"}},
		{"coreserve", []string{"coreserve", "-sub", "1@+1h+1h", "-candidates", "gpu"}},
		{"coalloc", []string{"coalloc", "-site", "a=127.0.0.1:1", "-res", "a:gpu=1", "-dur", "1h"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, append(tc.args, "-ca-file", missing)...)
			want := "ledgerd " + tc.name + ": -ca-file: open " + missing
			if code != exitError || !strings.HasPrefix(errOut, want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and stderr starting %q", code, out, errOut, exitError, want)
			}
		})
	}
}
