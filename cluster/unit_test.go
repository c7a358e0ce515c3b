package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestConfigValidationNamesTheField(t *testing.T) {
	good := Config{DataDir: "d", RaftBind: "127.0.0.1:1", GossipBind: "127.0.0.1:2", RPCAdvertise: "127.0.0.1:3"}
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"ok", func(*Config) {}, ""},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"no raft bind", func(c *Config) { c.RaftBind = "" }, "RaftBind"},
		{"bad raft bind", func(c *Config) { c.RaftBind = "nohost" }, "RaftBind"},
		{"no gossip bind", func(c *Config) { c.GossipBind = "" }, "GossipBind"},
		{"bad gossip port", func(c *Config) { c.GossipBind = "1.2.3.4:99999" }, "GossipBind"},
		{"no rpc", func(c *Config) { c.RPCAdvertise = "" }, "RPCAdvertise"},
		{"bad join", func(c *Config) { c.RetryJoin = []string{"127.0.0.1:1", "x"} }, "RetryJoin[1]"},
		{"negative expect", func(c *Config) { c.BootstrapExpect = -1 }, "BootstrapExpect"},
		{"dev with expect", func(c *Config) { c.Dev, c.BootstrapExpect = true, 3 }, "BootstrapExpect"},
		{"gossip key", func(c *Config) { c.GossipKey = []byte("short") }, "GossipKey"},
		{"negative grace", func(c *Config) { c.DeadServerGrace = -1 }, "DeadServerGrace"},
		{"negative quorum", func(c *Config) { c.MinQuorum = -2 }, "MinQuorum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.tweak(&c)
			got, err := c.withDefaults()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if got.LeaderWait == 0 || got.DeadServerGrace == 0 || got.Logger == nil || got.MinQuorum != 1 {
					t.Fatalf("defaults not filled: %+v", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
	c := good
	c.BootstrapExpect = 5
	if got, _ := c.withDefaults(); got.MinQuorum != 3 {
		t.Fatalf("MinQuorum default for expect 5 = %d, want 3", got.MinQuorum)
	}
}

func TestNodeIDPersistsAndWipeMakesNew(t *testing.T) {
	dir := t.TempDir()
	a, err := loadOrCreateNodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadOrCreateNodeID(dir)
	if err != nil || a != b {
		t.Fatalf("second load = %q, %v; want %q", b, err, a)
	}
	if err := os.Remove(filepath.Join(dir, nodeIDFile)); err != nil {
		t.Fatal(err)
	}
	c, err := loadOrCreateNodeID(dir)
	if err != nil || c == a {
		t.Fatalf("after wipe got %q (%v), want a new id", c, err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeIDFile), []byte("bad id!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateNodeID(dir); err == nil || !strings.Contains(err.Error(), "invalid node id") {
		t.Fatalf("corrupt id file: %v", err)
	}
}

func TestGossipMetaFitsAndRoundTrips(t *testing.T) {
	m := nodeMeta{ID: strings.Repeat("a", 36), Name: "head-1", Raft: "10.0.0.1:7421", RPC: "10.0.0.1:7420", Expect: 3, Version: Version}
	b, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
	m.Name = strings.Repeat("x", 600)
	if _, err := m.encode(); err == nil || !strings.Contains(err.Error(), "512") {
		t.Fatalf("oversized meta: %v", err)
	}
	for _, bad := range []string{"", "{}", `{"id":"x"}`, "not json"} {
		if _, err := decodeMeta([]byte(bad)); err == nil {
			t.Errorf("decodeMeta(%q) accepted", bad)
		}
	}
}

// FuzzDecodeMeta: a peer's gossip meta, whatever its bytes, decodes to a
// meta with an ID and a Raft address or to an error; a decoded meta
// encodes (when it fits memberlist's limit) and decodes again to itself,
// so what one server gossips every other reads as sent.
func FuzzDecodeMeta(f *testing.F) {
	f.Add([]byte(`{"id":"n1","r":"10.0.0.1:7421","h":"10.0.0.1:7420","v":"1.2","ev":2,"l":true,"in":true}`))
	f.Add([]byte(`{"id":"n1","r":"x","e":-3,"ev":4294967295,"unknown":[1,2]}`))
	f.Add([]byte(`{"id":"\u0000","r":"\ud800"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		if m.ID == "" || m.Raft == "" {
			t.Fatalf("decodeMeta(%q) = %+v without an ID or a Raft address", b, m)
		}
		enc, err := m.encode()
		if err != nil {
			return // over memberlist's limit: encode refuses it, as it should
		}
		again, err := decodeMeta(enc)
		if err != nil || again != m {
			t.Fatalf("decodeMeta(%q) = %+v; encoded %q, decoded again %+v, %v", b, m, enc, again, err)
		}
	})
}

func TestRaftLogsRoutedAtInfo(t *testing.T) {
	var buf bytes.Buffer
	l := newHclog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "raft")
	l.Debug("chatty")
	l.Info("elected", "term", 3)
	l.Named("sub").Warn("slow")
	out := buf.String()
	if strings.Contains(out, "chatty") {
		t.Errorf("debug line leaked at INFO: %s", out)
	}
	if !strings.Contains(out, "elected") || !strings.Contains(out, "term=3") || !strings.Contains(out, "component=raft.sub") {
		t.Errorf("missing lines: %s", out)
	}
	if l.GetLevel() != hclog.Info {
		t.Errorf("level %v", l.GetLevel())
	}
	buf.Reset()
	w := &levelPrefixWriter{l: slog.New(slog.NewTextHandler(&buf, nil)), component: "memberlist", min: slog.LevelInfo}
	_, _ = w.Write([]byte("[DEBUG] memberlist: probe\n[WARN] memberlist: suspect x\n"))
	if out := buf.String(); strings.Contains(out, "probe") || !strings.Contains(out, "level=WARN") {
		t.Errorf("memberlist lines: %s", out)
	}
}

// encodedStub is an FSM response that carries its encoding.
type encodedStub struct{ b []byte }

func (s *encodedStub) EncodedResult() []byte { return s.b }

// TestResponseEncoded checks that an EncodedResponse reaches the local
// caller as Value with its bytes as Data, and that plain bytes and
// errors keep their meaning.
func TestResponseEncoded(t *testing.T) {
	stub := &encodedStub{b: []byte("ok")}
	if r := response(stub); string(r.Data) != "ok" || r.Value != any(stub) || r.Err != nil {
		t.Fatalf("response(EncodedResponse) = %+v", r)
	}
	if r := response([]byte("raw")); string(r.Data) != "raw" || r.Value != nil || r.Err != nil {
		t.Fatalf("response([]byte) = %+v", r)
	}
	var ae *ApplyError
	if r := response(errors.New("no")); !errors.As(r.Err, &ae) || r.Value != nil {
		t.Fatalf("response(error) = %+v", r)
	}
	if r := response(42); r.Err == nil {
		t.Fatal("response(int) has no error")
	}
}
