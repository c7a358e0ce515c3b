package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestFullClusterRestartKeepsCommittedEntries(t *testing.T) {
	forEachLogStore(t, testFullClusterRestartKeepsCommittedEntries)
}

func testFullClusterRestartKeepsCommittedEntries(t *testing.T, store func(*Config)) {
	c := newCluster(t, 3, store)
	c.waitVoters(3)
	var want []string
	for i := range 30 {
		apply(t, c.running()[i%3], fmt.Sprintf("k%d|v%d", i, i))
		want = append(want, fmt.Sprintf("v%d", i))
	}
	for _, tn := range c.nodes {
		c.crash(tn) // no leave, no transfer: like SIGKILL of every process
	}
	for _, tn := range c.nodes {
		c.restart(tn)
	}
	c.leader()
	for _, tn := range c.nodes {
		if got := readEntries(t, tn); !slices.Equal(got, want) {
			t.Fatalf("%s after restart:\n got %q\nwant %q", tn.name, got, want)
		}
	}
	// And the restarted cluster still takes writes.
	if got := apply(t, c.nodes[1], "after|restart"); got != "ok:31" {
		t.Fatalf("apply after restart = %q, want ok:31", got)
	}
}

func TestSnapshotTruncationAndRestore(t *testing.T) {
	forEachLogStore(t, testSnapshotTruncationAndRestore)
}

func testSnapshotTruncationAndRestore(t *testing.T, store func(*Config)) {
	small := func(cfg *Config) {
		cfg.SnapshotThreshold = 16
		cfg.SnapshotInterval = 50 * time.Millisecond
		cfg.TrailingLogs = 4
	}
	small = chain(small, store)
	c := newCluster(t, 3, small)
	c.waitVoters(3)
	var want []string
	for i := range 60 {
		apply(t, c.running()[i%3], fmt.Sprintf("k%d|v%d", i, i))
		want = append(want, fmt.Sprintf("v%d", i))
	}
	// Every node snapshots and truncates its log.
	for _, tn := range c.nodes {
		waitFor(t, 10*time.Second, tn.name+" snapshot and log truncation", func() bool {
			list, err := tn.node.snaps.List()
			first, _ := tn.node.logs.FirstIndex()
			return err == nil && len(list) > 0 && first > 20
		})
	}
	// A restarted node rebuilds its FSM from snapshot + remaining log.
	victim := c.nodes[2]
	c.crash(victim)
	c.restart(victim)
	if got := readEntries(t, victim); !slices.Equal(got, want) {
		t.Fatalf("after restart from snapshot:\n got %q\nwant %q", got, want)
	}
	// A brand-new server catches up by InstallSnapshot: the entries it
	// needs are no longer in anyone's log.
	joiner := c.add(3, small)
	c.start(joiner)
	c.waitVoters(4)
	if got := readEntries(t, joiner); !slices.Equal(got, want) {
		t.Fatalf("joiner after install snapshot:\n got %q\nwant %q", got, want)
	}

	// Operator snapshot save + restore: writes after the save disappear.
	l := c.leader()
	var buf bytes.Buffer
	ctx := context.Background()
	info, err := c.follower().node.SaveSnapshot(ctx, &buf)
	if err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	if info.Index == 0 || info.Size == 0 {
		t.Fatalf("snapshot info %+v", info)
	}
	apply(t, l, "lost|after-save")
	if err := c.follower().node.RestoreSnapshot(ctx, bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("restore on follower = %v, want ErrNotLeader", err)
	}
	if err := l.node.RestoreSnapshot(ctx, bytes.NewReader([]byte("junk\n"))); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("restore of junk = %v, want ErrBadSnapshot", err)
	}
	for {
		err := c.leader().node.RestoreSnapshot(ctx, bytes.NewReader(buf.Bytes()))
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotLeader) {
			t.Fatalf("restore: %v", err)
		}
	}
	for _, tn := range c.running() {
		waitFor(t, 10*time.Second, tn.name+" restored state", func() bool {
			return slices.Equal(readEntries(t, tn), want)
		})
	}
	if got := apply(t, c.nodes[0], "new|after-restore"); got != fmt.Sprintf("ok:%d", len(want)+1) {
		t.Fatalf("apply after restore = %q", got)
	}
}

func TestWipedNodeRejoinsUnderNewID(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	for i := range 10 {
		apply(t, c.nodes[i%3], fmt.Sprintf("k%d|v%d", i, i))
	}
	victim := c.follower()
	oldID := victim.node.ID()
	c.crash(victim)
	if err := os.RemoveAll(victim.dir); err != nil {
		t.Fatal(err)
	}
	c.restart(victim) // same addresses, empty data dir
	if victim.node.ID() == oldID {
		t.Fatalf("wiped node kept its old id %s", oldID)
	}
	waitFor(t, 30*time.Second, "new id voter replaces old id", func() bool {
		conf := c.config(c.leader())
		_, hasOld := conf[oldID]
		return !hasOld && conf[victim.node.ID()] == raft.Voter && len(conf) == 3
	})
	apply(t, c.leader(), "k10|v10")
	if got := readEntries(t, victim); len(got) != 11 {
		t.Fatalf("rejoined node has %d entries, want 11: %q", len(got), got)
	}
}

// TestRetryAfterLeaderChangeIsExactlyOnce runs writers with request IDs
// while the leader is killed; writers retry failed writes (on any node) with
// the same ID. Every write must end up applied exactly once, and every
// acknowledged result must be the one the FSM recorded.
func TestRetryAfterLeaderChangeIsExactlyOnce(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	const writers, perWriter = 4, 25
	var mu sync.Mutex
	results := map[string]string{}
	nodes := slices.Clone(c.nodes)
	var killed sync.Map
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%d", w, i)
				for attempt := 0; ; attempt++ {
					tn := nodes[rng.IntN(len(nodes))]
					if _, dead := killed.Load(tn); dead {
						continue
					}
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					res, err := tn.node.Apply(ctx, []byte(id+"|"+id))
					cancel()
					if err == nil {
						mu.Lock()
						results[id] = string(res)
						mu.Unlock()
						break
					}
					if !isRetryable(err) && !errors.Is(err, ErrShutdown) || attempt > 200 {
						t.Errorf("write %s: %v", id, err)
						return
					}
				}
			}
		}()
	}
	// Kill the leader once the writers are under way (some writes
	// acknowledged), not after a fixed pause.
	waitFor(t, 30*time.Second, "the first acknowledged writes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) >= writers
	})
	old := c.leader()
	killed.Store(old, true)
	c.crash(old)
	wg.Wait()
	if t.Failed() {
		return
	}
	l := c.leader()
	for w := range writers {
		for i := range perWriter {
			id := fmt.Sprintf("w%d-%d", w, i)
			if n := l.fsm.count(id); n != 1 {
				t.Errorf("%s applied %d times, want exactly once", id, n)
			}
			if got := apply(t, l, id+"|"+id); got != results[id] {
				t.Errorf("%s: acknowledged %q but the ledger says %q", id, results[id], got)
			}
		}
	}
}

func TestNoLeaderFailsWithinLeaderWait(t *testing.T) {
	c := &tcluster{t: t}
	tn := c.add(3, func(cfg *Config) { cfg.LeaderWait = 300 * time.Millisecond })
	c.start(tn) // expects 3 servers that never come
	t.Cleanup(c.stopAll)
	start := time.Now()
	_, err := tn.node.Apply(context.Background(), []byte("x|y"))
	if !errors.Is(err, ErrNoLeader) {
		t.Fatalf("apply without leader = %v, want ErrNoLeader", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("ErrNoLeader after %s, want about LeaderWait", d)
	}
	if err := tn.node.ReadBarrier(context.Background()); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("read barrier without leader = %v, want ErrNoLeader", err)
	}
	if tn.node.Ready() {
		t.Fatal("ready without a leader")
	}
	c.crash(tn)
	if _, err := tn.node.Apply(context.Background(), []byte("x|y")); !errors.Is(err, ErrShutdown) {
		t.Fatalf("apply after shutdown = %v, want ErrShutdown", err)
	}
}
