package raftgate

import (
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestHeartbeatsReachTheConsumer sends a raft heartbeat over real TCP
// transports: it arrives on the consumer channel raft's main loop reads,
// and the handler raft installs for the fast path is never called.
func TestHeartbeatsReachTheConsumer(t *testing.T) {
	newTrans := func() *raft.NetworkTransport {
		tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, io.Discard)
		if err != nil {
			t.Fatalf("transport: %v", err)
		}
		return tr
	}
	server := New(newTrans())
	defer server.Close()
	client := newTrans()
	defer client.Close()

	var fastPath atomic.Int64
	server.SetHeartbeatHandler(func(rpc raft.RPC) {
		fastPath.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 99, Success: false}, nil)
	})
	type outcome struct {
		resp raft.AppendEntriesResponse
		err  error
	}
	got := make(chan outcome, 1)
	go func() {
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(client.LocalAddr())},
			Term:      7,
		}
		var o outcome
		o.err = client.AppendEntries("server", server.LocalAddr(), req, &o.resp)
		got <- o
	}()
	select {
	case rpc := <-server.Consumer():
		req, ok := rpc.Command.(*raft.AppendEntriesRequest)
		if !ok || req.Term != 7 || len(req.Entries) != 0 {
			t.Fatalf("consumer got %#v, want the heartbeat of term 7", rpc.Command)
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	case o := <-got:
		t.Fatalf("heartbeat answered without reaching the consumer: %+v, err %v", o.resp, o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat did not reach the consumer within 30 s")
	}
	select {
	case o := <-got:
		if o.err != nil || !o.resp.Success || o.resp.Term != 7 {
			t.Fatalf("heartbeat reply %+v, err %v; want the consumer's (term 7, success)", o.resp, o.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat reply did not arrive within 30 s")
	}
	if n := fastPath.Load(); n != 0 {
		t.Fatalf("fast-path handler called %d times, want 0", n)
	}
}

// TestNewDropsAnInstalledHandler checks that a handler set on the network
// transport before it was wrapped is removed too.
func TestNewDropsAnInstalledHandler(t *testing.T) {
	nt, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	var fastPath atomic.Int64
	nt.SetHeartbeatHandler(func(rpc raft.RPC) {
		fastPath.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{}, nil)
	})
	server := New(nt)
	defer server.Close()
	client, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	defer client.Close()
	done := make(chan error, 1)
	go func() {
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(client.LocalAddr())}, Term: 3}
		var resp raft.AppendEntriesResponse
		done <- client.AppendEntries("server", server.LocalAddr(), req, &resp)
	}()
	select {
	case rpc := <-server.Consumer():
		rpc.Respond(&raft.AppendEntriesResponse{Term: 3, Success: true}, nil)
	case err := <-done:
		t.Fatalf("heartbeat answered on the fast path (err %v)", err)
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat did not reach the consumer within 30 s")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat reply did not arrive within 30 s")
	}
	if n := fastPath.Load(); n != 0 {
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
			newTrans := func() *raft.NetworkTransport {
				tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, io.Discard)
				if err != nil {
					t.Fatalf("transport: %v", err)
				}
				return tr
			}
			server := New(newTrans())
			defer server.Close()
			client := newTrans()
			defer client.Close()
			if c.node != nil {
				server.Bind(*c.node)
			}
			var fast atomic.Int64
			server.SetHeartbeatHandler(func(rpc raft.RPC) {
				fast.Add(1)
				rpc.Respond(&raft.AppendEntriesResponse{Term: c.term, Success: true}, nil)
			})
			done := make(chan error, 1)
			go func() {
				req := &raft.AppendEntriesRequest{
					RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(client.LocalAddr())},
					Term:      c.term,
				}
				var resp raft.AppendEntriesResponse
				done <- client.AppendEntries("server", server.LocalAddr(), req, &resp)
			}()
			var viaConsumer bool
			select {
			case rpc := <-server.Consumer():
				viaConsumer = true
				rpc.Respond(&raft.AppendEntriesResponse{Term: c.term, Success: true}, nil)
			case err := <-done:
				done <- err
			case <-time.After(30 * time.Second):
				t.Fatal("heartbeat neither answered nor delivered within 30 s")
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("heartbeat: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("heartbeat reply did not arrive within 30 s")
			}
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
	nt, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
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
