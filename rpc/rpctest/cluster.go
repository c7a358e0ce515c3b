package rpctest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/rpc"
)

// Server is one real ledgerd server: a cluster.Node with its FSM and the
// public API on the node's RPC address.
type Server struct {
	Name    string
	Addr    string // API host:port
	Node    *cluster.Node
	FSM     *fsm.FSM
	http    *http.Server
	running bool
}

// Cluster is a real Raft cluster of Servers on loopback.
type Cluster struct {
	Servers []*Server
	t       testing.TB
}

func logger() *slog.Logger {
	if os.Getenv("LEDGERD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// NewCluster starts n servers that bootstrap together (n == 1: a dev
// node) with fast test timings and waits until every server agrees on a
// leader. api configures the API servers (Ledger and Cluster are filled in).
func NewCluster(t testing.TB, n int, api rpc.Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var first string
	for i := range n {
		var (
			cfg  cluster.Config
			f    *fsm.FSM
			ln   net.Listener
			node *cluster.Node
		)
		// Ports are reserved (see testnet), but an unrelated program may
		// still have bound one: then the node starts over on fresh ones.
		testnet.Start(t, 3, func(a []string) error {
			gossip, raftAddr, apiAddr := a[0], a[1], a[2]
			cfg = cluster.Config{
				NodeName:                fmt.Sprintf("n%d", i),
				DataDir:                 filepath.Join(t.TempDir(), "data"),
				RaftBind:                raftAddr,
				GossipBind:              gossip,
				RPCAdvertise:            apiAddr,
				BootstrapExpect:         n,
				Dev:                     n == 1,
				DeadServerGrace:         time.Minute,
				ForwardTimeout:          5 * time.Second,
				LeaderWait:              5 * time.Second,
				Stamp:                   fsm.Stamp,
				Tick:                    fsm.TickCommand,
				Logger:                  logger().With("node", i),
				HeartbeatTimeout:        200 * time.Millisecond,
				ElectionTimeout:         200 * time.Millisecond,
				LeaderLeaseTimeout:      100 * time.Millisecond,
				ReconcileInterval:       200 * time.Millisecond,
				ServerStabilizationTime: 400 * time.Millisecond,
			}
			if n == 1 {
				cfg.BootstrapExpect = 0
			}
			if i > 0 {
				cfg.RetryJoin = []string{first}
			} else {
				first = gossip
			}
			var err error
			if f, err = fsm.New(fsm.Config{}); err != nil {
				return err
			}
			if ln, err = net.Listen("tcp", apiAddr); err != nil {
				return err
			}
			if node, err = cluster.New(cfg, f); err != nil {
				ln.Close()
				return fmt.Errorf("node %d: %w", i, err)
			}
			return nil
		})
		apiAddr := cfg.RPCAdvertise
		o := api
		o.Ledger = &rpc.FSMLedger{R: node, FSM: f}
		o.Cluster = rpc.NodeCluster{Node: node}
		o.Ready = node.Ready
		o.LeaderHint = func() string {
			_, addr := node.Leader()
			return addr
		}
		if o.Logger == nil {
			o.Logger = logger()
		}
		srv, err := rpc.New(o)
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/internal/", node.Handler())
		srv.Mount(mux)
		hs := &http.Server{Handler: mux, Protocols: rpc.ServeProtocols(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		c.Servers = append(c.Servers, &Server{Name: cfg.NodeName, Addr: apiAddr, Node: node, FSM: f, http: hs, running: true})
	}
	t.Cleanup(c.Close)
	c.WaitLeader(15 * time.Second)
	return c
}

// Addrs returns the API addresses of every server.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr
	}
	return out
}

// WaitLeader waits until every running server names the same leader that
// is itself running, and returns it.
func (c *Cluster) WaitLeader(timeout time.Duration) *Server {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var leader string
		agree := true
		for _, s := range c.Servers {
			if !s.running {
				continue
			}
			id, _ := s.Node.Leader()
			if id == "" || (leader != "" && id != leader) {
				agree = false
				break
			}
			leader = id
		}
		if agree && leader != "" {
			for _, s := range c.Servers {
				if s.running && s.Node.ID() == leader && s.Node.Ready() {
					return s
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no agreed leader after %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts s down: its API closes at once, then the node shuts down.
func (c *Cluster) Stop(s *Server) {
	if !s.running {
		return
	}
	s.running = false
	_ = s.http.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Node.Shutdown(ctx)
}

// Close stops every server.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		c.Stop(s)
	}
}
