package raftgate

import (
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

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

// TestTransportHeartbeats sends raft heartbeats over real TCP
// transports: with the gate open they reach the handler raft installed;
// once it is closed they are dropped unanswered, and the sender sees an
// error rather than a reply nobody gave.
func TestTransportHeartbeats(t *testing.T) {
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

	var calls atomic.Int64
	server.SetHeartbeatHandler(func(rpc raft.RPC) {
		calls.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	})
	heartbeat := func() (*raft.AppendEntriesResponse, error) {
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(client.LocalAddr())},
			Term:      7,
		}
		var resp raft.AppendEntriesResponse
		err := client.AppendEntries("server", server.LocalAddr(), req, &resp)
		return &resp, err
	}

	resp, err := heartbeat()
	if err != nil || !resp.Success || resp.Term != 7 {
		t.Fatalf("heartbeat through the open gate: resp %+v, err %v; want the handler's reply", resp, err)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("handler called %d times for one heartbeat, want 1", got)
	}

	server.CloseHeartbeats()
	type outcome struct {
		resp *raft.AppendEntriesResponse
		err  error
	}
	late := make(chan outcome, 1)
	go func() {
		resp, err := heartbeat()
		late <- outcome{resp, err}
	}()
	// The dropped heartbeat waits for a reply until the transport shuts
	// down, as one raft ignores after its shutdown does.
	if err := server.Close(); err != nil {
		t.Fatalf("close transport: %v", err)
	}
	select {
	case o := <-late:
		if o.err == nil {
			t.Errorf("heartbeat after the gate closed got a reply %+v, want an error", o.resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat after the gate closed did not end 30 s after the transport shut down")
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("handler called %d times, want 1: a heartbeat got past the closed gate", got)
	}
}
