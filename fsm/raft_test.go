package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestRaftCluster runs the FSM under hashicorp/raft: three in-memory
// nodes, writes through the leader, then every replica must hold
// byte-identical state, and a raft user snapshot must restore to it.
func TestRaftCluster(t *testing.T) {
	const n = 3
	type node struct {
		fsm   *FSM
		raft  *raft.Raft
		trans *raft.InmemTransport
	}
	nodes := make([]*node, n)
	var servers []raft.Server
	for i := range nodes {
		f, err := New(propConfig)
		if err != nil {
			t.Fatal(err)
		}
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("node%d", i)))
		nodes[i] = &node{fsm: f, trans: trans}
		servers = append(servers, raft.Server{ID: raft.ServerID(addr), Address: addr})
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	for _, nd := range nodes {
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(nd.trans.LocalAddr())
		conf.Logger = hclog.NewNullLogger()
		// Long enough that a loaded, race-enabled run does not lose its
		// leader to a missed heartbeat in the middle of the stream.
		conf.HeartbeatTimeout = 500 * time.Millisecond
		conf.ElectionTimeout = 500 * time.Millisecond
		conf.LeaderLeaseTimeout = 250 * time.Millisecond
		conf.CommitTimeout = 5 * time.Millisecond
		logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, logs, logs, snaps, nd.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(conf, nd.fsm, logs, logs, snaps, nd.trans)
		if err != nil {
			t.Fatal(err)
		}
		nd.raft = r
	}
	defer func() {
		for _, nd := range nodes {
			_ = nd.raft.Shutdown().Error()
		}
	}()

	// raft says when leadership changes; wait for a node to lead.
	elected := make(chan raft.Observation, 16)
	for _, nd := range nodes {
		nd.raft.RegisterObserver(raft.NewObserver(elected, false, func(o *raft.Observation) bool {
			_, ok := o.Data.(raft.LeaderObservation)
			return ok
		}))
	}
	var leader *node
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for leader == nil {
		for _, nd := range nodes {
			if nd.raft.State() == raft.Leader {
				leader = nd
			}
		}
		if leader != nil {
			break
		}
		select {
		case <-elected:
		case <-deadline.C:
			t.Fatal("no leader elected within 10s")
		}
	}

	g := &gen{r: rand.New(rand.NewPCG(42, 0x1ed9e4)), now: 1_000}
	okCount := 0
	for _, cmd := range g.stream(t, 150) {
		if _, err := Decode(cmd); err != nil {
			t.Fatal("generator produced a malformed command")
		}
		fut := leader.raft.Apply(cmd, 5*time.Second)
		if err := fut.Error(); err != nil {
			t.Fatal(err)
		}
		b, ok := fut.Response().([]byte)
		if !ok {
			t.Fatalf("Apply returned %T, want []byte", fut.Response())
		}
		res, err := DecodeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		if res.GetStatus() == OK {
			okCount++
		}
		if r := res.GetReservation(); r != nil {
			g.ids = append(g.ids, r.GetId())
		}
	}
	if okCount == 0 {
		t.Fatal("no command succeeded")
	}
	if err := leader.raft.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	want := leader.fsm.AppliedIndex()
	for _, nd := range nodes {
		for deadline := time.Now().Add(10 * time.Second); nd.fsm.AppliedIndex() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("replica stuck at %d < %d", nd.fsm.AppliedIndex(), want)
			}
			select {
			case <-nd.fsm.Notify():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	ref := snapshotBytes(t, leader.fsm)
	for i, nd := range nodes {
		if got := snapshotBytes(t, nd.fsm); !bytes.Equal(got, ref) {
			t.Fatalf("replica %d state differs from the leader's", i)
		}
	}

	// A raft snapshot goes through Snapshot/Persist and restores to the
	// same state.
	fut := leader.raft.Snapshot()
	if err := fut.Error(); err != nil {
		t.Fatal(err)
	}
	meta, rc, err := fut.Open()
	if err != nil {
		t.Fatal(err)
	}
	// Barriers and no-ops never reach the FSM, so raft's index may be
	// ahead of the last applied command.
	if meta.Index < want {
		t.Fatalf("raft snapshot at index %d, want >= %d", meta.Index, want)
	}
	fresh, err := New(propConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Restore(rc); err != nil {
		t.Fatal(err)
	}
	if got := snapshotBytes(t, fresh); !bytes.Equal(got, ref) {
		t.Fatal("state restored from the raft snapshot differs")
	}
}
