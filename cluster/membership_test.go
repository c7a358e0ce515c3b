package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDeadServerRemovalNeverBelowQuorum: in a five-server cluster a server
// that leaves gracefully is removed at once, a crashed one after
// DeadServerGrace, and once the configuration is down to MinQuorum (3)
// voters a further crash removes nobody while writes keep working.
func TestDeadServerRemovalNeverBelowQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("five-server cluster")
	}
	c := newCluster(t, 5, nil)
	c.waitVoters(5)
	apply(t, c.nodes[0], "a|1")

	// Graceful leave: removed without waiting for the grace period.
	left := c.follower()
	c.shutdown(left)
	c.waitVoters(4)

	// Crash: removed after DeadServerGrace.
	crashed := c.follower()
	crashedAt := time.Now()
	c.crash(crashed)
	c.waitVoters(3)
	if d := time.Since(crashedAt); d < time.Second {
		t.Fatalf("dead server removed after %s, before DeadServerGrace", d)
	}

	// At MinQuorum: another crash must not shrink the configuration.
	second := c.follower()
	c.crash(second)
	l := c.leader()
	apply(t, l, "b|2")
	// Not a fixed sleep: wait until the leader's gossip has called the
	// second crashed server failed for longer than DeadServerGrace — the
	// point after which the first crash above was removed — and then for
	// three more membership rounds, each of which would have removed it.
	waitFor(t, 30*time.Second, "the leader to see the second crashed server failed past DeadServerGrace", func() bool {
		p, ok := l.node.gossip.snapshot()[second.node.ID()]
		return ok && p.status == statusFailed && time.Since(p.since) > time.Second
	})
	rounds := l.node.reconcileRounds.Load()
	waitFor(t, 30*time.Second, "three membership rounds past the grace", func() bool {
		return l.node.reconcileRounds.Load() >= rounds+3
	})
	if conf := c.config(c.leader()); len(conf) != 3 {
		t.Fatalf("configuration shrank below MinQuorum: %v", conf)
	}
	for _, tn := range c.running() {
		if got := readEntries(t, tn); len(got) != 2 {
			t.Fatalf("%s entries = %q", tn.name, got)
		}
	}
	for _, m := range l.node.Members() {
		if m.ID == left.node.ID() || m.ID == crashed.node.ID() {
			if m.Role != "none" {
				t.Errorf("removed server %s still has role %s", m.ID, m.Role)
			}
		}
	}
}

// TestGossipEncryption: servers sharing a gossip key form a cluster; a
// server with another key is never admitted.
func TestGossipEncryption(t *testing.T) {
	key := []byte("0123456789abcdef")
	c := newCluster(t, 3, func(cfg *Config) { cfg.GossipKey = key })
	c.waitVoters(3)
	l := c.leader()
	stranger := c.add(3, func(cfg *Config) { cfg.GossipKey = []byte("fedcba9876543210") })
	c.start(stranger)
	// Not a fixed sleep: wait until the stranger has tried to join (and
	// failed: nobody decrypts its packets) twice, then for three of the
	// leader's membership rounds, each of which would have added it.
	waitFor(t, 30*time.Second, "the stranger's join attempts", func() bool {
		return stranger.node.joinFailures.Load() >= 2
	})
	rounds := l.node.reconcileRounds.Load()
	waitFor(t, 30*time.Second, "three membership rounds after the attempts", func() bool {
		return l.node.reconcileRounds.Load() >= rounds+3
	})
	for _, m := range l.node.Members() {
		if m.ID == stranger.node.ID() {
			t.Fatalf("server with the wrong gossip key admitted: %+v", m)
		}
	}
	if len(c.config(l)) != 3 {
		t.Fatalf("configuration changed: %v", c.config(l))
	}
}

// TestGracefulLeaderShutdownHandsOver: a leader that shuts down gracefully
// transfers leadership first and leaves gossip, so the new leader removes it
// from the configuration and writes go on; forwarded writes and leadership
// show up in the metrics.
func TestGracefulLeaderShutdownHandsOver(t *testing.T) {
	regs := map[string]*prometheus.Registry{}
	var mu sync.Mutex
	c := newCluster(t, 3, func(cfg *Config) {
		r := prometheus.NewRegistry()
		mu.Lock()
		regs[cfg.NodeName] = r
		mu.Unlock()
		cfg.Registerer = r
	})
	c.waitVoters(3)
	f := c.follower()
	apply(t, f, "a|1")
	mu.Lock()
	freg, lreg := regs[f.name], regs[c.leader().name]
	mu.Unlock()
	if got := metricValue(t, freg, "ledgerd_forwarded_writes_total"); got < 1 {
		t.Errorf("follower forwarded_writes_total = %v, want >= 1", got)
	}
	if got := metricValue(t, lreg, "ledgerd_raft_is_leader"); got != 1 {
		t.Errorf("leader ledgerd_raft_is_leader = %v", got)
	}
	// The write is acknowledged once the leader applied it; the follower
	// catches up a moment later.
	waitFor(t, 5*time.Second, "follower applied index metric", func() bool {
		return metricValue(t, freg, "ledgerd_fsm_applied_index") >= 1
	})

	old := c.leader()
	oldID := old.node.ID()
	c.shutdown(old)
	l := c.leader()
	waitFor(t, 10*time.Second, "old leader removed after leaving", func() bool {
		_, still := c.config(c.leader())[oldID]
		return !still
	})
	apply(t, l, "b|2")
	for _, tn := range c.running() {
		if got := readEntries(t, tn); len(got) != 2 {
			t.Fatalf("%s entries %q", tn.name, got)
		}
	}
}

func metricValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
		return sum
	}
	t.Fatalf("metric %s not found", name)
	return 0
}
