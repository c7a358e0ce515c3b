package cluster

import (
	"context"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// reconcile adds alive gossip servers missing from the Raft configuration
// as non-voters (autopilot promotes them once healthy and stable). A new
// server that reuses the Raft address of a configured one (a wiped node
// back under a new ID) replaces it.
func (n *Node) reconcile(ctx context.Context) {
	if n.raft.State() != raft.Leader {
		return
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		n.log.Warn("reconcile: get configuration", "err", err)
		return
	}
	conf := fut.Configuration()
	byID := map[raft.ServerID]raft.Server{}
	byAddr := map[raft.ServerAddress]raft.Server{}
	for _, s := range conf.Servers {
		byID[s.ID] = s
		byAddr[s.Address] = s
	}
	peers := n.gossip.snapshot()
	ids := make([]string, 0, len(peers))
	for id := range peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Two alive members claiming one Raft address means a server came back
	// under a new ID before gossip noticed the old one died: wait until
	// only one claim is left rather than flap between them.
	claims := map[string]int{}
	for _, p := range peers {
		if p.status == statusAlive {
			claims[p.meta.Raft]++
		}
	}
	for _, id := range ids {
		p := peers[id]
		if p.status != statusAlive || claims[p.meta.Raft] > 1 {
			n.log.Debug("reconcile: skip", "peer", id, "status", p.status, "claims", claims[p.meta.Raft])
			continue
		}
		sid, addr := raft.ServerID(p.meta.ID), raft.ServerAddress(p.meta.Raft)
		if s, ok := byID[sid]; ok && s.Address == addr {
			continue
		}
		if old, ok := byAddr[addr]; ok && old.ID != sid {
			n.log.Info("replacing server that reused an address", "old", old.ID, "new", sid, "addr", addr)
			if err := n.configChange(ctx, "remove replaced server", n.raft.RemoveServer(old.ID, 0, 0)); err != nil {
				n.log.Warn("remove replaced server", "id", old.ID, "err", err)
				continue
			}
		}
		if err := n.configChange(ctx, "add non-voter", n.raft.AddNonvoter(sid, addr, 0, 0)); err != nil {
			n.log.Warn("add non-voter", "id", sid, "err", err)
			continue
		}
		n.log.Info("added non-voter", "id", sid, "addr", addr, "name", p.meta.Name)
	}
}

// removeFailed removes a server autopilot found failed, once it has left
// gracefully or been dead (or unknown to gossip) for DeadServerGrace.
// Autopilot has already checked that the removal keeps a quorum and
// respects MinQuorum.
func (n *Node) removeFailed(ctx context.Context, id string) {
	if id == n.id || n.raft.State() != raft.Leader {
		return
	}
	p, known := n.gossip.snapshot()[id]
	switch {
	case known && p.status == statusLeft:
	case known && p.status == statusFailed && time.Since(p.since) >= n.cfg.DeadServerGrace:
	case !known && time.Since(time.Unix(0, n.leaderSince.Load())) >= n.cfg.DeadServerGrace:
	default:
		return
	}
	if err := n.configChange(ctx, "remove failed server", n.raft.RemoveServer(raft.ServerID(id), 0, 0)); err != nil {
		n.log.Warn("remove failed server", "id", id, "err", err)
		return
	}
	n.log.Info("removed server", "id", id, "gossip", p.status)
}

// configChange waits for a configuration change the leader proposed, for
// at most ForwardTimeout and never past leadership or shutdown (ctx).
func (n *Node) configChange(ctx context.Context, what string, f raft.Future) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ForwardTimeout)
	defer cancel()
	return n.waitFuture(ctx, what, f)
}
