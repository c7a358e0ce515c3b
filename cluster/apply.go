package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// ApplyError carries an error the FSM returned from Apply (as opposed to a
// replication failure): the entry is committed, the FSM refused it.
type ApplyError struct{ Msg string }

func (e *ApplyError) Error() string { return "cluster: fsm: " + e.Msg }

// Result is the outcome of one command of ApplyBatch: what Apply would
// have returned for it alone.
type Result struct {
	Data []byte
	Err  error
	// Value is the FSM's response itself when it is an
	// EncodedResponse and the command was applied by this node's FSM
	// (this node led); Data is then its EncodedResult. It is nil for a
	// command forwarded to the leader, whose answer crosses the network
	// as Data alone. A Value thus shows that this node proposed the
	// entry as leader, saw it committed and applied it: the replicated
	// ledger's batches rely on that to serve reads after their writes
	// without a barrier of their own.
	Value any
}

// EncodedResponse is an FSM response that carries its encoding: the
// node answers Data with EncodedResult and hands the response itself to
// a local caller as Value, so that the leader need not decode the bytes
// its FSM just encoded. An FSM may return it in place of []byte.
type EncodedResponse interface {
	EncodedResult() []byte
}

// ApplyResult is Apply returning the whole Result: on the leader its
// Value is the FSM's response itself when that is an EncodedResponse.
func (n *Node) ApplyResult(ctx context.Context, cmd []byte) Result {
	return n.ApplyBatch(ctx, [][]byte{cmd})[0]
}

// Apply replicates cmd through the Raft log and returns the FSM's result.
// It works on any node: a follower forwards the command to the leader. When
// no leader is known it waits up to Config.LeaderWait, then fails with
// ErrNoLeader. ErrOutcomeUnknown means the command may or may not have been
// committed; retry it with the same idempotency key.
//
// Apply is ApplyBatch of one command: there is one write path.
func (n *Node) Apply(ctx context.Context, cmd []byte) ([]byte, error) {
	r := n.ApplyBatch(ctx, [][]byte{cmd})[0]
	return r.Data, r.Err
}

// ApplyBatch replicates cmds, one log entry each, and returns one Result
// per command in order. The commands are proposed back to back in the
// given order without waiting for each other, so they share disk syncs
// and replication rounds; the results are only collected afterwards. It
// works on any node: a follower forwards the whole batch to the leader in
// one request. Each result has Apply's meaning, ErrOutcomeUnknown
// included; commands refused before they reached the log (the node was
// not, or stopped being, the leader) are retried, within
// Config.LeaderWait, on the new leader.
//
// A command whose outcome became unknown because the leadership moved
// while it waited (a forward cancelled when this node saw the leader
// change, a forwarding connection broken by the leader's death, a leader
// that lost its leadership before the entry committed) is sent again to
// the new leader when Config.Idempotent says it carries an idempotency
// key, at most maxReroutes times: the state machine answers a retried key
// with its first result, so the command takes effect once and the caller
// gets a definite answer. If no definite answer comes, the command stays
// ErrOutcomeUnknown (never ErrNoLeader: it may have been applied).
func (n *Node) ApplyBatch(ctx context.Context, cmds [][]byte) []Result {
	start := time.Now()
	out := make([]Result, len(cmds))
	paths := make([]string, len(cmds))
	for i := range paths {
		paths[i] = "local"
	}
	// maybe holds, per command sent again after an unknown outcome, the
	// error of that outcome; reroutes counts those retries.
	maybe := make([]error, len(cmds))
	reroutes := make([]int, len(cmds))
	todo := seq(len(cmds))
	deadline := time.Now().Add(n.cfg.LeaderWait)
	var lastErr error
	for len(todo) > 0 {
		if n.closed.Load() {
			fail(out, todo, fmt.Errorf("cluster: apply: %w", ErrShutdown))
			break
		}
		sub := make([][]byte, len(todo))
		for j, i := range todo {
			sub[j] = cmds[i]
		}
		var res []Result
		path := "local"
		moved := n.leaderMoved()
		if n.raft.State() == raft.Leader {
			res = n.applyLocalBatch(ctx, sub, false)
		} else if id, rpc := n.Leader(); id != "" && rpc != "" {
			res, path = n.forward(ctx, rpc, moved, sub), "forwarded"
		}
		retry := todo[:0]
		rerouted := 0 // the most reroutes of a command sent again after an unknown outcome
		for j, i := range todo {
			// Refused before reaching the log: safe to send again. A
			// forwarded no-leader answer means the leader we knew stepped
			// down in between.
			if res == nil || errors.Is(res[j].Err, ErrNotLeader) || (path == "forwarded" && errors.Is(res[j].Err, ErrNoLeader)) {
				if res != nil {
					lastErr = res[j].Err
				}
				retry = append(retry, i)
				continue
			}
			if errors.Is(res[j].Err, ErrOutcomeUnknown) && n.reroutable(ctx, cmds[i], res[j].Err, reroutes[i]) {
				maybe[i] = res[j].Err
				reroutes[i]++
				rerouted = max(rerouted, reroutes[i])
				n.m.rerouted.Inc()
				// The leader moved: give the new one a full LeaderWait.
				deadline = time.Now().Add(n.cfg.LeaderWait)
				retry = append(retry, i)
				continue
			}
			out[i], paths[i] = res[j], path
		}
		todo = retry
		if len(todo) == 0 {
			break
		}
		var wait error
		if rerouted == 0 {
			wait = n.waitLeaderChange(ctx, deadline)
		} else {
			// Not at once to the leader that just left the outcome
			// unknown: a dead leader behind a proxy or load balancer
			// accepts connections and breaks them until the followers
			// notice. Wait for this node to see the leadership move, or
			// a growing pause when it does not.
			wait = n.waitMoved(ctx, moved, rerouteWait<<(rerouted-1))
		}
		if err := wait; err != nil {
			if lastErr != nil {
				err = fmt.Errorf("%w (last attempt: %w)", err, lastErr)
			}
			fail(out, todo, fmt.Errorf("cluster: apply: %w", err))
			break
		}
	}
	for i, r := range out {
		var ae *ApplyError
		refused := errors.Is(r.Err, ErrNoLeader) || errors.Is(r.Err, ErrNotLeader) || errors.Is(r.Err, ErrShutdown) || !errors.Is(r.Err, ErrOutcomeUnknown)
		if maybe[i] != nil && r.Err != nil && refused && !errors.As(r.Err, &ae) {
			// Sent again after an unknown outcome and refused (or given
			// up) before the log: the first attempt may still have been
			// applied, so the outcome stays unknown, and the retry's
			// error is only text (its sentinel would say "not applied").
			out[i].Err = fmt.Errorf("cluster: apply: %w: first attempt: %w; retry: %v", ErrOutcomeUnknown, maybe[i], r.Err)
		}
		n.m.observeApply(paths[i], start, out[i].Err)
	}
	return out
}

// maxReroutes bounds how often one command is sent again after an
// unknown outcome; rerouteWait is the first pause before sending it again
// while the leadership has not visibly moved, doubled each time (at most
// 0.1+0.2+0.4+0.8+1.6 s in all).
const (
	maxReroutes = 5
	rerouteWait = 100 * time.Millisecond
)

// waitMoved waits until moved is closed or d has passed (a nil moved:
// until d has passed), failing when ctx ends or the node shuts down.
func (n *Node) waitMoved(ctx context.Context, moved <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-moved:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.ctx.Done():
		return ErrShutdown
	}
}

// reroutable reports whether cmd, whose last attempt ended with the
// unknown outcome err, may be sent again to the leader: only a command
// the FSM deduplicates (Config.Idempotent), while the caller still waits,
// and not when the leader merely ran out of the forward deadline without
// the leadership moving (sending it again would wait on the same leader)
// or when this node is shutting down.
func (n *Node) reroutable(ctx context.Context, cmd []byte, err error, done int) bool {
	if n.cfg.Idempotent == nil || done >= maxReroutes || ctx.Err() != nil || n.closed.Load() {
		return false
	}
	if errors.Is(err, errForwardDeadline) || errors.Is(err, ErrShutdown) || errors.Is(err, errNodeShutdown) {
		return false
	}
	return n.cfg.Idempotent(cmd)
}

// waitLeaderChange sleeps briefly before the next attempt, failing with
// ErrNoLeader once the deadline passes.
func (n *Node) waitLeaderChange(ctx context.Context, deadline time.Time) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("no leader within %s: %w", n.cfg.LeaderWait, ErrNoLeader)
	}
	// A nil channel never closes: only the pause, the caller or shutdown
	// ends the wait.
	return n.waitMoved(ctx, nil, min(25*time.Millisecond, time.Until(deadline)+time.Millisecond))
}

// errNodeShutdown is why a leader stopped waiting for entries it had
// proposed when it began to shut down.
var errNodeShutdown = errors.New("node shutting down")

// fail sets err as the result of every command in idx.
func fail(out []Result, idx []int, err error) {
	for _, i := range idx {
		out[i] = Result{Err: err}
	}
}

// refusedError is a command from a peer that Config.Check refused. It
// travels in the "other" error class (a class older followers know) and is
// answered on the single-command endpoint as 400 Bad Request.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "cluster: refused forwarded command: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// applyLocalBatch is the leader's side of every write, local or
// forwarded, the tick included: it checks (commands from peers, with
// Config.Check), stamps and proposes every command, then waits for all of
// them with a single goroutine (not one per command). With Config.Group,
// once every server can apply groups, runs of commands the hook groups
// share one log entry each; every command still gets its own result. It
// never forwards. When ctx ends first, the commands whose outcome is not
// yet known fail with ErrOutcomeUnknown.
func (n *Node) applyLocalBatch(ctx context.Context, cmds [][]byte, fromPeer bool) []Result {
	out := make([]Result, len(cmds))
	if n.raft.State() != raft.Leader {
		fail(out, seq(len(cmds)), fmt.Errorf("cluster: apply: %w", ErrNotLeader))
		return out
	}
	if _, ok := ctx.Deadline(); !ok {
		// A future raft took is answered; this only bounds one it lost.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxWait)
		defer cancel()
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	// One stamp for the whole batch: the members of a group must carry
	// the same log time (it is the group's).
	now := n.cfg.Now().UnixMilli()
	ready := make([][]byte, 0, len(cmds)) // stamped commands to propose
	pos := make([]int, 0, len(cmds))      // their positions in cmds
	for i, cmd := range cmds {
		if fromPeer && n.cfg.Check != nil {
			if err := n.cfg.Check(cmd); err != nil {
				out[i].Err = &refusedError{err: err}
				continue
			}
		}
		if n.cfg.Stamp != nil {
			stamped, err := n.cfg.Stamp(cmd, now)
			if err != nil {
				out[i].Err = fmt.Errorf("cluster: stamp command: %w", err)
				continue
			}
			cmd = stamped
		}
		ready, pos = append(ready, cmd), append(pos, i)
	}
	props := n.propose(ready, pos, timeout)
	// The waiter fills its own slice and publishes how many proposals it
	// has answered, so a caller that stops waiting never races with it.
	got := make([]Result, len(cmds))
	var known atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k, p := range props {
			futureResults(p.f, p.members, got)
			known.Store(int64(k + 1))
		}
	}()
	// Also watch shutdown: a future raft never took from its buffered
	// apply channel before it stopped is never answered.
	var gaveUp error
	select {
	case <-done:
	case <-ctx.Done():
		gaveUp = ctx.Err()
	case <-n.ctx.Done():
		// Not ErrShutdown: that class means "refused before the log",
		// which a forwarding follower would retry.
		gaveUp = errNodeShutdown
	}
	k := int(known.Load())
	for j, p := range props {
		for _, i := range p.members {
			if j < k {
				out[i] = got[i]
			} else {
				out[i].Err = fmt.Errorf("cluster: apply: %w: %w", ErrOutcomeUnknown, gaveUp)
			}
		}
	}
	return out
}

// proposal is one log entry applyLocalBatch proposed: a lone command or a
// group, and the positions in the batch of the commands it carries.
type proposal struct {
	f       raft.ApplyFuture
	members []int
}

// propose hands the stamped commands to raft in order, as groups where
// Config.Group makes them and grouping is allowed, else one entry each.
// pos[i] is the position in the batch of cmds[i].
func (n *Node) propose(cmds [][]byte, pos []int, timeout time.Duration) []proposal {
	props := make([]proposal, 0, len(cmds))
	group := len(cmds) >= 2 && n.groupAllowed()
	for i := 0; i < len(cmds); {
		entry, k := cmds[i], 1
		if group {
			if g, m := n.cfg.Group(cmds[i:]); m >= 2 && m <= len(cmds)-i && g != nil {
				entry, k = g, m
				n.m.groupEntries.Inc()
				n.m.groupedCommands.Add(float64(m))
			}
		}
		props = append(props, proposal{f: n.raft.Apply(entry, timeout), members: pos[i : i+k]})
		i += k
	}
	return props
}

// groupAllowed reports whether the leader may propose group entries:
// Config.Group is set and every server of the configuration announces
// an envelope version that has them (design invariant 12: a server that
// cannot decode an entry stops on it).
func (n *Node) groupAllowed() bool {
	return n.cfg.Group != nil && n.CommonEnvelopeVersion() >= n.cfg.GroupVersion
}

// seq returns 0..n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// futureResults waits for f, the entry of the batch commands at
// positions members, and sets each one's result in out: the FSM's result
// the way Apply returns it, or the entry's error for all of them. A group
// entry's response is one per member ([]any).
func futureResults(f raft.ApplyFuture, members []int, out []Result) {
	if err := f.Error(); err != nil {
		err = fmt.Errorf("cluster: apply: %w", mapRaftErr(err))
		for _, i := range members {
			out[i] = Result{Err: err}
		}
		return
	}
	resp := f.Response()
	if len(members) == 1 {
		out[members[0]] = response(resp)
		return
	}
	rs, ok := resp.([]any)
	if !ok || len(rs) != len(members) {
		// The entry is committed; only its answer is unusable.
		err := &ApplyError{Msg: fmt.Sprintf("fsm returned %T for a group of %d, want []any with one response per member", resp, len(members))}
		for _, i := range members {
			out[i] = Result{Err: err}
		}
		return
	}
	for j, i := range members {
		out[i] = response(rs[j])
	}
}

// response turns one FSM response into a Result the way Apply returns it.
func response(r any) Result {
	switch r := r.(type) {
	case nil:
		return Result{}
	case []byte:
		return Result{Data: r}
	case EncodedResponse:
		return Result{Data: r.EncodedResult(), Value: r}
	case error:
		return Result{Err: &ApplyError{Msg: r.Error()}}
	default:
		return Result{Err: fmt.Errorf("cluster: fsm returned %T, want []byte, an EncodedResponse or error", r)}
	}
}
