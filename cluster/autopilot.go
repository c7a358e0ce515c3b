package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// apDelegate is the application side of raft-autopilot: it reports the
// servers gossip knows, fetches their Raft progress over HTTP, and hands
// failed-server removals to the leader's membership goroutine.
type apDelegate struct{ n *Node }

var _ autopilot.ApplicationIntegration = (*apDelegate)(nil)

// AutopilotConfig implements autopilot.ApplicationIntegration.
func (d *apDelegate) AutopilotConfig() *autopilot.Config {
	c := d.n.cfg
	return &autopilot.Config{
		CleanupDeadServers:      true,
		LastContactThreshold:    max(10*c.HeartbeatTimeout, 2*time.Second),
		MaxTrailingLogs:         250,
		MinQuorum:               uint(c.MinQuorum),
		ServerStabilizationTime: c.ServerStabilizationTime,
	}
}

// NotifyState implements autopilot.ApplicationIntegration.
func (d *apDelegate) NotifyState(s *autopilot.State) {
	d.n.m.failureTolerance.Set(float64(s.FailureTolerance))
}

// FetchServerStats implements autopilot.ApplicationIntegration.
func (d *apDelegate) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	peers := d.n.gossip.snapshot()
	out := make(map[raft.ServerID]*autopilot.ServerStats, len(servers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id := range servers {
		var st status
		if string(id) == d.n.id {
			st = d.n.localStatus()
		} else {
			p, ok := peers[string(id)]
			if !ok {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := d.n.fetchStatus(ctx, p.meta.RPC)
				if err != nil || st.ID != string(id) {
					return
				}
				mu.Lock()
				out[id] = statsOf(st)
				mu.Unlock()
			}()
			continue
		}
		mu.Lock()
		out[id] = statsOf(st)
		mu.Unlock()
	}
	wg.Wait()
	return out
}

func statsOf(st status) *autopilot.ServerStats {
	return &autopilot.ServerStats{
		LastContact: time.Duration(st.LastContactNanos),
		LastTerm:    st.LastTerm,
		LastIndex:   st.LastIndex,
	}
}

// KnownServers implements autopilot.ApplicationIntegration. Servers in the
// Raft configuration that gossip has never seen are reported as failed
// rather than omitted, so autopilot does not treat them as stale and
// remove them before gossip has converged; removeFailed applies the grace.
func (d *apDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	leader, _ := d.n.Leader()
	out := map[raft.ServerID]*autopilot.Server{}
	for id, p := range d.n.gossip.snapshot() {
		s := &autopilot.Server{
			ID: raft.ServerID(id), Name: p.meta.Name, Address: raft.ServerAddress(p.meta.Raft),
			Version: p.meta.Version, RaftVersion: raft.ProtocolVersionMax, IsLeader: id == leader,
			NodeType: autopilot.NodeVoter,
		}
		switch p.status {
		case statusAlive, statusSuspect:
			s.NodeStatus = autopilot.NodeAlive
		case statusLeft:
			s.NodeStatus = autopilot.NodeLeft
		default:
			s.NodeStatus = autopilot.NodeFailed
		}
		out[s.ID] = s
	}
	fut := d.n.raft.GetConfiguration()
	if fut.Error() == nil {
		for _, srv := range fut.Configuration().Servers {
			if _, ok := out[srv.ID]; !ok {
				out[srv.ID] = &autopilot.Server{ID: srv.ID, Address: srv.Address, NodeStatus: autopilot.NodeFailed,
					RaftVersion: raft.ProtocolVersionMax, NodeType: autopilot.NodeVoter}
			}
		}
	}
	return out
}

// RemoveFailedServer implements autopilot.ApplicationIntegration. It must
// not block, so it only queues the request for the membership goroutine.
func (d *apDelegate) RemoveFailedServer(s *autopilot.Server) {
	select {
	case d.n.removeCh <- string(s.ID):
	default:
	}
}
