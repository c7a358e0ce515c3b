// Package raftgate keeps hashicorp/raft's heartbeats on raft's main
// goroutine.
//
// raft's network transport has a heartbeat fast path: raft installs a
// handler that the transport calls on its connection goroutine, outside
// raft's main loop, so that a follower busy writing its log still answers
// heartbeats. A heartbeat that carries a newer term changes the node's
// term and state there, with nothing ordering it against the main loop. A
// leader whose loop is appending client writes at that moment writes them
// with the new term, a term it does not lead. The real leader of that
// term has other entries at the same indices under the same term, so the
// follower's log check sees nothing to replace and the replicas apply
// different commands at one index (hashicorp/raft#695; termrace_test.go
// reproduces it, and a chaos campaign found it in ledgerd). The same fast
// path let a heartbeat write a new term to the stable store after raft
// had shut down and the node had closed it.
//
// Transport drops the handler raft installs. The network transport then
// delivers heartbeats on its consumer channel like every other RPC, and
// raft's main loop handles them in order with its own appends and
// elections. The cost is that a heartbeat waits for the log write in
// progress (a few milliseconds), far below the heartbeat timeout; every
// AppendEntries a follower handles refreshes its leader contact anyway.
//
// The package wraps the transport and nothing else: it must not answer a
// heartbeat itself or change what raft sees of one.
package raftgate

import "github.com/hashicorp/raft"

// Transport is raft's network transport without its heartbeat fast path.
// Pass it to raft.NewRaft in place of the transport it wraps.
type Transport struct {
	*raft.NetworkTransport
}

// New wraps t. Any heartbeat handler already set on t is removed.
func New(t *raft.NetworkTransport) *Transport {
	t.SetHeartbeatHandler(nil)
	return &Transport{NetworkTransport: t}
}

// SetHeartbeatHandler implements raft.WithHeartbeat (raft.Transport): it
// ignores cb, so heartbeats reach raft through Consumer, on its main
// goroutine.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {}
