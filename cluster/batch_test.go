package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// batchOutcome renders a Result the way the tests compare them.
func batchOutcome(r Result) string {
	var ae *ApplyError
	switch {
	case r.Err == nil:
		return string(r.Data)
	case errors.As(r.Err, &ae):
		return "fsm:" + ae.Msg
	case strings.Contains(r.Err.Error(), "stamp"):
		return "stamp-error"
	}
	return "error:" + r.Err.Error()
}

// TestApplyBatchInOrderOnLeaderAndFollower: a batch applies every command
// in the given order, one entry each, with per-command results (FSM
// errors, stamp errors and deduplicated retries included), whether it is
// submitted on the leader or forwarded by a follower in one request.
func TestApplyBatchInOrderOnLeaderAndFollower(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cases := []struct {
		node *tnode
		cmds []string
		want []string
	}{
		{c.leader(), []string{"a|x1", "b|x2", "fail|boom", "badstamp|x", "a|x1", "c|x3"},
			[]string{"ok:1", "ok:2", "fsm:refused boom", "stamp-error", "ok:1", "ok:3"}},
		{c.follower(), []string{"d|y1", "fail|bang", "e|y2", "b|x2"},
			[]string{"ok:4", "fsm:refused bang", "ok:5", "ok:2"}},
	}
	for _, tc := range cases {
		cmds := make([][]byte, len(tc.cmds))
		for i, s := range tc.cmds {
			cmds[i] = []byte(s)
		}
		res := tc.node.node.ApplyBatch(ctx, cmds)
		got := make([]string, len(res))
		for i, r := range res {
			got[i] = batchOutcome(r)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: batch %q = %q, want %q", tc.node.name, tc.cmds, got, tc.want)
		}
	}
	for _, tn := range c.running() {
		if got, want := readEntries(t, tn), []string{"x1", "x2", "x3", "y1", "y2"}; !slices.Equal(got, want) {
			t.Fatalf("%s entries = %q, want %q", tn.name, got, want)
		}
	}
	// With the context gone before the results are in, a command is
	// either known to have succeeded or reported as outcome unknown (it
	// was proposed and may still commit), never as failed.
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	for i, r := range c.leader().node.ApplyBatch(done, [][]byte{[]byte("f|z1"), []byte("g|z2")}) {
		if r.Err != nil && !errors.Is(r.Err, ErrOutcomeUnknown) {
			t.Fatalf("command %d with a cancelled context: %v, want outcome unknown", i, r.Err)
		}
	}
}

// TestBatchWireRoundTrip: the forwarding format carries every result
// class back to the same sentinel and rejects malformed bodies.
func TestBatchWireRoundTrip(t *testing.T) {
	in := []Result{
		{Data: []byte("ok:1")},
		{Data: nil},
		{Err: &ApplyError{Msg: "refused"}},
		{Err: fmt.Errorf("x: %w", ErrNotLeader)},
		{Err: fmt.Errorf("x: %w", ErrNoLeader)},
		{Err: fmt.Errorf("x: %w", ErrShutdown)},
		{Err: fmt.Errorf("x: %w", ErrOutcomeUnknown)},
		{Err: errors.New("disk full")},
	}
	out, err := decodeResults(encodeResults(in), len(in))
	if err != nil {
		t.Fatal(err)
	}
	checks := []func(Result) bool{
		func(r Result) bool { return r.Err == nil && string(r.Data) == "ok:1" },
		func(r Result) bool { return r.Err == nil && len(r.Data) == 0 },
		func(r Result) bool { var ae *ApplyError; return errors.As(r.Err, &ae) && ae.Msg == "refused" },
		func(r Result) bool { return errors.Is(r.Err, ErrNotLeader) },
		func(r Result) bool { return errors.Is(r.Err, ErrNoLeader) },
		// A shutting-down leader refused before raft: a leader change.
		func(r Result) bool { return errors.Is(r.Err, ErrNotLeader) },
		func(r Result) bool { return errors.Is(r.Err, ErrOutcomeUnknown) },
		func(r Result) bool { return r.Err != nil && strings.Contains(r.Err.Error(), "disk full") },
	}
	for i, ok := range checks {
		if !ok(out[i]) {
			t.Errorf("result %d: %+v after the round trip of %+v", i, out[i], in[i])
		}
	}
	cmds := [][]byte{[]byte("a|1"), {}, []byte("b|2")}
	body := encodeCommands(cmds)
	got, err := decodeCommands(body)
	if err != nil || len(got) != 3 || string(got[0]) != "a|1" || len(got[1]) != 0 || string(got[2]) != "b|2" {
		t.Fatalf("decodeCommands = %q, %v", got, err)
	}
	for name, bad := range map[string][]byte{
		"truncated": body[:len(body)-1],
		"trailing":  append(slices.Clone(body), 0),
		"empty":     nil,
		"too many":  encodeCommands(make([][]byte, maxBatchCommands+1)),
	} {
		if _, err := decodeCommands(bad); err == nil {
			t.Errorf("%s body decoded without error", name)
		}
	}
	if _, err := decodeResults(encodeResults(in)[:5], len(in)); err == nil {
		t.Error("truncated results decoded without error")
	}
}

// TestForwardToLeaderWithoutBatchEndpoint: forwarding uses only
// /internal/applybatch, which every server of this and the previous
// release serves. A leader without it (404) gets nothing else: every
// command fails at once with an error naming the endpoint, neither
// retried as a leader change nor reported as an unknown outcome, and
// nothing is applied.
func TestForwardToLeaderWithoutBatchEndpoint(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.waitVoters(3)
	leader, follower := c.leader(), c.follower()
	var others atomic.Int64
	h := leader.node.Handler()
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == pathApplyBatch {
			http.NotFound(w, r)
			return
		}
		others.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer old.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := follower.node.forward(ctx, old.Listener.Addr().String(), nil, [][]byte{[]byte("p|z1"), []byte("fail|no"), []byte("q|z2")})
	for i, r := range res {
		if r.Err == nil || !strings.Contains(r.Err.Error(), pathApplyBatch) ||
			errors.Is(r.Err, ErrNotLeader) || errors.Is(r.Err, ErrOutcomeUnknown) {
			t.Fatalf("command %d: %v, want a plain error naming %s", i, r.Err, pathApplyBatch)
		}
	}
	if n := others.Load(); n != 0 {
		t.Fatalf("%d requests to other endpoints, want none", n)
	}
	if got := readEntries(t, leader); len(got) != 0 {
		t.Fatalf("entries %q after a refused forward, want none", got)
	}
}
