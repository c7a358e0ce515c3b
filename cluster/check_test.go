package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// refusedByCheck reports whether err is a Check refusal as the sender
// sees it: no sentinel, no FSM error, the checker's message kept.
func refusedByCheck(err error) bool {
	var ae *ApplyError
	return err != nil && !errors.As(err, &ae) && !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrNoLeader) &&
		!errors.Is(err, ErrOutcomeUnknown) && strings.Contains(err.Error(), "malformed command")
}

// TestCheckRefusesForwardedCommandsOnly: Config.Check runs on the leader
// for every command that came from another server, through either write
// endpoint, and a refused command is answered as a bad request (class
// "other", 400 on the deprecated single-command endpoint) without
// entering the log; the other commands of its batch still apply in order.
// Commands applied on the leader itself are not checked. Every command
// that enters the log is stamped, checked or not.
func TestCheckRefusesForwardedCommandsOnly(t *testing.T) {
	var checked atomic.Int64
	check := func(cmd []byte) error {
		checked.Add(1)
		if bytes.HasPrefix(cmd, []byte("bad|")) {
			return fmt.Errorf("malformed command %q", cmd)
		}
		return nil
	}
	c := newCluster(t, 3, func(cfg *Config) { cfg.Check = check })
	c.waitVoters(3)
	leader, follower := c.leader(), c.follower()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// In-process commands on the leader are well formed by construction.
	if got := apply(t, leader, "bad|local"); got != "ok:1" {
		t.Fatalf("leader's own command = %q, want ok:1 (not checked)", got)
	}
	if n := checked.Load(); n != 0 {
		t.Fatalf("Check called %d times for a command applied on the leader, want 0", n)
	}

	// Forwarded through /internal/applybatch by a follower.
	res := follower.node.ApplyBatch(ctx, [][]byte{[]byte("a|f1"), []byte("bad|f2"), []byte("b|f3")})
	if res[0].Err != nil || string(res[0].Data) != "ok:2" || res[2].Err != nil || string(res[2].Data) != "ok:3" {
		t.Fatalf("forwarded batch results %+v, want ok:2, refused, ok:3", res)
	}
	if !refusedByCheck(res[1].Err) {
		t.Fatalf("refused forwarded command: %v, want the checker's error without a sentinel", res[1].Err)
	}
	if _, err := follower.node.Apply(ctx, []byte("bad|single")); !refusedByCheck(err) {
		t.Fatalf("refused forwarded Apply: %v, want the checker's error without a sentinel", err)
	}
	if n := checked.Load(); n != 4 {
		t.Fatalf("Check called %d times for 4 forwarded commands", n)
	}

	// The batch endpoint carries the refusal in class "other".
	resp := post(t, leader.rpcAddr, pathApplyBatch, encodeCommands([][]byte{[]byte("bad|b1")}))
	if resp.code != http.StatusOK || len(resp.body) == 0 || wireClasses[resp.body[0]] != errClassOther {
		t.Fatalf("batch endpoint: %d %q, want 200 with one result of class %q", resp.code, resp.body, errClassOther)
	}

	// The deprecated single-command endpoint, as a follower of the
	// previous release uses it.
	for _, tc := range []struct {
		to    *tnode
		cmd   string
		code  int
		class string
		body  string
	}{
		{leader, "bad|h1", http.StatusBadRequest, errClassOther, "malformed command"},
		{leader, "c|h2", http.StatusOK, "", "ok:4"},
		{leader, "c|h2", http.StatusOK, "", "ok:4"}, // a retry gets the first answer
		{leader, "fail|no", http.StatusUnprocessableEntity, errClassFSM, "refused no"},
		{leader, "badstamp|x", http.StatusInternalServerError, errClassOther, "stamp"},
		{follower, "d|h3", http.StatusConflict, errClassNotLeader, "not the leader"},
	} {
		resp := post(t, tc.to.rpcAddr, pathApply, []byte(tc.cmd))
		if resp.code != tc.code || resp.class != tc.class || !strings.Contains(string(resp.body), tc.body) {
			t.Errorf("%s %q to %s: %d class %q %q; want %d class %q containing %q",
				pathApply, tc.cmd, tc.to.name, resp.code, resp.class, resp.body, tc.code, tc.class, tc.body)
		}
	}

	want := []string{"local", "f1", "f3", "h2"}
	for _, tn := range c.running() {
		if got := readEntries(t, tn); !slices.Equal(got, want) {
			t.Fatalf("%s entries %q, want %q", tn.name, got, want)
		}
		tn.fsm.mu.Lock()
		stamped := tn.fsm.Stamped
		tn.fsm.mu.Unlock()
		// local, f1, f3, h2 twice, fail|no: everything that reached the log.
		if stamped != 6 {
			t.Fatalf("%s: %d stamped commands, want 6", tn.name, stamped)
		}
	}
}

type postResult struct {
	code  int
	class string
	body  []byte
}

// post sends body to a node's internal endpoint.
func post(t *testing.T, addr, path string, body []byte) postResult {
	t.Helper()
	resp, err := http.Post("http://"+addr+path, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s to %s: %v", path, addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s to %s: read: %v", path, addr, err)
	}
	return postResult{code: resp.StatusCode, class: resp.Header.Get(errHeader), body: b}
}
