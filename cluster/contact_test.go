package cluster

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestContactsUnreachable(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	refused := errors.New("connection refused")
	type probe struct {
		err error
		at  time.Duration // after t0
	}
	cases := []struct {
		name   string
		probes []probe
		since  time.Duration // gossip's last state change, after t0
		now    time.Duration
		want   bool
	}{
		{"never probed", nil, 0, time.Second, false},
		{"last probe answered", []probe{{refused, 1 * time.Second}, {nil, 2 * time.Second}}, 0, 3 * time.Second, false},
		{"last probe failed", []probe{{nil, 1 * time.Second}, {refused, 2 * time.Second}}, 0, 3 * time.Second, true},
		{"deadline exceeded counts (a paused server)", []probe{{context.DeadlineExceeded, time.Second}}, 0, 2 * time.Second, true},
		{"own cancellation is no evidence", []probe{{nil, time.Second}, {context.Canceled, 2 * time.Second}}, 0, 3 * time.Second, false},
		{"failure older than the window is left to gossip", []probe{{refused, time.Second}}, 0, time.Second + contactWindow + time.Millisecond, false},
		{"failure at the window's edge still counts", []probe{{refused, time.Second}}, 0, time.Second + contactWindow, true},
		{"server rejoined gossip after the failure", []probe{{refused, time.Second}}, 2 * time.Second, 3 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c contacts
			for _, p := range tc.probes {
				c.record("10.0.0.1:8080", p.err, t0.Add(p.at))
			}
			if got := c.unreachable("10.0.0.1:8080", t0.Add(tc.since), t0.Add(tc.now)); got != tc.want {
				t.Fatalf("unreachable = %t, want %t", got, tc.want)
			}
			if c.unreachable("10.0.0.2:8080", t0, t0.Add(tc.now)) {
				t.Fatal("another address is unreachable though never probed")
			}
		})
	}
}

// memberHealth returns the health tn reports for the server id.
func memberHealth(tn *tnode, id string) string {
	for _, m := range tn.node.Members() {
		if m.ID == id {
			return m.Health
		}
	}
	return "absent"
}

// TestMembersLeaderStopsAnswering stops only the leader's HTTP API: its
// Raft and gossip keep running, so gossip calls it alive for as long as
// the test lasts, and only the followers' status probes can tell. The
// follower must report it unreachable, and alive again once it answers.
func TestMembersLeaderStopsAnswering(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	l := c.leader()
	f := c.follower()
	lid := l.node.id
	// A follower probes the leader once it is ready (readyLoop).
	waitFor(t, 30*time.Second, f.name+" ready", f.node.Ready)
	if h := memberHealth(f, lid); h != "alive" {
		t.Fatalf("%s sees leader %s as %q before the fault, want alive", f.name, lid, h)
	}
	_ = l.srv.Close()
	start := time.Now()
	waitFor(t, 20*time.Second, "the follower to report the silent leader unreachable", func() bool {
		return memberHealth(f, lid) == "unreachable"
	})
	t.Logf("%s reported leader %s unreachable %s after its API stopped answering", f.name, lid, time.Since(start).Round(time.Millisecond))
	for _, m := range f.node.Members() {
		if m.ID == lid && m.Role != "leader" {
			t.Fatalf("role of the silent leader = %q: Raft still has it as leader", m.Role)
		}
	}
	// A server never reports itself unreachable.
	if h := memberHealth(l, lid); h != "alive" {
		t.Fatalf("leader sees itself as %q", h)
	}

	ln, err := net.Listen("tcp", l.rpcAddr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", l.rpcAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/internal/", l.node.Handler())
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	waitFor(t, 20*time.Second, "the follower to report the leader alive again", func() bool {
		return memberHealth(f, lid) == "alive"
	})
}

// TestMembersCrashedLeader crashes the leader (no gossip leave, no
// handover) and waits for a survivor to stop calling it alive.
func TestMembersCrashedLeader(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	l := c.leader()
	lid := l.node.id
	for _, tn := range c.nodes {
		waitFor(t, 30*time.Second, tn.name+" ready", tn.node.Ready)
	}
	c.crash(l)
	start := time.Now()
	s := c.running()[0]
	var h string
	waitFor(t, 20*time.Second, "a survivor to stop reporting the crashed leader alive", func() bool {
		h = memberHealth(s, lid)
		return h != "alive"
	})
	t.Logf("%s reported crashed leader %s %q after %s", s.name, lid, h, time.Since(start).Round(time.Millisecond))
	if h != "unreachable" && h != "failed" {
		t.Fatalf("crashed leader reported %q, want unreachable or failed", h)
	}
}
