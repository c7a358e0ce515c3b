package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			p, err := PlanRecovery(c.file, c.dataDir, c.raft)
			rc, fc := p.cluster, p.fsm
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
