package main

import (
	"slices"
	"strings"
	"testing"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// TestOperatorRaft lists the peers of a running dev agent, checks that
// recover refuses a running server's data, then recovers the stopped
// server's data and reports what it holds.
func TestOperatorRaft(t *testing.T) {
	dataDir := t.TempDir()
	s, _, stop := runDevAgent(t, "-data-dir", dataDir)
	id, raftAddr := s.Node().ID(), s.Node().RaftAddr()

	code, stdout, stderr := runCLI(t, "operator", "raft", "list-peers", "-addr", s.Addr())
	if code != exitOK {
		t.Fatalf("list-peers: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NODE ID") {
		t.Fatalf("list-peers table:\n%s", stdout)
	}
	if got, want := strings.Fields(lines[1]), []string{id, raftAddr, "alive", "true", "true"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("list-peers row = %q, want %q", got, want)
	}

	addr := s.Addr()
	code, _, stderr = runCLI(t, "operator", "raft", "remove-peer", "-addr", addr, id)
	if code != exitError || !strings.Contains(stderr, "failed_precondition") || !strings.Contains(stderr, "transfer leadership first") {
		t.Fatalf("remove-peer of the leader: exit %d: %s", code, stderr)
	}
	// An ID the configuration does not hold is refused, naming the
	// servers, instead of being "removed" (raft takes it as a no-op).
	code, _, stderr = runCLI(t, "operator", "raft", "remove-peer", "-addr", addr, "no-such-server")
	if code != exitError || !strings.Contains(stderr, "not_found") || !strings.Contains(stderr, `"no-such-server" (the servers are `+id+")") {
		t.Fatalf("remove-peer of an unknown ID: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "operator", "raft", "transfer-leader", "-addr", addr)
	if code != exitError || !strings.Contains(stderr, "failed_precondition") || !strings.Contains(stderr, "the leader is the only voter") || strings.Contains(stderr, "giving up after") {
		t.Fatalf("transfer-leader with no other voter: exit %d: %s; want a failed precondition at once, not retries", code, stderr)
	}
	if code, _, _ = runCLI(t, "operator", "raft", "remove-peer", "-addr", addr); code != exitUsage {
		t.Fatalf("remove-peer without an ID: exit %d, want %d", code, exitUsage)
	}

	code, _, stderr = runCLI(t, "operator", "raft", "recover", "-data-dir", dataDir, "-raft-addr", "127.0.0.1:7421")
	if code != exitError || !strings.Contains(stderr, "stop the agent first") {
		t.Fatalf("recover of a running server: exit %d: %s", code, stderr)
	}

	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	code, stdout, stderr = runCLI(t, "operator", "raft", "recover", "-data-dir", dataDir, "-raft-addr", "127.0.0.1:7421")
	if code != exitOK {
		t.Fatalf("recover: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"recovered " + id + " at 127.0.0.1:7421", "resources: 3", id + " (" + raftAddr + ")"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("recover output lacks %q:\n%s", want, stdout)
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"operator"}, exitUsage},
		{[]string{"operator", "raft", "bogus"}, exitUsage},
		{[]string{"operator", "raft", "recover", "-raft-addr", "127.0.0.1:7421"}, exitUsage},
		{[]string{"operator", "raft", "recover", "-data-dir", t.TempDir(), "-raft-addr", "127.0.0.1:7421"}, exitError},
	} {
		if code, _, _ := runCLI(t, c.args...); code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		}
	}
}

func TestPeerRows(t *testing.T) {
	ms := []*ledgerdv1.Member{
		{Id: "a", RaftAddress: "10.0.0.1:7421", Role: ledgerdv1.Role_ROLE_LEADER, Status: "alive"},
		{Id: "b", RaftAddress: "10.0.0.2:7421", Role: ledgerdv1.Role_ROLE_FOLLOWER, Status: "failed"},
		{Id: "c", RaftAddress: "10.0.0.3:7421", Role: ledgerdv1.Role_ROLE_NONVOTER, Status: "alive"},
		{Id: "d", RaftAddress: "10.0.0.4:7421", Role: ledgerdv1.Role_ROLE_UNSPECIFIED},
	}
	want := []peerRow{
		{"a", "10.0.0.1:7421", "alive", true, true},
		{"b", "10.0.0.2:7421", "failed", true, false},
		{"c", "10.0.0.3:7421", "alive", false, false},
		{"d", "10.0.0.4:7421", "unknown", false, false},
	}
	if got := peerRows(ms); !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %+v\nwant %+v", got, want)
	}
}
