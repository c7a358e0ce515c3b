package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperatorGossipKeyring rotates the gossip key of a dev agent through
// the command line: install, use, remove, list; bad usage exits with the
// usage code and bad keys name the field.
func TestOperatorGossipKeyring(t *testing.T) {
	oldKey := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	newKey := base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba98"))
	dataDir := t.TempDir()
	s, _, _ := runDevAgent(t, "-data-dir", dataDir, "-gossip-key", oldKey)
	addr := s.Addr()
	for _, step := range []struct {
		args    []string
		primary string
		others  string
	}{
		{[]string{"-install", newKey}, oldKey, newKey},
		{[]string{"-use", newKey}, newKey, oldKey},
		{[]string{"-remove", oldKey}, newKey, "-"},
		{[]string{"-list"}, newKey, "-"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"operator", "gossip", "keyring", "-addr", addr}, step.args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", step.args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "NODE ID") {
			t.Fatalf("%v: table:\n%s", step.args, stdout)
		}
		row := strings.Fields(lines[1])
		if len(row) != 4 || row[0] != s.Node().ID() || row[2] != step.primary || row[3] != step.others {
			t.Fatalf("%v: row %q, want primary %s others %s", step.args, row, step.primary, step.others)
		}
	}
	if st, err := os.Stat(filepath.Join(dataDir, "keyring.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("keyring.json: %v, %v", st, err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, exitUsage, "exactly one of"},
		{[]string{"-list", "-use", newKey}, exitUsage, "exactly one of"},
		{[]string{"-install", "not-base64!"}, exitError, "invalid key"},
		{[]string{"-remove", newKey}, exitError, "primary"},
	} {
		code, _, stderr := runCLI(t, append([]string{"operator", "gossip", "keyring", "-addr", addr}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
