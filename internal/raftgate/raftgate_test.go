package raftgate

import (
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// newTCP returns a raft network transport on a loopback port.
func newTCP(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	nt, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	return nt
}

// route sends a heartbeat of term from client to server and reports
// whether it arrived on server's consumer channel (where it is answered
// with success in that term) rather than on the fast path. It fails the
// test if the reply does not come back as given.
func route(t *testing.T, client *raft.NetworkTransport, server *Transport, term uint64) bool {
	t.Helper()
	type reply struct {
		resp raft.AppendEntriesResponse
		err  error
	}
	got := make(chan reply, 1)
	go func() {
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(client.LocalAddr())},
			Term:      term,
		}
		var r reply
		r.err = client.AppendEntries("server", server.LocalAddr(), req, &r.resp)
		got <- r
	}()
	viaConsumer := false
	var r reply
	select {
	case rpc := <-server.Consumer():
		req, ok := rpc.Command.(*raft.AppendEntriesRequest)
		if !ok || req.Term != term || len(req.Entries) != 0 {
			t.Fatalf("consumer got %#v, want the heartbeat of term %d", rpc.Command, term)
		}
		viaConsumer = true
		rpc.Respond(&raft.AppendEntriesResponse{Term: term, Success: true}, nil)
		select {
		case r = <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("heartbeat reply did not arrive within 30 s")
		}
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat neither answered nor delivered within 30 s")
	}
	if r.err != nil || !r.resp.Success || r.resp.Term != term {
		t.Fatalf("heartbeat reply %+v, err %v; want success in term %d", r.resp, r.err, term)
	}
	return viaConsumer
}

// fastHandler returns a fast-path handler that counts its calls and
// answers success in term.
func fastHandler(calls *atomic.Int64, term uint64) func(raft.RPC) {
	return func(rpc raft.RPC) {
		calls.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Term: term, Success: true}, nil)
	}
}

// TestHeartbeatsReachTheConsumer checks that before Bind every heartbeat
// goes to the consumer channel raft's main loop reads, and the handler
// raft installs for the fast path is not called.
func TestHeartbeatsReachTheConsumer(t *testing.T) {
	server := New(newTCP(t))
	defer server.Close()
	client := newTCP(t)
	defer client.Close()
	var fast atomic.Int64
	server.SetHeartbeatHandler(fastHandler(&fast, 7))
	if !route(t, client, server, 7) {
		t.Fatal("heartbeat took the fast path before Bind")
	}
	if n := fast.Load(); n != 0 {
		t.Fatalf("fast-path handler called %d times, want 0", n)
	}
}

// TestNewDropsAnInstalledHandler checks that a handler set on the network
// transport before it was wrapped is replaced.
func TestNewDropsAnInstalledHandler(t *testing.T) {
	nt := newTCP(t)
	var earlier atomic.Int64
	nt.SetHeartbeatHandler(fastHandler(&earlier, 3))
	server := New(nt)
	defer server.Close()
	client := newTCP(t)
	defer client.Close()
	if !route(t, client, server, 3) {
		t.Fatal("heartbeat answered on the fast path")
	}
	if n := earlier.Load(); n != 0 {
		t.Fatalf("the earlier handler was called %d times, want 0", n)
	}
}

// fakeNode is a raft node's term and role as Transport reads them.
type fakeNode struct {
	term  uint64
	state raft.RaftState
}

func (f fakeNode) CurrentTerm() uint64   { return f.term }
func (f fakeNode) State() raft.RaftState { return f.state }

// TestFastPathOnlyForHeartbeatsThatChangeNothing sends one heartbeat per
// case over real TCP transports and checks which way it went: raft's fast
// path only when it changes neither the node's term nor its role.
func TestFastPathOnlyForHeartbeatsThatChangeNothing(t *testing.T) {
	cases := []struct {
		name string
		node *fakeNode // nil: not bound yet
		term uint64    // the heartbeat's
		fast bool
	}{
		{"follower, same term", &fakeNode{5, raft.Follower}, 5, true},
		{"follower, older term", &fakeNode{5, raft.Follower}, 4, true},
		{"follower, newer term", &fakeNode{5, raft.Follower}, 6, false},
		{"leader, newer term", &fakeNode{5, raft.Leader}, 6, false},
		{"leader, older term", &fakeNode{5, raft.Leader}, 4, true},
		{"candidate, same term", &fakeNode{5, raft.Candidate}, 5, false},
		{"candidate, newer term", &fakeNode{5, raft.Candidate}, 6, false},
		{"not bound", nil, 5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := New(newTCP(t))
			defer server.Close()
			client := newTCP(t)
			defer client.Close()
			if c.node != nil {
				server.Bind(*c.node)
			}
			var fast atomic.Int64
			server.SetHeartbeatHandler(fastHandler(&fast, c.term))
			viaConsumer := route(t, client, server, c.term)
			if got := fast.Load() == 1; got != c.fast || viaConsumer == c.fast {
				t.Fatalf("fast path %v, main loop %v; want fast path %v", got, viaConsumer, c.fast)
			}
		})
	}
}

// TestCloseStopsTheRelay checks that Close may be called twice, that a
// heartbeat kept off the fast path after it is refused, not left waiting,
// and that one that changes nothing no longer reaches raft's handler.
func TestCloseStopsTheRelay(t *testing.T) {
	nt := newTCP(t)
	g := New(nt)
	g.Bind(fakeNode{9, raft.Follower})
	var fast atomic.Int64
	g.SetHeartbeatHandler(func(raft.RPC) { fast.Add(1) })
	if err := g.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	resp := make(chan raft.RPCResponse, 1)
	g.heartbeat(raft.RPC{Command: &raft.AppendEntriesRequest{Term: 10}, RespChan: resp})
	select {
	case r := <-resp:
		if r.Error == nil {
			t.Fatalf("heartbeat of a newer term after close answered %+v, want an error", r.Response)
		}
	default:
		t.Fatal("heartbeat of a newer term after close got no answer")
	}
	g.heartbeat(raft.RPC{Command: &raft.AppendEntriesRequest{Term: 9}, RespChan: resp})
	if n := fast.Load(); n != 0 {
		t.Fatalf("raft's handler called %d times after close, want 0", n)
	}
}

// TestGateWaitsForCallsInside checks the order a node relies on before it
// closes its stores: close returns only after the calls inside have left,
// and no call gets in after it.
func TestGateWaitsForCallsInside(t *testing.T) {
	var g gate
	if !g.enter() {
		t.Fatal("an open gate turned a call away")
	}
	done := make(chan struct{})
	go func() {
		g.close()
		close(done)
	}()
	// Let the closer run; a gate that does not wait returns by now. (A
	// correct one can never fail this check, however the goroutines run.)
	for range 100 {
		runtime.Gosched()
	}
	select {
	case <-done:
		t.Fatal("close returned while a call was still inside")
	default:
	}
	g.leave()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return 10 s after the last call left")
	}
	if g.enter() {
		t.Fatal("a closed gate let a call in")
	}
}
