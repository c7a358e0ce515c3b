package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// minHeartbeatTimeout is the smallest HeartbeatTimeout raft accepts.
const minHeartbeatTimeout = 5 * time.Millisecond

// soleVoter reports whether id is the only voter of conf.
func soleVoter(conf raft.Configuration, id string) bool {
	voters, self := 0, false
	for _, s := range conf.Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || string(s.ID) == id
		}
	}
	return voters == 1 && self
}

// electNowIfSoleVoter starts an election at once when this node is the only
// voter of its latest configuration. A raft follower campaigns only after a
// HeartbeatTimeout (randomly up to twice as long) without hearing from a
// leader, and every start begins as a follower: a one-server cluster would
// sit idle for 1-2 s although nobody else can lead. Lowering
// HeartbeatTimeout through ReloadConfig makes the follower re-arm its timer
// to fire at once; since no leader was ever heard from, the expired timer
// makes it a candidate, and as the only voter it wins its own vote. The
// configured timeouts are put back straight away: the timer already armed
// does not depend on them, and a cluster that grows must not keep timeouts
// tuned for one server. raft's own check decides the candidacy (it uses
// the same latest configuration), so this changes when, never whether, a
// node campaigns.
func (n *Node) electNowIfSoleVoter() {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil || !soleVoter(fut.Configuration(), n.id) {
		return
	}
	orig := n.raft.ReloadableConfig()
	short := orig
	// LeaderLeaseTimeout cannot be reloaded and must not exceed
	// HeartbeatTimeout.
	short.HeartbeatTimeout = max(n.raftConf.LeaderLeaseTimeout, minHeartbeatTimeout)
	if short.HeartbeatTimeout >= orig.HeartbeatTimeout {
		return // a lower value is the only thing that re-arms the timer
	}
	if err := n.raft.ReloadConfig(short); err != nil {
		n.log.Warn("sole voter: early election", "err", err)
		return
	}
	if err := n.raft.ReloadConfig(orig); err != nil {
		n.log.Error("sole voter: restore raft timeouts", "err", err)
		return
	}
	n.log.Info("sole voter: electing without waiting for the heartbeat timeout")
}
