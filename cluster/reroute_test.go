package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/testwait"
)

// kvIdempotent is Config.Idempotent for the test FSM: every command but
// "fail|..." carries a request ID the FSM deduplicates.
func kvIdempotent(cmd []byte) bool { return !strings.HasPrefix(string(cmd), "fail|") }

// stall makes tn's internal endpoint at path stall: each request is
// handed to before (which may serve it, its answer thrown away), reported
// on arrived, and then held until its caller goes away or the test ends,
// as a leader frozen by a long pause holds a request it has accepted.
func stall(t *testing.T, tn *tnode, path string, before func(w http.ResponseWriter, r *http.Request, next http.Handler)) <-chan struct{} {
	arrived := make(chan struct{}, 16)
	done := make(chan struct{})
	t.Cleanup(func() { close(done); tn.intercept.Store(nil) })
	f := func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.URL.Path != path {
			next.ServeHTTP(w, r)
			return
		}
		if before != nil {
			before(httptest.NewRecorder(), r, next)
		}
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
	tn.intercept.Store(&f)
	return arrived
}

// await fails the test unless ch delivers within d.
func await[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("no %s within %s", what, d)
	}
	var zero T
	return zero
}

// moveLeadership makes the leader l hand over to another voter and waits
// until some other node leads: in a real stall the others elect a new
// leader; here the old one steps aside, which the followers observe the
// same way (a new leader in a new term).
func moveLeadership(t *testing.T, c *tcluster, l *tnode) *tnode {
	t.Helper()
	var nl *tnode
	newLeader := func() bool {
		for _, tn := range c.running() {
			if tn != l && tn.node.raft.State() == raft.Leader {
				nl = tn
				return true
			}
		}
		return false
	}
	// Raft gives a transfer one election timeout (400 ms here) for the
	// target to win; on a loaded machine it may not, and the old leader
	// simply carries on. Ask again until the leadership has moved.
	testwait.Until(t, 20*time.Second, "a leadership transfer to succeed", func() bool {
		if newLeader() {
			return true
		}
		if l.node.raft.State() != raft.Leader {
			return false // an election is under way
		}
		if err := l.node.raft.LeadershipTransfer().Error(); err != nil {
			t.Logf("leadership transfer: %v; trying again", err)
		}
		return false
	})
	return nl
}

type applyOut struct {
	data []byte
	err  error
}

// TestStalledForwardReroutes: a follower's write to a leader that holds
// the request without answering is sent again to the new leader as soon as
// the follower sees the leadership move, long before the forward deadline
// (a minute here, so only the re-route can answer within the test), in
// both cases of a stall: the old leader never proposed the command, or it
// committed it and the answer was lost. Either way the command is applied
// once and the caller gets the FSM's first result.
func TestStalledForwardReroutes(t *testing.T) {
	for _, applied := range []bool{false, true} {
		name := "never-proposed"
		if applied {
			name = "committed-answer-lost"
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 3, func(cfg *Config) {
				cfg.ForwardTimeout = time.Minute
				cfg.Idempotent = kvIdempotent
			})
			c.waitVoters(3)
			l := c.leader()
			var f *tnode
			for _, tn := range c.running() {
				if tn != l {
					f = tn
					break
				}
			}
			var before func(w http.ResponseWriter, r *http.Request, next http.Handler)
			if applied {
				before = func(w http.ResponseWriter, r *http.Request, next http.Handler) { next.ServeHTTP(w, r) }
			}
			arrived := stall(t, l, pathApplyBatch, before)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := make(chan applyOut, 1)
			go func() {
				b, err := f.node.Apply(ctx, []byte("k1|v1"))
				got <- applyOut{b, err}
			}()
			await(t, arrived, 10*time.Second, "forwarded request at the stalled leader")
			nl := moveLeadership(t, c, l)
			r := await(t, got, 20*time.Second, "answer to the stalled write")
			if r.err != nil {
				t.Fatalf("apply through %s: %v, want the result from the new leader %s", f.name, r.err, nl.name)
			}
			if string(r.data) != "ok:1" {
				t.Fatalf("apply result %q, want ok:1 (the first and only application)", r.data)
			}
			if e := readEntries(t, nl); !slices.Equal(e, []string{"v1"}) {
				t.Fatalf("entries %q on %s, want [v1] once", e, nl.name)
			}
		})
	}
}

// TestStalledForwardNotIdempotent: a command the FSM would not
// deduplicate is never sent twice: when the leadership moves during its
// forward, the caller learns at once that its outcome is unknown, and
// why, instead of waiting out the forward deadline.
func TestStalledForwardNotIdempotent(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.ForwardTimeout = time.Minute
		cfg.Idempotent = func([]byte) bool { return false }
	})
	c.waitVoters(3)
	l := c.leader()
	f := c.follower()
	arrived := stall(t, l, pathApplyBatch, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan applyOut, 1)
	go func() {
		b, err := f.node.Apply(ctx, []byte("k1|v1"))
		got <- applyOut{b, err}
	}()
	await(t, arrived, 10*time.Second, "forwarded request at the stalled leader")
	moveLeadership(t, c, l)
	r := await(t, got, 20*time.Second, "answer to the stalled write")
	if !errors.Is(r.err, ErrOutcomeUnknown) || !errors.Is(r.err, errLeaderMoved) {
		t.Fatalf("apply: %v, want ErrOutcomeUnknown caused by the leadership moving", r.err)
	}
}

// TestStalledReadIndexReroutes: a follower's read barrier waiting on a
// read index from a leader that holds the request asks the new leader as
// soon as the leadership moves.
func TestStalledReadIndexReroutes(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) { cfg.ForwardTimeout = time.Minute })
	c.waitVoters(3)
	l := c.leader()
	f := c.follower()
	apply(t, f, "r1|before")
	arrived := stall(t, l, pathReadIndex, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- f.node.ReadBarrier(ctx) }()
	await(t, arrived, 10*time.Second, "read-index request at the stalled leader")
	moveLeadership(t, c, l)
	if err := await(t, got, 20*time.Second, "end of the read barrier"); err != nil {
		t.Fatalf("read barrier: %v, want it served by the new leader", err)
	}
	if e := f.fsm.entries(); !slices.Contains(e, "before") {
		t.Fatalf("entries %q after the barrier, want the write acknowledged before it", e)
	}
}

// TestRerouteWithoutLeaderStaysUnknown: a write sent again after its
// outcome became unknown, that then finds no leader, fails as outcome
// unknown, never as no-leader (which would tell the caller it was not
// applied, while the first attempt may have been).
func TestRerouteWithoutLeaderStaysUnknown(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.ForwardTimeout = time.Minute
		cfg.LeaderWait = time.Second
		cfg.Idempotent = kvIdempotent
	})
	c.waitVoters(3)
	l := c.leader()
	var f, o *tnode
	for _, tn := range c.running() {
		switch {
		case tn == l:
		case f == nil:
			f = tn
		default:
			o = tn
		}
	}
	arrived := stall(t, l, pathApplyBatch, func(w http.ResponseWriter, r *http.Request, next http.Handler) { next.ServeHTTP(w, r) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan applyOut, 1)
	go func() {
		b, err := f.node.Apply(ctx, []byte("k1|v1"))
		got <- applyOut{b, err}
	}()
	await(t, arrived, 10*time.Second, "forwarded request at the stalled leader")
	c.crash(o)
	c.crash(l) // breaks the forwarding connection: the outcome is unknown
	r := await(t, got, 20*time.Second, "answer to the write")
	if !errors.Is(r.err, ErrOutcomeUnknown) || errors.Is(r.err, ErrNoLeader) || errors.Is(r.err, ErrNotLeader) {
		t.Fatalf("apply: %v, want ErrOutcomeUnknown and no sentinel that says \"not applied\"", r.err)
	}
	if !strings.Contains(r.err.Error(), "first attempt") {
		t.Fatalf("apply: %v, want the error of a write sent again after an unknown outcome", r.err)
	}
}
