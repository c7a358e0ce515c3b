package cluster

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// TestReadyTurnsFalseWithoutLeader: after a crash of two of three
// servers the survivor must stop answering ready once it knows no leader,
// and answer ready again once a leader is back. It reports how long each
// took.
func TestReadyTurnsFalseWithoutLeader(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	apply(t, c.leader(), "k|v")
	waitFor(t, 20*time.Second, "every node ready", func() bool {
		for _, tn := range c.running() {
			if !tn.node.Ready() {
				return false
			}
		}
		return true
	})
	l := c.leader()
	var survivor, other *tnode
	for _, tn := range c.running() {
		if tn != l {
			if survivor == nil {
				survivor = tn
			} else {
				other = tn
			}
		}
	}
	killed := time.Now()
	c.crash(l)
	c.crash(other)
	waitFor(t, 15*time.Second, "the survivor to stop answering ready", func() bool { return !survivor.node.Ready() })
	notReady := time.Since(killed)
	if why := survivor.node.NotReadyReason(); why == "" {
		t.Fatal("not ready without a reason")
	}
	t.Logf("survivor not ready %s after the crash of two of three (%q; heartbeat timeout 400ms)",
		notReady.Round(time.Millisecond), survivor.node.NotReadyReason())
	if !strings.Contains(survivor.node.NotReadyReason(), "leader") {
		t.Fatalf("reason %q does not name the missing leader", survivor.node.NotReadyReason())
	}
	if got := gaugeValue(t, survivor.node, "ledgerd_ready"); got != 0 {
		t.Fatalf("ledgerd_ready = %v while Ready is false", got)
	}
	back := time.Now()
	c.restart(other)
	waitFor(t, 30*time.Second, "the survivor to answer ready again", survivor.node.Ready)
	t.Logf("survivor ready %s after a second server restarted", time.Since(back).Round(time.Millisecond))
	if got := gaugeValue(t, survivor.node, "ledgerd_ready"); got != 1 {
		t.Fatalf("ledgerd_ready = %v while Ready is true", got)
	}
}

// gatedFSM blocks Apply while its gate is held, to make a replica lag.
type gatedFSM struct {
	*kvFSM
	gate sync.Mutex
}

func (g *gatedFSM) Apply(l *raft.Log) any {
	g.gate.Lock()
	defer g.gate.Unlock()
	return g.kvFSM.Apply(l)
}

// TestReadyFalseWhileFollowerLags: a follower whose FSM stops applying
// reports not ready once it trails the leader's commit index by more
// than ReadyLag entries, and ready again once it has caught up.
func TestReadyFalseWhileFollowerLags(t *testing.T) {
	gated := map[string]*gatedFSM{}
	var mu sync.Mutex
	c := &tcluster{t: t}
	for range 3 {
		tn := c.add(3, func(cfg *Config) { cfg.ReadyLag = 5 })
		tn.wrap = func(f *kvFSM) raft.FSM {
			g := &gatedFSM{kvFSM: f}
			mu.Lock()
			gated[tn.name] = g
			mu.Unlock()
			return g
		}
	}
	for _, tn := range c.nodes {
		c.start(tn)
	}
	t.Cleanup(c.stopAll)
	c.waitVoters(3)
	f := c.follower()
	waitFor(t, 20*time.Second, "the follower ready", f.node.Ready)
	g := gated[f.name]
	g.gate.Lock()
	held := true
	release := func() {
		if held {
			held = false
			g.gate.Unlock()
		}
	}
	t.Cleanup(release) // before stopAll: raft waits for the FSM to stop
	l := c.leader()
	for i := range 20 {
		apply(t, l, fmt.Sprintf("lag%d|v%d", i, i))
	}
	waitFor(t, 15*time.Second, "the lagging follower to stop answering ready", func() bool { return !f.node.Ready() })
	if why := f.node.NotReadyReason(); !strings.Contains(why, "catching up") {
		t.Fatalf("reason %q, want catching up", why)
	}
	release()
	waitFor(t, 15*time.Second, "the follower ready after catching up", f.node.Ready)
	if got := f.fsm.entries(); len(got) < 20-5 {
		t.Fatalf("follower ready with %d of 20 entries applied, more than ReadyLag 5 behind", len(got))
	}
}

// gaugeValue reads one of n's gauges through a private registry.
func gaugeValue(t *testing.T, n *Node, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := n.m.register(reg); err != nil {
		t.Fatal(err)
	}
	defer n.m.unregister(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// tickGatedFSM blocks applying a tick until release is closed, and
// closes blocked when the first tick arrives.
type tickGatedFSM struct {
	*kvFSM
	once    sync.Once
	blocked chan struct{}
	release chan struct{}
}

func (g *tickGatedFSM) Apply(l *raft.Log) any {
	if strings.HasPrefix(string(l.Data), "tick") {
		g.once.Do(func() { close(g.blocked) })
		<-g.release
	}
	return g.kvFSM.Apply(l)
}

// TestLeaderReadyWithoutWaitingForItsTick: a leader is ready once its
// term's barrier is applied (every entry of an earlier term, the only
// ones that can have been acknowledged without its FSM), even while the
// FSM is still applying the first tick of its term. A node restarted
// after a long stop otherwise waited for that tick to fire every timer
// of the downtime before it answered ready.
func TestLeaderReadyWithoutWaitingForItsTick(t *testing.T) {
	c := &tcluster{t: t}
	g := &tickGatedFSM{blocked: make(chan struct{}), release: make(chan struct{})}
	tn := c.add(1, func(cfg *Config) {
		cfg.Tick = func() []byte { return []byte("tick") }
		cfg.TickInterval = 5 * time.Millisecond
	})
	tn.wrap = func(f *kvFSM) raft.FSM { g.kvFSM = f; return g }
	released := false
	release := func() {
		if !released {
			released = true
			close(g.release)
		}
	}
	t.Cleanup(c.stopAll)
	t.Cleanup(release) // runs first: raft waits for the FSM to stop
	c.start(tn)
	select {
	case <-g.blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("no tick reached the FSM within 20s")
	}
	waitFor(t, 10*time.Second, "the leader ready while its first tick is being applied", tn.node.Ready)
	release()
}
