package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// entries returns log commands first..last with data "e<index>".
func entries(first, last uint64) []*raft.Log {
	var out []*raft.Log
	for i := first; i <= last; i++ {
		out = append(out, &raft.Log{Index: i, Type: raft.LogCommand, Data: fmt.Appendf(nil, "e%d", i)})
	}
	return out
}

// windowsOf returns the window numbers of a claim.
func windowsOf(cl checkClaim) []uint64 {
	var w []uint64
	for _, s := range cl.Sums {
		w = append(w, s.Window)
	}
	return w
}

func TestLogCheckSameLogsMatch(t *testing.T) {
	a, b := newLogCheck(8), newLogCheck(8)
	a.observe(entries(1, 40)...)
	for _, l := range entries(1, 40) { // one at a time: batching must not matter
		b.observe(l)
	}
	if got, want := fmt.Sprint(windowsOf(a.claim())), "[0 1 2 3 4]"; got != want {
		t.Fatalf("claimed windows %s, want %s (5 is open)", got, want)
	}
	if got, want := a.claim(), b.claim(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("same entries, different claims: %v and %v", got, want)
	}
	for range 2 { // the same claim twice: each window counts once
		if bad := a.peerClaim("b", b.claim()); len(bad) != 0 {
			t.Fatalf("mismatches on the same log: %v", bad)
		}
	}
	if m, mm := a.counts(); m != 5 || mm != 0 {
		t.Fatalf("matched %d, mismatched %d; want 5 and 0", m, mm)
	}
	if bad := a.peerClaim("c", checkClaim{Alg: checkAlg, Size: 16, Sums: []windowSum{{Window: 1, Sum: 1}}}); len(bad) != 0 {
		t.Fatalf("a claim with another window size was compared: %v", bad)
	}
	if bad := a.peerClaim("d", checkClaim{Alg: "other", Size: 8, Sums: []windowSum{{Window: 1, Sum: 1}}}); len(bad) != 0 {
		t.Fatalf("a claim summed another way was compared: %v", bad)
	}
}

func TestLogCheckFindsTheWindow(t *testing.T) {
	cases := []struct {
		name   string
		change func([]*raft.Log) []*raft.Log // what the other node applied instead of entries(1, 40)
		window uint64
	}{
		{"other data", func(ls []*raft.Log) []*raft.Log { ls[12].Data = []byte("x13"); return ls }, 1},
		{"other type", func(ls []*raft.Log) []*raft.Log { ls[21].Type = raft.LogConfiguration; return ls }, 2},
		{"an entry missing", func(ls []*raft.Log) []*raft.Log { return append(ls[:29:29], ls[30:]...) }, 3},
		{"other index", func(ls []*raft.Log) []*raft.Log {
			ls[25].Index = 27
			ls[26].Index = 26
			ls[25], ls[26] = ls[26], ls[25]
			return ls
		}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newLogCheck(8), newLogCheck(8)
			a.observe(entries(1, 40)...)
			b.observe(c.change(entries(1, 40))...)
			bad := a.peerClaim("b", b.claim())
			if len(bad) != 1 {
				t.Fatalf("%d mismatches (%v), want 1", len(bad), bad)
			}
			m := bad[0]
			if m.Window != c.window || m.First != c.window*8 || m.Last != c.window*8+7 || m.Peer != "b" || m.Ours == m.Theirs {
				t.Fatalf("mismatch %+v, want window %d (entries %d-%d) with peer b", m, c.window, c.window*8, c.window*8+7)
			}
			if !strings.Contains(m.String(), fmt.Sprintf("entries %d-%d", m.First, m.Last)) {
				t.Fatalf("message %q does not name the entries", m.String())
			}
			if matched, mismatched := a.counts(); matched != 4 || mismatched != 1 {
				t.Fatalf("matched %d, mismatched %d; want 4 and 1", matched, mismatched)
			}
		})
	}
}

// TestLogCheckRestoreLeavesWindowOut: a node that restored a snapshot
// inside a window does not claim it, and still compares the windows it
// applied whole.
func TestLogCheckRestoreLeavesWindowOut(t *testing.T) {
	cases := []struct {
		snapshot uint64
		windows  string
	}{
		{13, "[2 3 4]"}, // inside window 1 (8-15)
		{15, "[2 3 4]"}, // its last index: window 2 starts right after
		{7, "[1 2 3 4]"},
		{0, "[0 1 2 3 4]"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.snapshot), func(t *testing.T) {
			whole, restored := newLogCheck(8), newLogCheck(8)
			whole.observe(entries(1, 40)...)
			restored.observe(entries(1, 5)...) // what the restore replaces
			restored.restored(c.snapshot)
			restored.observe(entries(c.snapshot+1, 40)...)
			if got := fmt.Sprint(windowsOf(restored.claim())); got != c.windows {
				t.Fatalf("claimed windows %s, want %s", got, c.windows)
			}
			if bad := whole.peerClaim("r", restored.claim()); len(bad) != 0 {
				t.Fatalf("mismatches after a restore: %v", bad)
			}
			if bad := restored.peerClaim("w", whole.claim()); len(bad) != 0 {
				t.Fatalf("mismatches after a restore: %v", bad)
			}
		})
	}
}

// TestLogCheckPeerAhead: a claim for a window this node has not finished
// is compared when it finishes.
func TestLogCheckPeerAhead(t *testing.T) {
	a, b := newLogCheck(8), newLogCheck(8)
	b.observe(entries(1, 30)...)
	changed := entries(31, 50)
	changed[4].Data = []byte("other") // index 35, window 4 (32-39)
	b.observe(changed...)
	a.observe(entries(1, 25)...)
	if bad := a.peerClaim("b", b.claim()); len(bad) != 0 {
		t.Fatalf("mismatches before a reached the changed window: %v", bad)
	}
	// completed reports whether a's newest complete window is w.
	completed := func(w uint64) bool { s := a.claim().Sums; return len(s) > 0 && s[len(s)-1].Window == w }
	bad := a.observe(entries(26, 33)...)
	if !completed(3) || len(bad) != 0 {
		t.Fatalf("completed %v, mismatches %v; want window 3 completed and equal", completed(3), bad)
	}
	bad = a.observe(entries(34, 41)...)
	if !completed(4) || len(bad) != 1 || bad[0].Window != 4 {
		t.Fatalf("completed %v, mismatches %v; want window 4", completed(4), bad)
	}
}

// tamperFSM is a server's FSM that, after applying the entry whose data
// starts with "tamper|x" (the leader's stamp follows), changes the bytes this node holds of it: the node then
// has other entries than its peers, as the deposed leader of
// hashicorp/raft#695 had.
type tamperFSM struct {
	*kvFSM
	done atomic.Bool
}

func (f *tamperFSM) Apply(l *raft.Log) any {
	out := f.kvFSM.Apply(l)
	if strings.HasPrefix(string(l.Data), "tamper|x") && f.done.CompareAndSwap(false, true) {
		l.Data = []byte("tamper|y")
	}
	return out
}

// TestLogCheckAcrossNodes runs the check in a three-server cluster: the
// claims travel in gossip, equal windows count as matched on every
// server, and the one server whose entries differ is found by both
// others, for the window that holds the difference only.
func TestLogCheckAcrossNodes(t *testing.T) {
	c := &tcluster{t: t}
	for range 3 {
		c.add(3, func(cfg *Config) { cfg.LogCheckWindow, cfg.LogCheckInterval = 8, 100*time.Millisecond })
	}
	bad := c.nodes[1] // leader or follower: its own copy of the entry changes either way
	bad.wrap = func(f *kvFSM) raft.FSM { return &tamperFSM{kvFSM: f} }
	for _, tn := range c.nodes {
		c.start(tn)
	}
	t.Cleanup(c.stopAll)
	c.waitVoters(3)
	l := c.leader()
	for i := range 20 {
		apply(t, l, fmt.Sprintf("k%d|v%d", i, i))
	}
	apply(t, l, "tamper|x")
	for i := 20; i < 60; i++ {
		apply(t, l, fmt.Sprintf("k%d|v%d", i, i))
	}
	waitFor(t, 60*time.Second, "every server to compare windows with both peers", func() bool {
		for _, tn := range c.nodes {
			matched, mismatched := tn.node.check.counts()
			if tn == bad && mismatched < 2 || tn != bad && (mismatched < 1 || matched < 4) {
				return false
			}
		}
		return true
	})
	for _, tn := range c.nodes {
		matched, mismatched := tn.node.check.counts()
		t.Logf("%s: %d windows matched, %d mismatched", tn.name, matched, mismatched)
		if tn == bad && mismatched != 2 || tn != bad && mismatched != 1 {
			t.Errorf("%s: %d windows mismatched, want %d (one window, with each server that differs)", tn.name, mismatched, map[bool]int{true: 2, false: 1}[tn == bad])
		}
	}
}

// TestLogCheckAfterSnapshotInstall: a server that missed entries and got
// the leader's snapshot compares the windows after it without a false
// difference, and so do its peers with it.
func TestLogCheckAfterSnapshotInstall(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.LogCheckWindow, cfg.LogCheckInterval = 8, 100*time.Millisecond
		cfg.SnapshotThreshold, cfg.TrailingLogs = 4, 2
	})
	c.waitVoters(3)
	l, f := c.leader(), c.follower()
	for i := range 10 {
		apply(t, l, fmt.Sprintf("a%d|v", i))
	}
	c.crash(f)
	for i := range 30 {
		apply(t, l, fmt.Sprintf("b%d|v", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.node.waitFuture(ctx, "snapshot", l.node.raft.Snapshot()); err != nil {
		t.Fatal(err)
	}
	c.restart(f)
	for i := range 60 {
		apply(t, l, fmt.Sprintf("c%d|v", i))
	}
	waitFor(t, 60*time.Second, "the restarted server to compare 4 windows with each peer", func() bool {
		m, _ := f.node.check.counts()
		return m >= 8
	})
	if r := f.node.fsm.restored.Load(); r < 11 {
		t.Fatalf("the restarted server restored index %d, want the leader's snapshot (past 10)", r)
	}
	for _, tn := range c.nodes {
		matched, mismatched := tn.node.check.counts()
		t.Logf("%s: %d windows matched, %d mismatched", tn.name, matched, mismatched)
		if mismatched != 0 {
			t.Errorf("%s: %d windows mismatched after a snapshot install, want 0", tn.name, mismatched)
		}
	}
}

// TestServeLogCheck checks the endpoint's "after" parameter.
func TestServeLogCheck(t *testing.T) {
	n := &Node{check: newLogCheck(8)}
	n.check.observe(entries(1, 40)...)
	get := func(query string) (int, checkClaim, string) {
		rec := httptest.NewRecorder()
		n.serveLogCheck(rec, httptest.NewRequest(http.MethodGet, pathLogCheck+query, nil))
		var cl checkClaim
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &cl); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		return rec.Code, cl, rec.Body.String()
	}
	for _, c := range []struct{ query, windows string }{
		{"", "[0 1 2 3 4]"}, {"?after=2", "[3 4]"}, {"?after=4", "[]"}, {"?after=99", "[]"},
	} {
		code, cl, body := get(c.query)
		if code != http.StatusOK || cl.Size != 8 || fmt.Sprint(windowsOf(cl)) != c.windows {
			t.Errorf("%q: %d %s, want 200 with windows %s", c.query, code, body, c.windows)
		}
	}
	if code, _, body := get("?after=x"); code != http.StatusBadRequest || !strings.Contains(body, "after") {
		t.Errorf("?after=x: %d %s, want 400 naming the parameter", code, body)
	}
}

// FuzzPeerClaim feeds arbitrary claims, as a peer's JSON, to a check that
// holds windows 0-4: it must neither panic nor report a window it does
// not hold, and each window counts at most once per peer.
func FuzzPeerClaim(f *testing.F) {
	alg, _ := json.Marshal(checkAlg)
	f.Add([]byte(`{"a":` + string(alg) + `,"n":8,"w":[{"w":1,"s":2},{"w":3,"s":4}]}`))
	f.Add([]byte(`{"a":` + string(alg) + `,"n":8,"w":[{"w":4,"s":0},{"w":0,"s":0},{"w":4,"s":1}]}`))
	f.Add([]byte(`{"n":0,"w":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cl checkClaim
		if json.Unmarshal(b, &cl) != nil {
			return
		}
		c := newLogCheck(8)
		c.observe(entries(1, 40)...)
		for range 2 {
			for _, m := range c.peerClaim("p", cl) {
				if m.Window > 4 || m.First != m.Window*8 || m.Ours == m.Theirs {
					t.Fatalf("mismatch %+v for a claim %s", m, b)
				}
			}
		}
		if matched, mismatched := c.counts(); matched+mismatched > 5 {
			t.Fatalf("%d windows compared with one peer, want at most 5", matched+mismatched)
		}
	})
}

// BenchmarkLogCheckObserve is the check's cost on the FSM goroutine: one
// 200-byte entry at a time (its sum, plus a window's end every 16,384).
func BenchmarkLogCheckObserve(b *testing.B) {
	c := newLogCheck(0)
	l := &raft.Log{Type: raft.LogCommand, Data: make([]byte, 200)}
	b.SetBytes(int64(len(l.Data)))
	var i uint64
	for b.Loop() {
		i++
		l.Index = i
		c.observe(l)
	}
}
