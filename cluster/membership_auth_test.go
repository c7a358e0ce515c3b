package cluster

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testpki"
)

// metaDelegate announces a fixed gossip meta: a bare memberlist that
// pretends to be a ledgerd server.
type metaDelegate struct{ meta []byte }

func (d metaDelegate) NodeMeta(int) []byte           { return d.meta }
func (metaDelegate) NotifyMsg([]byte)                {}
func (metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (metaDelegate) LocalState(bool) []byte          { return nil }
func (metaDelegate) MergeRemoteState([]byte, bool)   {}

// startStranger joins the cluster's gossip at join with key and meta m,
// as a bare memberlist (no Raft, no node).
func startStranger(t *testing.T, key []byte, m nodeMeta, join string) *memberlist.Memberlist {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = m.ID
	mc.BindAddr, mc.BindPort = "127.0.0.1", 0
	mc.SecretKey = key
	mc.Delegate = metaDelegate{meta: b}
	mc.Logger = log.New(io.Discard, "", 0)
	mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval = 250*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	if _, err := ml.Join([]string{join}); err != nil {
		t.Fatalf("stranger %s: join: %v", m.ID, err)
	}
	return ml
}

// fakeStatus serves /internal/status over plain HTTP, answering st: a
// stranger that knows the protocol but holds no server certificate.
func fakeStatus(t *testing.T, st status) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(st)
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestOnlyProvenServersJoinRaft: with TLS on the internal endpoints, gossip
// members that hold the gossip key but cannot prove they are servers of
// the cluster — a forged meta whose API has no server certificate, a meta
// that borrows a real server's API, one that claims a live server's Raft
// address — are never added to Raft, over many reconcile rounds, and are
// counted as refused; a real server with a certificate joins as before.
func TestOnlyProvenServersJoinRaft(t *testing.T) {
	ca := testpki.NewCA(t, "ledgerd test CA")
	key := []byte("0123456789abcdef")
	tweak := func(cfg *Config) {
		cfg.GossipKey = key
		cfg.RaftTLS = serverTLS(t, ca, cfg.NodeName)
		cfg.RPCTLS = serverTLS(t, ca, cfg.NodeName)
	}
	c := newCluster(t, 3, tweak)
	c.waitVoters(3)
	l, f := c.leader(), c.follower()
	free := testnet.Addrs(t, 2)
	strangers := []nodeMeta{
		// Its own API, answering the right things, but over plain HTTP
		// and without a server certificate.
		{ID: "stranger-own-api", Raft: free[0], RPC: fakeStatus(t, status{ID: "stranger-own-api", RaftAddr: free[0]})},
		// A real server's API: that server answers with its own ID.
		{ID: "stranger-borrowed-api", Raft: free[1], RPC: f.rpcAddr},
		// The Raft address of a live server.
		{ID: "stranger-taken-addr", Raft: f.raftAddr, RPC: f.rpcAddr},
	}
	for _, m := range strangers {
		m.Version, m.Expect = Version, 3
		startStranger(t, key, m, l.gossipAddr)
	}
	waitFor(t, 20*time.Second, "the leader to see every stranger in gossip", func() bool {
		peers := l.node.gossip.snapshot()
		for _, m := range strangers {
			if p, ok := peers[m.ID]; !ok || p.status != statusAlive {
				return false
			}
		}
		return true
	})
	r0, refused0 := l.node.reconcileRounds.Load(), l.node.refusedJoins.Load()
	waitFor(t, 20*time.Second, "ten reconcile rounds on the leader", func() bool {
		return l.node.reconcileRounds.Load() >= r0+10
	})
	conf := c.config(l)
	for _, m := range strangers {
		if _, ok := conf[m.ID]; ok {
			t.Fatalf("stranger %s is in the Raft configuration %v", m.ID, conf)
		}
	}
	if len(conf) != 3 {
		t.Fatalf("configuration changed: %v", conf)
	}
	if _, ok := conf[f.node.ID()]; !ok {
		t.Fatalf("the server whose address was claimed was replaced: %v", conf)
	}
	// The round under way when r0 was read may have refused some
	// strangers before refused0 was read: nine full rounds at least.
	if got := l.node.refusedJoins.Load() - refused0; got < 3*9 {
		t.Fatalf("%d refusals over ten rounds, want one per stranger and full round (>= 27)", got)
	}
	t.Logf("ten rounds: %d refusals", l.node.refusedJoins.Load()-refused0)

	// A real server with a certificate still joins.
	newcomer := c.add(0, tweak)
	c.start(newcomer)
	c.waitVoters(4)
}

func TestCheckProof(t *testing.T) {
	m := nodeMeta{ID: "a", Raft: "10.0.0.1:7421", RPC: "10.0.0.1:7420"}
	for _, tc := range []struct {
		name string
		st   status
		ok   bool
	}{
		{"matches", status{ID: "a", RaftAddr: "10.0.0.1:7421"}, true},
		{"other id", status{ID: "b", RaftAddr: "10.0.0.1:7421"}, false},
		{"other raft address", status{ID: "a", RaftAddr: "10.0.0.2:7421"}, false},
		{"no raft address (older release)", status{ID: "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkProof(m, tc.st); (err == nil) != tc.ok {
				t.Fatalf("checkProof = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestGossipIgnoresMetaUnderAnotherName: a member whose meta names an ID
// other than its memberlist name cannot overwrite that server's entry.
func TestGossipIgnoresMetaUnderAnotherName(t *testing.T) {
	g := &gossip{kick: make(chan struct{}, 1), peers: map[string]*peer{}}
	real := nodeMeta{ID: "a", Raft: "10.0.0.1:1", RPC: "10.0.0.1:2"}
	forged := nodeMeta{ID: "a", Raft: "10.0.0.9:1", RPC: "10.0.0.9:2"}
	for _, x := range []struct {
		name string
		m    nodeMeta
	}{{"a", real}, {"mallory", forged}} {
		b, err := x.m.encode()
		if err != nil {
			t.Fatal(err)
		}
		g.NotifyJoin(&memberlist.Node{Name: x.name, Meta: b})
	}
	if got := g.snapshot()["a"].meta; got != real {
		t.Fatalf("entry of a = %+v, want the real server's %+v", got, real)
	}
	if len(g.snapshot()) != 1 {
		t.Fatalf("view %v", g.snapshot())
	}
}
