package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDevNodeAppliesStampsAndTicks(t *testing.T) {
	c := &tcluster{t: t}
	tn := c.add(0, func(cfg *Config) {
		cfg.Dev = true
		cfg.Tick = func() []byte { return []byte("tick") }
		cfg.TickInterval = 50 * time.Millisecond
	})
	c.start(tn)
	t.Cleanup(c.stopAll)
	c.leader()

	if got := apply(t, tn, "r1|hello"); got != "ok:1" {
		t.Fatalf("first apply = %q, want ok:1", got)
	}
	if got := apply(t, tn, "r1|hello"); got != "ok:1" {
		t.Fatalf("retried apply = %q, want the first result ok:1", got)
	}
	ctx := context.Background()
	_, err := tn.node.Apply(ctx, []byte("fail|boom"))
	var ae *ApplyError
	if !errors.As(err, &ae) || !strings.Contains(ae.Msg, "refused boom") {
		t.Fatalf("fsm error = %v, want ApplyError 'refused boom'", err)
	}
	if _, err := tn.node.Apply(ctx, []byte("badstamp|x")); err == nil || !strings.Contains(err.Error(), "stamp") {
		t.Fatalf("stamp error = %v, want a stamp error", err)
	}
	if got := readEntries(t, tn); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("entries = %q", got)
	}
	tn.fsm.mu.Lock()
	stamped := tn.fsm.Stamped
	tn.fsm.mu.Unlock()
	if stamped != 3 {
		t.Fatalf("stamped commands = %d, want 3 (every command passes through Stamp)", stamped)
	}
	waitFor(t, 5*time.Second, "ticks from the leader", func() bool {
		tn.fsm.mu.Lock()
		defer tn.fsm.mu.Unlock()
		return tn.fsm.Ticks >= 3
	})
	waitFor(t, 5*time.Second, "ready", tn.node.Ready)
	if m := tn.node.Members(); len(m) != 1 || m[0].Role != "leader" || m[0].Health != "alive" || m[0].RPCAddr != tn.rpcAddr {
		t.Fatalf("members = %+v", m)
	}
}

func TestThreeNodesForwardingAndLeaderFailover(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	f := c.follower()
	if got := apply(t, f, "a|one"); got != "ok:1" {
		t.Fatalf("forwarded apply = %q, want ok:1", got)
	}
	if f.node.m == nil {
		t.Fatal("no metrics")
	}
	// Linearizable read on every node sees the write at once.
	for _, tn := range c.running() {
		if got := readEntries(t, tn); !slices.Equal(got, []string{"one"}) {
			t.Fatalf("%s entries after barrier = %q", tn.name, got)
		}
	}
	var acked []string
	for i := range 20 {
		tn := c.running()[i%3]
		apply(t, tn, fmt.Sprintf("w%d|v%d", i, i))
		acked = append(acked, fmt.Sprintf("v%d", i))
	}
	old := c.leader()
	c.crash(old)
	l := c.leader()
	if l == old {
		t.Fatal("crashed node still leader")
	}
	for i := 20; i < 30; i++ {
		tn := c.running()[i%2]
		apply(t, tn, fmt.Sprintf("w%d|v%d", i, i))
		acked = append(acked, fmt.Sprintf("v%d", i))
	}
	want := append([]string{"one"}, acked...)
	for _, tn := range c.running() {
		if got := readEntries(t, tn); !slices.Equal(got, want) {
			t.Fatalf("%s lost or reordered acknowledged writes:\n got %q\nwant %q", tn.name, got, want)
		}
	}
}

// TestReadYourWritesAcrossNodes: a write acknowledged by any node is seen
// by a linearizable read on any other node started after the ack.
func TestReadYourWritesAcrossNodes(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	ctx := context.Background()
	for i := range 40 {
		w, r := c.nodes[rng.IntN(3)], c.nodes[rng.IntN(3)]
		payload := fmt.Sprintf("v%d", i)
		apply(t, w, fmt.Sprintf("k%d|%s", i, payload))
		if err := r.node.ReadBarrier(ctx); err != nil {
			t.Fatalf("read barrier on %s: %v", r.name, err)
		}
		got := r.fsm.entries()
		if len(got) != i+1 || got[i] != payload {
			t.Fatalf("write %d acked by %s, read on %s after barrier sees %d entries: %q",
				i, w.name, r.name, len(got), got)
		}
	}
}
