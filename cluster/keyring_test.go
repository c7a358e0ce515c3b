package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// joinWithKey reports whether a bare memberlist holding only key can join
// the gossip at addr. Its meta is not a server's, so nothing adds it to
// Raft.
func joinWithKey(t *testing.T, key []byte, addr string) error {
	t.Helper()
	mc := memberlist.DefaultLANConfig()
	mc.Name = fmt.Sprintf("probe-%d", time.Now().UnixNano())
	mc.BindAddr, mc.BindPort = "127.0.0.1", 0
	mc.SecretKey = key
	mc.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.Shutdown() }()
	_, err = ml.Join([]string{addr})
	return err
}

// TestGossipKeyRotation rotates the gossip key of a three-server cluster
// (install, use, remove) through a follower while writes keep being
// admitted; every server ends with the new key alone, persisted with mode
// 0600, a member holding only the old key can no longer join, and a
// server restarted with the old key in its configuration comes back with
// the persisted keyring.
func TestGossipKeyRotation(t *testing.T) {
	oldKey, newKey := []byte("0123456789abcdef"), []byte("fedcba9876543210fedcba98")
	oldB64, newB64 := base64.StdEncoding.EncodeToString(oldKey), base64.StdEncoding.EncodeToString(newKey)
	c := newCluster(t, 3, func(cfg *Config) { cfg.GossipKey = oldKey })
	c.waitVoters(3)
	l := c.leader()
	if err := joinWithKey(t, oldKey, l.gossipAddr); err != nil {
		t.Fatalf("a member with the cluster's key cannot join before the rotation: %v", err)
	}

	// Writes through every node, all along the rotation.
	var written, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, tn := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := tn.node.Apply(ctx, fmt.Appendf(nil, "rot%d-%d|x", i, k))
				cancel()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				written.Add(1)
			}
		}()
	}
	stopWrites := func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}
	t.Cleanup(stopWrites)
	progress := func(what string) {
		t.Helper()
		n := written.Load()
		waitFor(t, 10*time.Second, "writes admitted after "+what, func() bool { return written.Load() >= n+20 })
	}
	progress("the start")

	f := c.follower()
	for _, step := range []struct {
		op   KeyringOp
		key  string
		want []string // every server's keys afterwards, primary first
	}{
		{KeyringInstall, newB64, []string{oldB64, newB64}},
		{KeyringUse, newB64, []string{newB64, oldB64}},
		{KeyringRemove, oldB64, []string{newB64}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ms, err := f.node.GossipKeyring(ctx, step.op, step.key)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v (%+v)", step.op, err, ms)
		}
		if len(ms) != 3 {
			t.Fatalf("%s answered for %d servers, want 3: %+v", step.op, len(ms), ms)
		}
		for _, m := range ms {
			if !slices.Equal(m.Keys, step.want) {
				t.Fatalf("%s: server %s has keys %v, want %v", step.op, m.ID, m.Keys, step.want)
			}
		}
		progress(string(step.op))
	}
	ms, err := l.node.GossipKeyring(context.Background(), KeyringList, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !slices.Equal(m.Keys, []string{newB64}) {
			t.Fatalf("list: %s has %v", m.ID, m.Keys)
		}
	}
	stopWrites()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d writes failed during the rotation, first: %v", n, n+written.Load(), firstErr.Load())
	}
	t.Logf("%d writes admitted during the rotation, none failed", written.Load())

	if err := joinWithKey(t, oldKey, l.gossipAddr); err == nil {
		t.Fatal("a member with only the removed key joined")
	}
	if err := joinWithKey(t, newKey, l.gossipAddr); err != nil {
		t.Fatalf("a member with the new key cannot join: %v", err)
	}
	for _, tn := range c.nodes {
		path := filepath.Join(tn.dir, keyringFile)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", path, st.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		if err := json.Unmarshal(b, &keys); err != nil || !slices.Equal(keys, []string{newB64}) {
			t.Fatalf("%s = %s (%v), want only the new key", path, b, err)
		}
	}

	// A restart with the old gossip_key in its configuration: the
	// persisted keyring wins, so the server rejoins.
	c.crash(f)
	c.restart(f)
	c.waitVoters(3)
	apply(t, f, "after|restart")
	if got := readEntries(t, f); !slices.Contains(got, "restart") {
		t.Fatalf("restarted server does not see its write")
	}
}

// TestGossipKeyringRefusals: use of a key some server lacks and removal
// of the primary key change nothing; bad input names the problem.
func TestGossipKeyringRefusals(t *testing.T) {
	key := []byte("0123456789abcdef")
	c := newCluster(t, 3, func(cfg *Config) { cfg.GossipKey = key })
	c.waitVoters(3)
	l := c.leader()
	other := base64.StdEncoding.EncodeToString([]byte("another key of 32 bytes, exactly"))
	ctx := context.Background()
	for _, tc := range []struct {
		op  KeyringOp
		key string
	}{
		{KeyringUse, other},
		{KeyringRemove, base64.StdEncoding.EncodeToString(key)},
		{KeyringInstall, "not base64!"},
		{KeyringInstall, base64.StdEncoding.EncodeToString([]byte("short"))},
		{"rotate", other},
	} {
		if _, err := l.node.GossipKeyring(ctx, tc.op, tc.key); err == nil {
			t.Errorf("%s %q accepted", tc.op, tc.key)
		}
	}
	ms, err := l.node.GossipKeyring(ctx, KeyringList, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !slices.Equal(m.Keys, []string{base64.StdEncoding.EncodeToString(key)}) {
			t.Fatalf("%s has %v after refused operations", m.ID, m.Keys)
		}
	}
	// Without encryption there is no keyring.
	d := &tcluster{t: t}
	tn := d.add(0, func(cfg *Config) { cfg.Dev = true })
	d.start(tn)
	t.Cleanup(d.stopAll)
	d.leader()
	if _, err := tn.node.GossipKeyring(ctx, KeyringList, ""); err == nil {
		t.Fatal("keyring of an unencrypted cluster")
	}
}
