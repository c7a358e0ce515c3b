package agenttest

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent"
	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/rpc"
)

// Server is one real ledgerd server assembled by agent.New: a cluster.Node
// with its FSM, the ledger, and the public API on the node's RPC address.
type Server struct {
	Name    string
	Addr    string // API host:port
	Agent   *agent.Agent
	Node    *cluster.Node
	FSM     *fsm.FSM
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

// fastTimings shortens elections, membership and forwarding for tests.
func fastTimings(c *cluster.Config) {
	c.DeadServerGrace = time.Minute
	c.ForwardTimeout = 5 * time.Second
	c.LeaderWait = 5 * time.Second
	c.HeartbeatTimeout = 200 * time.Millisecond
	c.ElectionTimeout = 200 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.ReconcileInterval = 200 * time.Millisecond
	c.ServerStabilizationTime = 400 * time.Millisecond
}

// NewCluster starts n servers that bootstrap together (n == 1: a dev
// node) with fast test timings and waits until every server agrees on a
// leader. api configures the API servers (Ledger, Cluster, Ready and
// LeaderHint are filled in by the agent).
func NewCluster(t testing.TB, n int, api rpc.Options) *Cluster {
	t.Helper()
	return NewClusterWith(t, n, api, nil)
}

// NewClusterWith is NewCluster with a hook that adjusts each server's
// configuration (e.g. its slurm_bridge role) before it is assembled.
func NewClusterWith(t testing.TB, n int, api rpc.Options, configure func(i int, cfg *agent.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var first string
	for i := range n {
		var a *agent.Agent
		name := fmt.Sprintf("n%d", i)
		// Ports are reserved (see testnet), but an unrelated program may
		// still have bound one: then the node starts over on fresh ones.
		testnet.Start(t, 3, func(addrs []string) error {
			gossip, raftAddr, apiAddr := addrs[0], addrs[1], addrs[2]
			cfg := agent.DefaultConfig()
			cfg.NodeName = name
			cfg.DataDir = filepath.Join(t.TempDir(), "data")
			cfg.HTTPAddr, cfg.RaftAddr, cfg.GossipAddr = apiAddr, raftAddr, gossip
			cfg.BootstrapExpect = n
			if n == 1 {
				cfg.BootstrapExpect = 0
			}
			if i > 0 {
				cfg.RetryJoin = []string{first}
			}
			if configure != nil {
				configure(i, &cfg)
			}
			log := logger().With("node", i)
			var err error
			a, err = agent.New(cfg, agent.Options{
				Logger: log,
				Cluster: func(cc *cluster.Config) {
					fastTimings(cc)
					cc.Dev = n == 1
				},
				API: func(o *rpc.Options) {
					ledger, cl, ready, hint := o.Ledger, o.Cluster, o.Ready, o.LeaderHint
					*o = api
					o.Ledger, o.Cluster, o.Ready, o.LeaderHint = ledger, cl, ready, hint
					if o.Logger == nil {
						o.Logger = log
					}
				},
			})
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			if i == 0 {
				first = gossip
			}
			return nil
		})
		a.Start()
		c.Servers = append(c.Servers, &Server{Name: name, Addr: a.Addr(), Agent: a, Node: a.Node(), FSM: a.FSM(), running: true})
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
	s.Agent.Close()
}

// Close stops every server.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		c.Stop(s)
	}
}
