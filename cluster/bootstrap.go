package cluster

import (
	"errors"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// joinLoop joins the RetryJoin addresses, retrying with capped exponential
// backoff until at least one answers.
func (n *Node) joinLoop() {
	if len(n.cfg.RetryJoin) == 0 {
		return
	}
	backoff := 200 * time.Millisecond
	for {
		joined, err := n.gossip.ml.Join(n.cfg.RetryJoin)
		if joined > 0 {
			n.log.Info("joined gossip", "contacted", joined)
			return
		}
		n.joinFailures.Add(1)
		n.log.Warn("gossip join failed; retrying", "addrs", n.cfg.RetryJoin, "err", err, "in", backoff)
		if !n.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// bootstrapLoop bootstraps a brand-new cluster: at once in Dev mode, or
// once BootstrapExpect servers with the same expectation are alive in
// gossip and none of them has Raft state or knows a leader.
func (n *Node) bootstrapLoop() {
	if n.hadState {
		return
	}
	if n.cfg.Dev || n.cfg.BootstrapExpect == 1 {
		n.bootstrap([]raft.Server{{ID: raft.ServerID(n.id), Address: n.trans.LocalAddr()}})
		return
	}
	if n.cfg.BootstrapExpect == 0 {
		return
	}
	for n.sleep(200 * time.Millisecond) {
		if id, _ := n.Leader(); id != "" {
			return // joined an existing cluster
		}
		peers := n.gossip.snapshot()
		var servers []raft.Server
		for _, p := range peers {
			if p.status == statusAlive && p.meta.Expect == n.cfg.BootstrapExpect {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.meta.ID), Address: raft.ServerAddress(p.meta.Raft)})
			}
		}
		if len(servers) < n.cfg.BootstrapExpect {
			continue
		}
		abort := false
		proven := servers[:0]
		for _, s := range servers {
			if string(s.ID) == n.id {
				proven = append(proven, s)
				continue
			}
			m := peers[string(s.ID)].meta
			st, err := n.fetchStatus(n.ctx, m.RPC)
			if err != nil {
				n.log.Info("bootstrap: peer status unavailable; waiting", "peer", s.ID, "err", err)
				abort = true
				break
			}
			// With TLS on the internal endpoints, only members that
			// prove they are servers of this cluster (as reconcile
			// asks) may enter the first configuration.
			if n.cfg.RPCTLS != nil {
				if err := checkProof(m, st); err != nil {
					n.refuse(m, err.Error())
					continue
				}
			}
			if st.HasState || st.LeaderID != "" {
				n.log.Info("bootstrap: a peer already has raft state; joining instead", "peer", s.ID)
				return
			}
			proven = append(proven, s)
		}
		if abort || len(proven) < n.cfg.BootstrapExpect {
			continue
		}
		servers = proven
		sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
		n.bootstrap(servers)
		return
	}
}

func (n *Node) bootstrap(servers []raft.Server) {
	err := n.waitFuture(n.ctx, "bootstrap", n.raft.BootstrapCluster(raft.Configuration{Servers: servers}))
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		n.log.Error("bootstrap failed", "err", err)
		return
	}
	n.log.Info("bootstrapped cluster", "servers", len(servers))
	n.electNowIfSoleVoter()
}
