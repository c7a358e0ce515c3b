package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// poisonFSM panics on the command "poison|..." when its node is the
// victim, the way the ledger's FSM panics on an entry it cannot decode.
type poisonFSM struct {
	*kvFSM
	name   string
	victim *atomic.Value  // name of the node that cannot apply the entry
	at     *atomic.Uint64 // if set, receives the entry's index
}

func (p *poisonFSM) Apply(l *raft.Log) any {
	if v, _ := p.victim.Load().(string); v == p.name && strings.HasPrefix(string(l.Data), "poison|") {
		if p.at != nil {
			p.at.Store(l.Index)
		}
		panic(fmt.Sprintf("cannot decode entry %d", l.Index))
	}
	return p.kvFSM.Apply(l)
}

// TestStopOnEntryItCannotApply: the FSM wrapper stops the process with a
// message that names the entry and the fix.
func TestStopOnEntryItCannotApply(t *testing.T) {
	victim := &atomic.Value{}
	victim.Store("me")
	f := newTrackedFSM(&poisonFSM{kvFSM: newKVFSM(), name: "me", victim: victim})
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte("a|1")})
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte("poison|x")})
	}()
	for _, want := range []string{"log entry 2", "cannot decode entry 2", "upgrade it", "remove-peer", cannotApplyDoc} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic message lacks %q: %s", want, msg)
		}
	}
	if f.Applied() != 1 {
		t.Fatalf("applied %d after the stop, want 1", f.Applied())
	}
}

// TestCorruptReplicaRecoveredByWipingIt follows the procedure for one
// damaged replica: a follower stops on an entry the others apply; the
// operator stops it, moves its data dir aside, starts it empty (a new
// ID) and removes the old ID; it catches up from the leader's snapshot
// and holds exactly the others' entries.
func TestCorruptReplicaRecoveredByWipingIt(t *testing.T) {
	victim := &atomic.Value{}
	victim.Store("")
	stopped := make(chan string, 1)
	c := &tcluster{t: t}
	for range 3 {
		tn := c.add(3, func(cfg *Config) {
			cfg.SnapshotThreshold, cfg.TrailingLogs = 4, 2
			cfg.onApplyPanic = func(msg string) {
				select {
				case stopped <- msg:
				default:
				}
			}
		})
		tn.wrap = func(f *kvFSM) raft.FSM { return &poisonFSM{kvFSM: f, name: tn.name, victim: victim} }
	}
	for _, tn := range c.nodes {
		c.start(tn)
	}
	t.Cleanup(c.stopAll)
	c.waitVoters(3)
	l, bad := c.leader(), c.follower()
	victim.Store(bad.name)
	for i := range 5 {
		apply(t, l, fmt.Sprintf("k%d|v%d", i, i))
	}
	apply(t, l, "poison|p") // committed: the two others apply it
	var msg string
	select {
	case msg = <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the victim did not stop on the entry it cannot apply")
	}
	if !strings.Contains(msg, "log entry") || !strings.Contains(msg, cannotApplyDoc) {
		t.Fatalf("stop message %q", msg)
	}
	t.Logf("victim stopped: %s", msg)
	for i := 5; i < 10; i++ {
		apply(t, l, fmt.Sprintf("k%d|v%d", i, i)) // the others go on
	}

	// The procedure: stop it, move its data dir aside, start it empty,
	// remove the old ID.
	oldID := bad.node.ID()
	c.crash(bad)
	if err := os.Rename(bad.dir, bad.dir+".broken"); err != nil {
		t.Fatal(err)
	}
	// The leader's snapshot is what the new server will get: take one now
	// so the log it keeps (TrailingLogs 2) does not reach back to index 1.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.node.waitFuture(ctx, "snapshot", l.node.raft.Snapshot()); err != nil {
		t.Fatal(err)
	}
	bad.wrap = nil
	c.restart(bad)
	if bad.node.ID() == oldID {
		t.Fatal("the emptied server kept its ID")
	}
	// The leader may have removed the old ID already, when the new one
	// joined from its address (membership.go): then it is unknown.
	if err := l.node.RemoveServer(ctx, oldID); err != nil && !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("remove-peer %s: %v", oldID, err)
	}
	waitFor(t, 30*time.Second, "the new ID a voter, the old one gone", func() bool {
		conf := c.config(c.leader())
		_, hasOld := conf[oldID]
		return !hasOld && conf[bad.node.ID()] == raft.Voter && len(conf) == 3
	})
	want := readEntries(t, c.leader())
	if got := readEntries(t, bad); !slices.Equal(got, want) {
		t.Fatalf("rejoined server holds %q, the leader %q", got, want)
	}
	if !slices.Contains(want, "p") || len(want) != 11 {
		t.Fatalf("leader entries %q, want 11 including the poison entry", want)
	}
	if bad.node.fsm.restored.Load() == 0 {
		t.Fatal("the new server did not catch up from the leader's snapshot")
	}
}

// TestRecoverWhenEveryReplicaStopsOnAnEntry: a committed entry no replica
// can apply stops all of them; recovery on one survivor with the log
// truncated before that entry brings back every acknowledged write, and
// only the entry (never acknowledged) and what followed it are lost.
func TestRecoverWhenEveryReplicaStopsOnAnEntry(t *testing.T) {
	victim := &atomic.Value{}
	victim.Store("")
	var poisonAt atomic.Uint64
	stopped := make(chan string, 3)
	c := &tcluster{t: t}
	for range 3 {
		tn := c.add(3, func(cfg *Config) {
			cfg.onApplyPanic = func(msg string) { stopped <- msg }
		})
		tn.wrap = func(f *kvFSM) raft.FSM {
			return &poisonFSM{kvFSM: f, name: "everyone", victim: victim, at: &poisonAt}
		}
	}
	for _, tn := range c.nodes {
		c.start(tn)
	}
	t.Cleanup(c.stopAll)
	c.waitVoters(3)
	l := c.leader()
	var acked []string
	for i := range 5 {
		apply(t, l, fmt.Sprintf("k%d|v%d", i, i))
		acked = append(acked, fmt.Sprintf("v%d", i))
	}
	victim.Store("everyone")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := l.node.Apply(ctx, []byte("poison|p")); err == nil {
		t.Fatal("the poison entry was acknowledged")
	}
	for range 3 {
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			t.Fatal("not every replica stopped on the entry")
		}
	}
	at := poisonAt.Load()
	for _, tn := range c.nodes {
		c.crash(tn)
	}
	survivor := c.nodes[0]
	info, err := Recover(RecoverConfig{DataDir: survivor.dir, RaftAddr: survivor.raftAddr, TruncateFrom: at, Logger: testLogger()},
		&poisonFSM{kvFSM: newKVFSM(), name: "everyone", victim: victim, at: &poisonAt})
	if err != nil {
		t.Fatalf("recover with the log truncated before %d: %v", at, err)
	}
	if info.Dropped == 0 || info.LastIndex != at-1 {
		t.Fatalf("recover info %+v, want entries from %d dropped", info, at)
	}
	t.Logf("entry %d stopped every replica; recovery dropped %d entries", at, info.Dropped)
	for _, tn := range c.nodes[1:] {
		if err := os.RemoveAll(tn.dir); err != nil {
			t.Fatal(err)
		}
	}
	c.restart(survivor)
	if got := readEntries(t, survivor); !slices.Equal(got, acked) {
		t.Fatalf("recovered entries %q, want every acknowledged write %q", got, acked)
	}
	apply(t, survivor, "after|recovery")
}
