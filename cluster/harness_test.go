package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testwait"
)

// tnode is one server of a test cluster, with its own HTTP server for the
// internal endpoints and fixed loopback ports so it can be restarted.
type tnode struct {
	name                 string
	dir                  string
	raftAddr, gossipAddr string
	rpcAddr              string
	fsm                  *kvFSM
	node                 *Node
	srv                  *http.Server
	expect               int
	join                 []string
	tweak                func(*Config)
	wrap                 func(*kvFSM) raft.FSM // if set, the FSM New gets is wrap(fsm)
	running              bool
	started              bool // has run before: its addresses are known to peers
	// intercept, when set, serves the internal endpoints in place of the
	// node's handler, which it gets; tests use it to stall a leader's
	// answers.
	intercept atomic.Pointer[func(w http.ResponseWriter, r *http.Request, next http.Handler)]
}

type tcluster struct {
	t     testing.TB
	nodes []*tnode
}

func testLogger() *slog.Logger {
	if os.Getenv("LEDGERD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newCluster starts n servers that bootstrap together with
// BootstrapExpect n, each joining the first one's gossip address.
func newCluster(t testing.TB, n int, tweak func(*Config)) *tcluster {
	t.Helper()
	c := &tcluster{t: t}
	for i := 0; i < n; i++ {
		c.add(n, tweak)
	}
	for _, tn := range c.nodes {
		c.start(tn)
	}
	t.Cleanup(c.stopAll)
	return c
}

// add creates (without starting) a server expecting `expect` peers.
func (c *tcluster) add(expect int, tweak func(*Config)) *tnode {
	tn := &tnode{
		name:   fmt.Sprintf("n%d", len(c.nodes)),
		dir:    filepath.Join(c.t.TempDir(), "data"),
		fsm:    newKVFSM(),
		expect: expect,
		tweak:  tweak,
	}
	tn.setAddrs(testnet.Addrs(c.t, 3))
	// Like a real deployment, every server lists the others to join; the
	// first node's list is filled in as the others are added.
	for _, o := range c.nodes {
		tn.join = append(tn.join, o.gossipAddr)
		o.join = append(o.join, tn.gossipAddr)
	}
	c.nodes = append(c.nodes, tn)
	return tn
}

func testConfig(tn *tnode) Config {
	cfg := Config{
		NodeName:                tn.name,
		DataDir:                 tn.dir,
		RaftBind:                tn.raftAddr,
		GossipBind:              tn.gossipAddr,
		RPCAdvertise:            tn.rpcAddr,
		RetryJoin:               tn.join,
		BootstrapExpect:         tn.expect,
		DeadServerGrace:         time.Second,
		ForwardTimeout:          5 * time.Second,
		LeaderWait:              5 * time.Second,
		Stamp:                   testStamp,
		Logger:                  testLogger().With("t", tn.name),
		HeartbeatTimeout:        400 * time.Millisecond,
		ElectionTimeout:         400 * time.Millisecond,
		LeaderLeaseTimeout:      300 * time.Millisecond,
		ReconcileInterval:       200 * time.Millisecond,
		ServerStabilizationTime: 400 * time.Millisecond,
	}
	cfg.LogStore = os.Getenv("LEDGERD_TEST_LOG_STORE") // the whole suite on one store: LEDGERD_TEST_LOG_STORE=wal
	if tn.tweak != nil {
		tn.tweak(&cfg)
	}
	return cfg
}

// logStores are the log store kinds the key restart, crash and snapshot
// tests run over.
var logStores = []string{LogStoreBoltDB, LogStoreWAL}

// forEachLogStore runs test once per log store kind, as a subtest named
// after it; store sets the kind in a node's Config.
func forEachLogStore(t *testing.T, test func(t *testing.T, store func(*Config))) {
	for _, kind := range logStores {
		t.Run(kind, func(t *testing.T) {
			test(t, func(cfg *Config) { cfg.LogStore = kind })
		})
	}
}

// chain applies the non-nil config tweaks in order.
func chain(tweaks ...func(*Config)) func(*Config) {
	return func(cfg *Config) {
		for _, f := range tweaks {
			if f != nil {
				f(cfg)
			}
		}
	}
}

func (tn *tnode) setAddrs(a []string) { tn.raftAddr, tn.gossipAddr, tn.rpcAddr = a[0], a[1], a[2] }

// moveAddrs gives tn, which has never run, fresh addresses, and points the
// other nodes' join lists at its new gossip address.
func (c *tcluster) moveAddrs(tn *tnode) {
	old := tn.gossipAddr
	tn.setAddrs(testnet.Addrs(c.t, 3))
	for _, o := range c.nodes {
		for i, j := range o.join {
			if j == old {
				o.join[i] = tn.gossipAddr
			}
		}
	}
}

// start starts tn. Its ports are reserved (see testnet), but an unrelated
// program may still have bound one: a node that never ran moves to fresh
// ports; a restarting node must keep its addresses (its peers know them),
// so it retries them for a few seconds, in case whoever held a port lets
// go.
func (c *tcluster) start(tn *tnode) {
	c.t.Helper()
	var ln net.Listener
	var node *Node
	var err error
	var cfg Config
	deadline := time.Now().Add(10 * time.Second)
	for attempt := 1; ; attempt++ {
		cfg = testConfig(tn)
		ln, err = net.Listen("tcp", tn.rpcAddr)
		if err == nil {
			var f raft.FSM = tn.fsm
			if tn.wrap != nil {
				f = tn.wrap(tn.fsm)
			}
			node, err = New(cfg, f)
			if err != nil {
				ln.Close()
			}
		}
		if err == nil {
			break
		}
		switch {
		case !testnet.InUse(err):
			c.t.Fatalf("%s: start: %v", tn.name, err)
		case !tn.started && attempt < testnet.Attempts:
			c.t.Logf("%s: start: %v; moving to fresh ports", tn.name, err)
			c.moveAddrs(tn)
		case tn.started && time.Now().Before(deadline):
			time.Sleep(100 * time.Millisecond)
		default:
			c.t.Fatalf("%s: start after %d attempts: %v", tn.name, attempt, err)
		}
	}
	mux := http.NewServeMux()
	inner := node.Handler()
	mux.Handle("/internal/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := tn.intercept.Load(); f != nil {
			(*f)(w, r, inner)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	tn.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if cfg.RPCTLS != nil {
		// The node's TLS config doubles as the server side: same
		// certificate, and peers must present one signed by the CA.
		tn.srv.TLSConfig = cfg.RPCTLS.Clone()
		go func() { _ = tn.srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { _ = tn.srv.Serve(ln) }()
	}
	tn.node, tn.running, tn.started = node, true, true
}

// crash stops tn without leaving gossip or handing over leadership.
func (c *tcluster) crash(tn *tnode) {
	c.t.Helper()
	if !tn.running {
		return
	}
	tn.running = false
	_ = tn.srv.Close()
	if err := tn.node.stop(); err != nil {
		c.t.Logf("%s: stop: %v", tn.name, err)
	}
}

// shutdown stops tn gracefully.
func (c *tcluster) shutdown(tn *tnode) {
	c.t.Helper()
	if !tn.running {
		return
	}
	tn.running = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tn.node.Shutdown(ctx); err != nil {
		c.t.Errorf("%s: shutdown: %v", tn.name, err)
	}
	_ = tn.srv.Close()
}

// restart starts tn again on the same data and addresses with a fresh FSM
// (the state must come back from snapshot + log).
func (c *tcluster) restart(tn *tnode) {
	c.t.Helper()
	tn.fsm = newKVFSM()
	c.start(tn)
}

func (c *tcluster) stopAll() {
	for _, tn := range c.nodes {
		c.crash(tn)
	}
}

func (c *tcluster) running() []*tnode {
	var out []*tnode
	for _, tn := range c.nodes {
		if tn.running {
			out = append(out, tn)
		}
	}
	return out
}

// soloServer starts a one-server cluster whose node elects itself at once
// (its 20 s heartbeat timeout never matters) and takes no snapshot of
// raft's own (threshold and interval out of reach), tweaked further by
// tweak; it waits until the node leads.
func soloServer(t *testing.T, tweak func(*Config)) (*tcluster, *tnode) {
	t.Helper()
	c := &tcluster{t: t}
	tn := c.add(1, chain(func(cfg *Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = 20*time.Second, 20*time.Second
		cfg.SnapshotThreshold, cfg.SnapshotInterval = 1<<40, time.Hour
	}, tweak))
	t.Cleanup(c.stopAll)
	c.start(tn)
	waitFor(t, 5*time.Second, "the bootstrapped server to elect itself", tn.node.IsLeader)
	return c, tn
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, timeout, what, cond)
}

// leader waits until every running node agrees on one leader and returns it.
func (c *tcluster) leader() *tnode {
	c.t.Helper()
	var l *tnode
	waitFor(c.t, 20*time.Second, "a leader all running nodes agree on", func() bool {
		l = nil
		for _, tn := range c.running() {
			if tn.node.IsLeader() {
				if l != nil {
					return false
				}
				l = tn
			}
		}
		if l == nil {
			return false
		}
		for _, tn := range c.running() {
			if id, rpc := tn.node.Leader(); id != l.node.ID() || rpc == "" {
				return false
			}
		}
		return true
	})
	return l
}

func (c *tcluster) follower() *tnode {
	l := c.leader()
	for _, tn := range c.running() {
		if tn != l {
			return tn
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// voters returns the voter IDs in the leader's configuration.
func (c *tcluster) config(l *tnode) map[string]raft.ServerSuffrage {
	c.t.Helper()
	fut := l.node.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		c.t.Fatalf("get configuration: %v", err)
	}
	out := map[string]raft.ServerSuffrage{}
	for _, s := range fut.Configuration().Servers {
		out[string(s.ID)] = s.Suffrage
	}
	return out
}

func (c *tcluster) waitVoters(n int) {
	c.t.Helper()
	waitFor(c.t, 30*time.Second, fmt.Sprintf("%d voters", n), func() bool {
		l := c.leader()
		v := 0
		conf := c.config(l)
		for _, s := range conf {
			if s == raft.Voter {
				v++
			}
		}
		return v == n && len(conf) == n
	})
}

// apply writes cmd through tn, retrying retryable failures the way a
// client does: with the same request ID, which the test FSM deduplicates.
func apply(t testing.TB, tn *tnode, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		res, err := tn.node.Apply(ctx, []byte(cmd))
		if err == nil {
			return string(res)
		}
		if !isRetryable(err) || ctx.Err() != nil {
			t.Fatalf("%s: apply %q: %v", tn.name, cmd, err)
		}
		t.Logf("%s: apply %q: retrying after %v", tn.name, cmd, err)
	}
}

// readEntries does a linearizable read on tn.
func readEntries(t testing.TB, tn *tnode) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tn.node.ReadBarrier(ctx); err != nil {
		t.Fatalf("%s: read barrier: %v", tn.name, err)
	}
	return tn.fsm.entries()
}

func isRetryable(err error) bool {
	return errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrNoLeader) ||
		errors.Is(err, ErrNotLeader) || errors.Is(err, context.DeadlineExceeded)
}

// TestHarnessStartsOffTakenPorts: when something else binds one of a new
// node's ports between reservation and start, the node comes up on fresh
// ones and the other nodes' join lists follow its gossip address.
func TestHarnessStartsOffTakenPorts(t *testing.T) {
	for _, port := range []string{"raft", "gossip", "rpc"} {
		t.Run(port, func(t *testing.T) {
			c := &tcluster{t: t}
			tn := c.add(0, func(cfg *Config) { cfg.Dev = true })
			other := c.add(0, nil) // never started: only its join list matters
			taken := map[string]string{"raft": tn.raftAddr, "gossip": tn.gossipAddr, "rpc": tn.rpcAddr}[port]
			ln, err := net.Listen("tcp", taken)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c.start(tn)
			t.Cleanup(c.stopAll)
			c.leader()
			if slices.Contains([]string{tn.raftAddr, tn.gossipAddr, tn.rpcAddr}, taken) {
				t.Fatalf("node runs on the taken address %s", taken)
			}
			if !slices.Equal(other.join, []string{tn.gossipAddr}) {
				t.Fatalf("other node joins %v, want the moved gossip address %s", other.join, tn.gossipAddr)
			}
		})
	}
}
