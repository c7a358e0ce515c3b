package raftgate

import (
	"io"
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
