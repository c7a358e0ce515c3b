package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

func TestRecoverConfig(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(cfgFile, []byte(`{"data_dir": "/var/lib/ledgerd", "raft_addr": "0.0.0.0:7421", "raft_advertise": "10.0.0.1:7421", "idempotency_max_keys": 1000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bindOnly := filepath.Join(dir, "bind.json")
	if err := os.WriteFile(bindOnly, []byte(`{"data_dir": "/d", "raft_addr": "0.0.0.0:7421"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                   string
		file, dataDir, raft    string
		wantDir, wantRaft, err string
		wantMaxKeys            int
	}{
		{name: "config file", file: cfgFile, wantDir: "/var/lib/ledgerd", wantRaft: "10.0.0.1:7421", wantMaxKeys: 1000},
		{name: "flags win", file: cfgFile, dataDir: "/other", raft: "10.0.0.9:7421", wantDir: "/other", wantRaft: "10.0.0.9:7421", wantMaxKeys: 1000},
		{name: "flags only", dataDir: "/d", raft: "node1:7421", wantDir: "/d", wantRaft: "node1:7421"},
		{name: "no data dir", raft: "10.0.0.1:7421", err: "-data-dir"},
		{name: "no port", dataDir: "/d", raft: "10.0.0.1", err: "-raft-addr"},
		{name: "unspecified bind address", file: bindOnly, err: "not an address peers can dial"},
		{name: "missing file", file: filepath.Join(dir, "nope.json"), err: "nope.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc, fc, err := recoverConfig(c.file, c.dataDir, c.raft)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rc.DataDir != c.wantDir || rc.RaftAddr != c.wantRaft || fc.IdempotencyMaxKeys != c.wantMaxKeys {
				t.Fatalf("got %q %q %d keys, want %q %q %d", rc.DataDir, rc.RaftAddr, fc.IdempotencyMaxKeys, c.wantDir, c.wantRaft, c.wantMaxKeys)
			}
		})
	}
}

// TestOperatorRaft lists the peers of a running dev agent, checks that
// recover refuses a running server's data, then recovers the stopped
// server's data and reports what it holds.
func TestOperatorRaft(t *testing.T) {
	dataDir := t.TempDir()
	cfg, opts, err := parseAgentArgs([]string{"-dev", "-http-addr", "127.0.0.1:0", "-data-dir", dataDir, "-log-level", "error"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	s := newServer(cfg, opts, cfg.newLogger(io.Discard))
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, out) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "is ready") {
		if time.Now().After(deadline) {
			t.Fatal("dev agent not ready within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	id, raftAddr := s.node.ID(), s.node.RaftAddr()

	code, stdout, stderr := runCLI(t, "operator", "raft", "list-peers", "-addr", s.httpLn.Addr().String())
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

	addr := s.httpLn.Addr().String()
	code, _, stderr = runCLI(t, "operator", "raft", "remove-peer", "-addr", addr, id)
	if code != exitError || !strings.Contains(stderr, "transfer leadership first") {
		t.Fatalf("remove-peer of the leader: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "operator", "raft", "transfer-leader", "-addr", addr)
	if code != exitError {
		t.Fatalf("transfer-leader with no other voter: exit %d: %s", code, stderr)
	}
	if code, _, _ = runCLI(t, "operator", "raft", "remove-peer", "-addr", addr); code != exitUsage {
		t.Fatalf("remove-peer without an ID: exit %d, want %d", code, exitUsage)
	}

	code, _, stderr = runCLI(t, "operator", "raft", "recover", "-data-dir", dataDir, "-raft-addr", "127.0.0.1:7421")
	if code != exitError || !strings.Contains(stderr, "stop the agent first") {
		t.Fatalf("recover of a running server: exit %d: %s", code, stderr)
	}

	cancel()
	if err := <-done; err != nil {
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
