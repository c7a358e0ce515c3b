package fsm

import (
	"bytes"
	"errors"
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
	// currentLeader waits for a node to lead.
	currentLeader := func() *node {
		t.Helper()
		deadline := time.NewTimer(10 * time.Second)
		defer deadline.Stop()
		for {
			for _, nd := range nodes {
				if nd.raft.State() == raft.Leader {
					return nd
				}
			}
			select {
			case <-elected:
			case <-deadline.C:
				t.Fatal("no leader elected within 10s")
			}
		}
	}
	leader := currentLeader()
	// apply proposes cmd through the leader; when leadership moves under
	// load it proposes it again through the next one (replicas must agree
	// whatever the log holds, so a command that was applied before the
	// move may be applied twice).
	apply := func(cmd []byte) raft.ApplyFuture {
		t.Helper()
		for {
			fut := leader.raft.Apply(cmd, 5*time.Second)
			if err := fut.Error(); errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				leader = currentLeader()
				continue
			}
			return fut
		}
	}

	g := &gen{r: rand.New(rand.NewPCG(42, 0x1ed9e4)), now: 1_000}
	okCount := 0
	for _, cmd := range g.stream(t, 150) {
		if _, err := Decode(cmd); err != nil {
			t.Fatal("generator produced a malformed command")
		}
		fut := apply(cmd)
		if err := fut.Error(); err != nil {
			t.Fatal(err)
		}
		a, ok := fut.Response().(*Applied)
		if !ok {
			t.Fatalf("Apply returned %T, want *Applied", fut.Response())
		}
		res, err := DecodeResult(a.EncodedResult())
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
	for {
		err := leader.raft.Barrier(5 * time.Second).Error()
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			leader = currentLeader()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	want := leader.fsm.AppliedIndex()
	for _, nd := range nodes {
		deadline := time.NewTimer(10 * time.Second)
		for {
			changed := nd.fsm.Notify()
			if nd.fsm.AppliedIndex() >= want {
				break
			}
			select {
			case <-changed:
			case <-deadline.C:
				t.Fatalf("replica stuck at %d < %d", nd.fsm.AppliedIndex(), want)
			}
		}
		deadline.Stop()
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
