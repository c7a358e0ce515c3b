package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Members lists the servers in the Raft configuration, plus servers known
// to gossip but not (yet) in it, sorted by ID.
func (n *Node) Members() []Member {
	peers := n.gossip.snapshot()
	now := time.Now()
	_, lid := n.raft.LeaderWithID()
	leaderID := string(lid)
	var out []Member
	seen := map[string]bool{}
	fut := n.raft.GetConfiguration()
	if fut.Error() == nil {
		for _, s := range fut.Configuration().Servers {
			id := string(s.ID)
			seen[id] = true
			m := Member{ID: id, RaftAddr: string(s.Address), Role: "nonvoter", Health: "unknown"}
			if s.Suffrage == raft.Voter {
				m.Role = "voter"
			}
			if id == leaderID {
				m.Role = "leader"
			}
			if p, ok := peers[id]; ok {
				m.Name, m.RPCAddr, m.Health, m.Insecure = p.meta.Name, p.meta.RPC, n.health(id, p, now), p.meta.Insecure
			}
			out = append(out, m)
		}
	}
	for id, p := range peers {
		if !seen[id] {
			out = append(out, Member{ID: id, Name: p.meta.Name, RaftAddr: p.meta.Raft, RPCAddr: p.meta.RPC,
				Role: "none", Health: n.health(id, p, now), Insecure: p.meta.Insecure})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// health is a server's Health as this node sees it: gossip's state,
// except that a server gossip still calls alive whose status probes have
// been failing is "unreachable" (contacts). Gossip needs several seconds
// to declare a killed or paused server failed; a follower probes the
// leader every readyPoll, so a leader that stopped answering is not
// reported alive meanwhile.
func (n *Node) health(id string, p peer, now time.Time) string {
	if id != n.id && p.status == statusAlive && n.contacts.unreachable(p.meta.RPC, p.since, now) {
		return "unreachable"
	}
	return string(p.status)
}

// TransferLeadership hands leadership to another voter. Only the leader
// may call it; with no other voter it fails with ErrNoOtherVoter.
func (n *Node) TransferLeadership(ctx context.Context) error {
	if n.closed.Load() {
		return ErrShutdown
	}
	if n.raft.State() != raft.Leader {
		return fmt.Errorf("cluster: transfer leadership: %w", ErrNotLeader)
	}
	// Raft answers a leader without another voter with "cannot find
	// peer", which reads as a transient failure; it is not one.
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("cluster: transfer leadership: %w", mapRaftErr(err))
	}
	other := false
	for _, s := range cf.Configuration().Servers {
		other = other || (s.Suffrage == raft.Voter && string(s.ID) != n.id)
	}
	if !other {
		return fmt.Errorf("cluster: transfer leadership: %w: the leader is the only voter", ErrNoOtherVoter)
	}
	return n.waitFuture(ctx, "transfer leadership", n.raft.LeadershipTransfer())
}

// RemoveServer removes a server from the Raft configuration. Only the
// leader may call it; it refuses to remove the leader itself (transfer
// leadership first, ErrIsLeader) and an ID the configuration does not
// hold (ErrUnknownServer).
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if n.closed.Load() {
		return ErrShutdown
	}
	if n.raft.State() != raft.Leader {
		return fmt.Errorf("cluster: remove server: %w", ErrNotLeader)
	}
	if id == n.id {
		return fmt.Errorf("cluster: remove server: %w: %q; transfer leadership first", ErrIsLeader, id)
	}
	// Raft takes the removal of an ID it does not know as a no-op and
	// reports success: an operator who mistyped the ID of a dead server
	// would believe it gone while it still counts towards the quorum.
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("cluster: remove server: %w", mapRaftErr(err))
	}
	var ids []string
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == id {
			return n.waitFuture(ctx, "remove server", n.raft.RemoveServer(raft.ServerID(id), 0, 0))
		}
		ids = append(ids, string(s.ID))
	}
	return fmt.Errorf("cluster: remove server: %w: %q (the servers are %s)", ErrUnknownServer, id, strings.Join(ids, ", "))
}
