package jepsen

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/rpc"
)

// batchNode starts a real single-node cluster and returns a unary and a
// batching client for it, sharing one ID map, and the batch statistics.
func batchNode(t *testing.T) (*ConnectClient, *BatchClient, *BatchStats) {
	t.Helper()
	c := agenttest.NewCluster(t, 1, rpc.Options{})
	addr := c.Servers[0].Addr
	plain := NewConnectClient(addr, NewIDMap(), ConnectOptions{})
	stats := &BatchStats{}
	batch, err := NewBatchClient(addr, plain, stats)
	if err != nil {
		t.Fatal(err)
	}
	return plain, batch, stats
}

// TestBatchClientAnswersLikeUnary runs one script of operations through
// ConnectClient and through BatchClient, each on its own resources of a
// real single-node cluster, and requires the same classified outcomes:
// the batch path must not turn a rejection, a wrong state or a not-found
// into something else.
func TestBatchClientAnswersLikeUnary(t *testing.T) {
	plain, batch, stats := batchNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	const hour = int64(time.Hour / time.Millisecond)
	script := func(p string) []Input {
		cpu := []Part{{Resource: p + "cpu", Amount: 3}}
		return []Input{
			{Op: OpHold, ID: p + "a", Parts: cpu, Duration: hour, NotBefore: base, Deadline: base + hour},
			{Op: OpReserve, ID: p + "b", Parts: cpu, Duration: hour, NotBefore: base, Deadline: base + hour}, // no room
			{Op: OpGet, ID: p + "b"},    // a rejection is no reservation
			{Op: OpCancel, ID: p + "a"}, // needs COMMITTED
			{Op: OpCommit, ID: p + "a"},
			{Op: OpAbort, ID: p + "a"}, // needs HELD
			{Op: OpModify, ID: p + "a", Parts: []Part{{Resource: p + "cpu", Amount: 4}}, Duration: hour, NotBefore: base, Deadline: base + 3*hour},
			{Op: OpFind, Parts: cpu, Duration: hour, NotBefore: base, Deadline: base + 4*hour},
			{Op: OpCommit, ID: p + "a"}, // swaps the modification in
			{Op: OpGet, ID: p + "a"},
			{Op: OpCancel, ID: p + "a"},
			{Op: OpGet, ID: p + "a"},
			{Op: OpCommit, ID: p + "never-made"},
		}
	}
	run := func(cl Client, p string) []Output {
		if err := cl.EnsureResource(ctx, p+"cpu", 4); err != nil {
			t.Fatal(err)
		}
		var outs []Output
		for _, in := range script(p) {
			out, _ := cl.Invoke(ctx, in)
			outs = append(outs, out)
		}
		return outs
	}
	want := run(plain, "u-")
	got := run(batch, "b-")
	for i, in := range script("") {
		// Starts are relative to the same base on both resources.
		if got[i] != want[i] {
			t.Errorf("step %d %s %s: batch client %+v, unary client %+v", i, in.Op, in.ID, got[i], want[i])
		}
	}
	if want[1].Code != CodeRejected || want[3].Code != CodeConflict || want[12].Code != CodeFailed {
		t.Errorf("script lost its point: unary outcomes %+v", want)
	}
	if s := stats.Summary(); s.Calls == 0 || s.Undecodable != 0 {
		t.Errorf("batch statistics %+v: want Batch calls, all decoded", s)
	}
}

// TestBatchClientCoalesces: operations issued at once to one node travel
// in shared Batch calls, and admission stays exact: of eight 1-unit holds
// on a 4-unit resource in one instant, four are accepted.
func TestBatchClientCoalesces(t *testing.T) {
	plain, batch, stats := batchNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := plain.EnsureResource(ctx, "cpu", 4); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	const n = 8
	outs := make([]Output, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			outs[i], _ = batch.Invoke(ctx, Input{Op: OpHold, ID: fmt.Sprintf("h%d", i), Parts: []Part{{Resource: "cpu", Amount: 1}},
				Duration: 60_000, NotBefore: base, Deadline: base + 60_000})
		})
	}
	close(start)
	wg.Wait()
	codes := map[Code]int{}
	for _, o := range outs {
		codes[o.Code]++
	}
	if codes[CodeOK] != 4 || codes[CodeRejected] != 4 {
		t.Errorf("outcomes %v, want 4 ok and 4 rejected", codes)
	}
	s := stats.Summary()
	t.Logf("batching: %s", s.Text())
	if s.Ops != n || s.Multi == 0 {
		t.Errorf("batch statistics %+v: want %d operations, some sharing a call", s, n)
	}
}

// TestBatchClientTransportFailures: a Batch call that fails as a whole
// leaves a write unknown unless the failure proves nothing was sent (a
// refused connection); a failed read is simply failed.
func TestBatchClientTransportFailures(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := ln.Addr().String()
		ln.Close()
		return a
	}
	// silent accepts connections and never answers (a paused node).
	silent := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var conns []net.Conn
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		return ln.Addr().String()
	}
	hold := Input{Op: OpHold, ID: "x", Parts: []Part{{Resource: "cpu", Amount: 1}}, Duration: 60_000, NotBefore: 1e12, Deadline: 1e12 + 60_000}
	for _, tc := range []struct {
		name string
		addr func(*testing.T) string
		in   Input
		want Code
	}{
		{"refused hold", refused, hold, CodeFailed},
		{"refused commit", refused, Input{Op: OpCommit, ID: "known"}, CodeFailed},
		{"refused get", refused, Input{Op: OpGet, ID: "known"}, CodeFailed},
		{"silent hold", silent, hold, CodeUnknown},
		{"silent commit", silent, Input{Op: OpCommit, ID: "known"}, CodeUnknown},
		{"silent cancel", silent, Input{Op: OpCancel, ID: "known"}, CodeUnknown},
		{"silent get", silent, Input{Op: OpGet, ID: "known"}, CodeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			ids := NewIDMap()
			ids.set("known", "r-1")
			b, err := NewBatchClient(addr, NewConnectClient(addr, ids, ConnectOptions{}), &BatchStats{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			out, err := b.Invoke(ctx, tc.in)
			if out.Code != tc.want || err == nil {
				t.Errorf("%s: %+v (err %v), want %s with the error", tc.in.Op, out, err, tc.want)
			}
		})
	}
}

// TestBatchSummary: sizes land in their buckets, calls of one operation
// do not count as shared, and the line names every figure.
func TestBatchSummary(t *testing.T) {
	s := &BatchStats{}
	for _, n := range []int{1, 1, 2, 3, 4, 5, 8, 9, 40} {
		s.add(n)
	}
	s.undecodable()
	got := s.Summary()
	want := BatchSummary{Calls: 9, Ops: 73, Multi: 7, OpsInMulti: 71, Max: 40, Undecodable: 1,
		Sizes: map[string]int{"1": 2, "2": 1, "3-4": 2, "5-8": 2, "9+": 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	line := "9 Batch calls carrying 73 operations (mean 8.11, max 40); 7 calls with more than one operation carried 71; by size 1:2 2:1 3-4:2 5-8:2 9+:2"
	if got.Text() != line {
		t.Errorf("text %q, want %q", got.Text(), line)
	}
}

// TestConfigClientMode: the client mode defaults to unary and anything
// but unary or batch is refused, naming the field.
func TestConfigClientMode(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", ClientUnary, ""},
		{ClientUnary, ClientUnary, ""},
		{ClientBatch, ClientBatch, ""},
		{"grpc", "", `Client must be "unary" or "batch", got "grpc"`},
	} {
		c, err := Config{Dir: "x", Duration: time.Second, Client: tc.in}.withDefaults()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Client %q: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || c.Client != tc.want):
			t.Errorf("Client %q: %q, %v; want %q", tc.in, c.Client, err, tc.want)
		}
	}
}
