package cluster

import "github.com/hashicorp/raft"

// CommonEnvelopeVersion returns the highest FSM envelope version that
// every server of the Raft configuration can apply, as announced in
// gossip (Config.EnvelopeVersion): the minimum over the servers. A new
// envelope version may be proposed only when this is at least that
// version (design invariant 12), or a replica that cannot decode the
// entry stops on it.
//
// It is conservative: a configured server counts as 1 when gossip has
// never seen it, when it announces no version (servers of the previous
// release), or when it is not alive in gossip (failed or left) — a
// server that comes back may have been started on an older release, and
// until it announces itself again nothing says otherwise. With no
// configuration yet it returns this node's own version.
func (n *Node) CommonEnvelopeVersion() uint32 {
	// GetConfiguration answers at once from raft's latest configuration;
	// it never waits on raft's main loop.
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return 1
	}
	// The leader asks on every write: the gossip view is read in place,
	// under its lock, rather than copied.
	g := n.gossip
	g.mu.Lock()
	defer g.mu.Unlock()
	return envelopeOf(n.id, n.cfg.EnvelopeVersion, fut.Configuration().Servers, func(id string) (peer, bool) {
		if p, ok := g.peers[id]; ok {
			return *p, true
		}
		return peer{}, false
	})
}

// commonEnvelope is CommonEnvelopeVersion on given inputs.
func commonEnvelope(self string, own uint32, servers []raft.Server, peers map[string]peer) uint32 {
	return envelopeOf(self, own, servers, func(id string) (peer, bool) {
		p, ok := peers[id]
		return p, ok
	})
}

// envelopeOf is commonEnvelope with the gossip view given as a lookup
// by server ID.
func envelopeOf(self string, own uint32, servers []raft.Server, lookup func(id string) (peer, bool)) uint32 {
	v := max(own, 1)
	for _, s := range servers {
		if string(s.ID) == self {
			continue
		}
		p, ok := lookup(string(s.ID))
		if !ok || p.meta.Envelope == 0 || (p.status != statusAlive && p.status != statusSuspect) {
			return 1
		}
		v = min(v, p.meta.Envelope)
	}
	return v
}
