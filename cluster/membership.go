package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// reconcile adds alive gossip servers missing from the Raft configuration
// as non-voters (autopilot promotes them once healthy and stable), but
// only servers that proved they are servers of this cluster (proveServer).
// A member claiming the Raft address of a configured server that gossip
// still sees alive is refused; one that reuses the address of a server
// gossip reports failed or left (a wiped node back under a new ID)
// replaces it, once it has proved itself. Each call counts as one round
// (ledgerd_reconcile_rounds_total).
func (n *Node) reconcile(ctx context.Context) {
	defer n.reconcileRounds.Add(1)
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
		if p.status != statusAlive {
			continue
		}
		sid, addr := raft.ServerID(p.meta.ID), raft.ServerAddress(p.meta.Raft)
		if s, ok := byID[sid]; ok && s.Address == addr {
			continue
		}
		old, taken := byAddr[addr]
		taken = taken && old.ID != sid
		if taken {
			holder, known := peers[string(old.ID)]
			if !known || holder.status == statusAlive || holder.status == statusSuspect {
				n.refuse(p.meta, fmt.Sprintf("claims the Raft address %s of server %s, which is not known to have failed or left", addr, old.ID))
				continue
			}
		}
		if claims[p.meta.Raft] > 1 {
			n.log.Debug("reconcile: skip", "peer", id, "claims", claims[p.meta.Raft])
			continue
		}
		if err := n.proveServer(ctx, p.meta); err != nil {
			n.refuse(p.meta, err.Error())
			continue
		}
		if taken {
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
		n.forgetRefusal(p.meta.ID)
		n.log.Info("added non-voter", "id", sid, "addr", addr, "name", p.meta.Name)
	}
}

// errNoProof means the internal endpoints do not use TLS, so a member
// cannot prove it is a server (an insecure cluster).
var errNoProof = errors.New("no TLS on the internal endpoints: membership is not authenticated")

// proveServer checks that the gossip member m is a server of this cluster
// before it may enter the Raft configuration: its /internal/status,
// fetched over the peers' TLS configuration (Config.RPCTLS, which must
// accept only certificates with the server role), must report the ID and
// Raft address its gossip meta announces. The gossip key alone proves
// nothing: anyone who holds it can announce any meta. Without RPCTLS there
// is no proof to ask for: the member is accepted, with a warning, as
// before.
func (n *Node) proveServer(ctx context.Context, m nodeMeta) error {
	if n.cfg.RPCTLS == nil {
		n.log.Warn("adding a gossip member to Raft without proof that it is a server", "id", m.ID, "addr", m.Raft, "why", errNoProof)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, proveTimeout)
	defer cancel()
	st, err := n.fetchStatus(ctx, m.RPC)
	if err != nil {
		return fmt.Errorf("no proof that it is a server: %w", err)
	}
	return checkProof(m, st)
}

// proveTimeout bounds one proof request, which runs on the leader's
// membership goroutine.
const proveTimeout = time.Second

// checkProof compares what a member's status says with its gossip meta.
func checkProof(m nodeMeta, st status) error {
	if st.ID != m.ID {
		return fmt.Errorf("its API at %s answers as server %q, gossip says %q", m.RPC, st.ID, m.ID)
	}
	if st.RaftAddr == "" {
		return fmt.Errorf("its API at %s does not report a Raft address (a release older than %s?)", m.RPC, Version)
	}
	if st.RaftAddr != m.Raft {
		return fmt.Errorf("its API at %s reports Raft address %s, gossip says %s", m.RPC, st.RaftAddr, m.Raft)
	}
	return nil
}

// refuse logs (once per member and reason) and counts a member kept out
// of the Raft configuration.
func (n *Node) refuse(m nodeMeta, why string) {
	n.refusedJoins.Add(1)
	n.refusedMu.Lock()
	seen := n.refused[m.ID] == why
	if !seen {
		if n.refused == nil {
			n.refused = map[string]string{}
		}
		n.refused[m.ID] = why
	}
	n.refusedMu.Unlock()
	if !seen {
		n.log.Warn("refusing gossip member: not added to Raft", "id", m.ID, "name", m.Name, "raft", m.Raft, "rpc", m.RPC, "why", why)
	}
}

func (n *Node) forgetRefusal(id string) {
	n.refusedMu.Lock()
	delete(n.refused, id)
	n.refusedMu.Unlock()
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
