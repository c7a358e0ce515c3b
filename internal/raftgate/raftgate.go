// Package raftgate puts hashicorp/raft's heartbeat fast path behind a gate
// that a node closes after raft's shutdown and before it closes its stores.
//
// raft handles a heartbeat on the transport's connection goroutine, not on
// one of its own, so raft.Shutdown does not wait for it. A heartbeat that
// passed raft's shutdown check just before the shutdown can still write a
// new term to the stable store after the node has closed it, and raft
// panics when that write fails ("failed to save current term: database not
// open"), taking the whole process down. Closing the gate waits for the
// heartbeats in flight and turns later ones away unanswered, as raft itself
// does once it is shut down.
//
// The package wraps the transport and nothing else: it must not answer a
// heartbeat itself or change what raft sees of one that gets through.
package raftgate

import (
	"sync"

	"github.com/hashicorp/raft"
)

// Transport is raft's network transport with its heartbeat fast path
// behind a gate. Pass it to raft.NewRaft in place of the transport it
// wraps, and call CloseHeartbeats after raft's shutdown, before closing
// the log and stable stores.
type Transport struct {
	*raft.NetworkTransport
	gate gate
}

// New wraps t.
func New(t *raft.NetworkTransport) *Transport {
	return &Transport{NetworkTransport: t}
}

// SetHeartbeatHandler installs raft's heartbeat handler behind the gate.
// A nil handler is passed through: the transport then sends heartbeats to
// its consumer channel, as it does without a gate.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
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

// CloseHeartbeats turns later heartbeats away and returns once every
// heartbeat being handled has finished. It does not close the transport.
func (t *Transport) CloseHeartbeats() { t.gate.close() }

// gate lets calls in until it is closed; closing waits for the calls
// inside to leave.
type gate struct {
	mu     sync.RWMutex
	closed bool
}

// enter reports whether the caller may go on; a caller that may must call
// leave when done.
func (g *gate) enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

func (g *gate) leave() { g.mu.RUnlock() }

// close turns later calls away and returns once every call inside has left.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
