package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecoverLostQuorum loses two of three servers for good: it writes,
// crashes everything, wipes two data directories, recovers the survivor's
// data into a one-server cluster, starts it, and checks that every
// acknowledged write is there (from the snapshot and from the log after
// it) and that it takes writes; then a fresh server joins and receives the
// whole state.
func TestRecoverLostQuorum(t *testing.T) { forEachLogStore(t, testRecoverLostQuorum) }

func testRecoverLostQuorum(t *testing.T, store func(*Config)) {
	c := newCluster(t, 3, store)
	c.waitVoters(3)
	l := c.leader()
	var acked []string
	write := func(tn *tnode, payload string) {
		if res := apply(t, tn, "k-"+payload+"|"+payload); !strings.HasPrefix(res, "ok:") {
			t.Fatalf("write %s: %q", payload, res)
		}
		acked = append(acked, payload)
	}
	for i := range 20 {
		write(l, fmt.Sprintf("before-snap-%02d", i))
	}
	// The survivor is a follower; a snapshot on it puts part of the state
	// in the snapshot store and the rest in the log.
	survivor := c.follower()
	waitFor(t, 10*time.Second, "survivor caught up", func() bool {
		return survivor.node.AppliedIndex() >= l.node.raft.CommitIndex()
	})
	if err := survivor.node.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for i := range 10 {
		write(l, fmt.Sprintf("after-snap-%02d", i))
	}
	// An operator picks the survivor with the highest last index; here it
	// has caught up with every acknowledged write.
	waitFor(t, 10*time.Second, "survivor caught up", func() bool {
		return survivor.node.AppliedIndex() >= l.node.raft.CommitIndex()
	})
	oldID := survivor.node.ID()
	for _, tn := range c.nodes {
		c.crash(tn)
	}
	var lost []*tnode
	for _, tn := range c.nodes {
		if tn != survivor {
			if err := os.RemoveAll(tn.dir); err != nil {
				t.Fatal(err)
			}
			lost = append(lost, tn)
		}
	}

	// Bad input is refused with the field named, and nothing is touched.
	for _, bad := range []RecoverConfig{
		{RaftAddr: survivor.raftAddr},
		{DataDir: survivor.dir, RaftAddr: "no-port"},
		{DataDir: lost[0].dir, RaftAddr: lost[0].raftAddr},
	} {
		if _, err := Recover(bad, newKVFSM()); err == nil {
			t.Errorf("Recover(%+v) succeeded", bad)
		}
	}
	info, err := Recover(RecoverConfig{DataDir: survivor.dir, RaftAddr: survivor.raftAddr, Logger: testLogger()}, newKVFSM())
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if info.ID != oldID || len(info.Previous) != 3 || info.LastIndex == 0 {
		t.Fatalf("recover info = %+v, want id %s, 3 previous servers, a last index", info, oldID)
	}

	c.restart(survivor)
	if got := c.leader(); got != survivor {
		t.Fatalf("leader is %s, want the recovered %s", got.name, survivor.name)
	}
	if survivor.node.ID() != oldID {
		t.Errorf("recovered server changed id: %s -> %s", oldID, survivor.node.ID())
	}
	if got := readEntries(t, survivor); !slices.Equal(got, acked) {
		t.Fatalf("recovered state:\n got %q\nwant %q", got, acked)
	}
	write(survivor, "after-recovery")
	if conf := c.config(survivor); len(conf) != 1 {
		t.Fatalf("configuration after recovery = %v, want the survivor alone", conf)
	}

	// A fresh server (wiped data, so a new identity) joins and catches up.
	fresh := lost[0]
	c.restart(fresh)
	c.waitVoters(2)
	write(survivor, "after-join")
	if got := readEntries(t, fresh); !slices.Equal(got, acked) {
		t.Fatalf("fresh server's state:\n got %q\nwant %q", got, acked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := fresh.node.Apply(ctx, []byte("k-via-fresh|via-fresh")); err != nil {
		t.Fatalf("write through the fresh server: %v", err)
	}
}
