package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// gatedTransport is raft's network transport with its heartbeat fast path
// behind a gate.
//
// raft handles a heartbeat on the transport's connection goroutine, not on
// one of its own, so raft.Shutdown does not wait for it. A heartbeat that
// passed raft's shutdown check just before the shutdown can still write a
// new term to the stable store after the node has closed it, and raft
// panics when that write fails ("failed to save current term: database not
// open"), taking the whole process down. The node closes the gate after
// raft's shutdown and before it closes the stores: closing waits for the
// heartbeats in flight and turns later ones away unanswered, as raft itself
// does once it is shut down.
type gatedTransport struct {
	*raft.NetworkTransport
	gate heartbeatGate
}

// SetHeartbeatHandler installs raft's heartbeat handler behind the gate.
func (t *gatedTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	t.NetworkTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		if !t.gate.enter() {
			return
		}
		defer t.gate.leave()
		cb(rpc)
	})
}

// heartbeatGate lets calls in until it is closed; closing waits for the
// calls inside to leave.
type heartbeatGate struct {
	mu     sync.RWMutex
	closed bool
}

// enter reports whether the caller may go on; a caller that may must call
// leave when done.
func (g *heartbeatGate) enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

func (g *heartbeatGate) leave() { g.mu.RUnlock() }

// close turns later calls away and returns once every call inside has left.
func (g *heartbeatGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
