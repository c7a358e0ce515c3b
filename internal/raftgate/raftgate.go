// Package raftgate keeps a heartbeat that would change a hashicorp/raft
// node's term or role off raft's heartbeat fast path.
//
// raft's network transport answers heartbeats on its connection
// goroutine, outside raft's main loop, so that a follower busy writing
// its log or applying still answers in time. A heartbeat that carries a
// newer term changes the node's term and state there, with nothing
// ordering it against the main loop. A leader whose loop is appending
// client writes at that moment writes them under the new term, a term it
// does not lead. The real leader of that term has other entries at the
// same indices under the same term, so raft's log check sees nothing to
// replace and the replicas apply different commands at one index
// (hashicorp/raft#695, open at v1.8.0; termrace_test.go reproduces it,
// and a chaos campaign found it in ledgerd).
//
// Transport keeps the fast path for the heartbeats that change nothing:
// one of the term a follower is already in, or of an older term (which
// raft ignores). Any other heartbeat, and every heartbeat before Bind,
// goes to raft's main loop through the consumer channel, in order with
// its appends and elections. A heartbeat judged harmless stays harmless
// until raft handles it: a node's term only grows, and a follower that
// starts to campaign in between leads, if it wins, in a term above the
// heartbeat's, which raft then ignores.
//
// The package wraps the transport and nothing else: it must not answer a
// heartbeat itself (beyond refusing one after Close) or change what raft
// sees of one.
package raftgate

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Node is what Transport reads of the raft node it serves; *raft.Raft is
// one.
type Node interface {
	CurrentTerm() uint64
	State() raft.RaftState
}

// Transport is raft's network transport whose heartbeat fast path takes
// only heartbeats that change neither the node's term nor its role. Pass
// it to raft.NewRaft in place of the transport it wraps, then Bind the
// node; Close it after raft's shutdown.
type Transport struct {
	*raft.NetworkTransport
	node atomic.Pointer[Node]
	fast atomic.Pointer[func(raft.RPC)] // raft's heartbeat handler
	out  chan raft.RPC                  // what raft's main loop reads
	done chan struct{}                  // closed by Close
	once sync.Once
	gate gate // the fast-path calls Close waits for
}

// New wraps t and starts relaying its RPCs to Consumer. Any heartbeat
// handler already set on t is replaced.
func New(t *raft.NetworkTransport) *Transport {
	g := &Transport{NetworkTransport: t, out: make(chan raft.RPC), done: make(chan struct{})}
	t.SetHeartbeatHandler(g.heartbeat)
	in := t.Consumer()
	go func() {
		for {
			select {
			case rpc := <-in:
				select {
				case g.out <- rpc:
				case <-g.done:
					return
				}
			case <-g.done:
				return
			}
		}
	}()
	return g
}

// Bind tells the transport which node it serves, so that heartbeats that
// change nothing take the fast path; until then every heartbeat goes
// through the main loop.
func (t *Transport) Bind(n Node) { t.node.Store(&n) }

// Consumer implements raft.Transport: every RPC, and each heartbeat kept
// off the fast path, arrives here.
func (t *Transport) Consumer() <-chan raft.RPC { return t.out }

// SetHeartbeatHandler implements raft.WithHeartbeat (raft.Transport): cb
// handles the heartbeats that change nothing; nil sends all of them
// through Consumer.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.fast.Store(nil)
		return
	}
	t.fast.Store(&cb)
}

// Close implements raft.WithClose: it stops relaying, waits for the
// fast-path heartbeats being handled and turns later ones away, and
// closes the network transport. Call it after raft's shutdown and before
// closing the stores: a heartbeat that passed raft's shutdown check just
// before the shutdown may, if the node started to campaign meanwhile,
// still save the term. It may be called more than once.
func (t *Transport) Close() error {
	t.once.Do(func() { close(t.done) })
	t.gate.close()
	return t.NetworkTransport.Close()
}

// heartbeat is the network transport's handler: raft's own for a
// heartbeat that changes nothing, else a hand-over to the main loop (the
// transport then waits for raft's answer as for any RPC).
func (t *Transport) heartbeat(rpc raft.RPC) {
	if fast := t.fast.Load(); fast != nil && t.harmless(rpc) {
		if !t.gate.enter() {
			return // closed: unanswered, as raft leaves one after its shutdown
		}
		defer t.gate.leave()
		(*fast)(rpc)
		return
	}
	select {
	case t.out <- rpc:
	case <-t.done:
		rpc.Respond(nil, raft.ErrTransportShutdown)
	}
}

// harmless reports whether raft may handle rpc off its main loop: a
// heartbeat of an older term (raft ignores it), or of the term the node
// follows in. The term is read before the role, so a node seen as a
// follower was one in that term or a later one.
func (t *Transport) harmless(rpc raft.RPC) bool {
	req, ok := rpc.Command.(*raft.AppendEntriesRequest)
	np := t.node.Load()
	if !ok || np == nil {
		return false
	}
	n := *np
	term := n.CurrentTerm()
	return req.Term < term || req.Term == term && n.State() == raft.Follower
}

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
