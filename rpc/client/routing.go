package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// NewKey returns a fresh random idempotency key.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Retryable reports whether err is worth retrying on another node with the
// same idempotency key: Unavailable from a server (no leader, outcome
// unknown) or any transport failure that did not come from a server (node
// down, connection reset mid-call). Retrying the latter is safe only
// because every call is a read or carries an idempotency key.
func Retryable(err error) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	return ce.Code() == connect.CodeUnavailable || !connect.IsWireError(err)
}

// route says where a call goes first.
type route int

const (
	// spread: the next node in round-robin order, so that a client's reads
	// are spread over the cluster.
	spread route = iota
	// toLeader: the leader the last response named, when known; writes
	// sent there skip a follower's forwarding hop.
	toLeader
)

// pick returns the node for a call's first attempt; retries move on from
// the round-robin position.
func (c *Client) pick(r route) *endpoint {
	if r == toLeader {
		if l := c.leader.Load(); l != nil {
			return l.ep
		}
		return c.eps[c.next.Load()%uint64(len(c.eps))]
	}
	return c.eps[c.next.Add(1)%uint64(len(c.eps))]
}

// learnLeader records the leader a server named (API "host:port"). Only
// configured nodes are used: an advertised address may be one this client
// cannot reach or whose certificate names another host, and writes to a
// leader outside the list simply keep going through a follower.
func (c *Client) learnLeader(a string) {
	if a == "" {
		return
	}
	l := c.leader.Load()
	if l != nil && l.addr == a {
		return
	}
	for _, ep := range c.eps {
		if strings.HasSuffix(ep.addr, "://"+a) {
			c.leader.Store(&leaderRef{addr: a, ep: ep})
			c.leaderMoved()
			return
		}
	}
	if l != nil && c.leader.CompareAndSwap(l, nil) {
		c.leaderMoved()
	}
}

// moveWatch is an attempt on the node the client knew as leader: it is cut
// (errLeaderMoved) once the learned leader is another node (see attempt).
type moveWatch struct {
	ep     *endpoint
	cancel context.CancelCauseFunc
}

// watchLeader registers w with the learned leader's changes.
func (c *Client) watchLeader(w *moveWatch) {
	c.movedMu.Lock()
	defer c.movedMu.Unlock()
	if c.watches == nil {
		c.watches = make(map[*moveWatch]struct{})
	}
	c.watches[w] = struct{}{}
}

// unwatchLeader removes w; it is a no-op once w has been cut.
func (c *Client) unwatchLeader(w *moveWatch) {
	c.movedMu.Lock()
	defer c.movedMu.Unlock()
	delete(c.watches, w)
}

// leaderMoved is called after the learned leader changed: it cuts the
// attempts on a node that is no longer the leader. Those on a node that
// still is, or while no leader is known, keep watching.
func (c *Client) leaderMoved() {
	l := c.leader.Load()
	if l == nil {
		return
	}
	var cut []*moveWatch
	c.movedMu.Lock()
	for w := range c.watches {
		if w.ep != l.ep {
			cut = append(cut, w)
			delete(c.watches, w)
		}
	}
	c.movedMu.Unlock()
	for _, w := range cut {
		w.cancel(errLeaderMoved)
	}
}

// forgetLeader drops the learned leader if it is ep, which just failed:
// writes go round-robin until a response names the leader again.
func (c *Client) forgetLeader(ep *endpoint) {
	if l := c.leader.Load(); l != nil && l.ep == ep {
		c.leader.CompareAndSwap(l, nil)
	}
}

// Attempts that stall. A node that has stopped answering (a leader frozen
// by a long pause, a VM migrating) would otherwise hold a call until the
// caller's deadline while another node could answer. Each attempt of a
// call therefore ends, and the call moves on to another node with the same
// idempotency key, when
//
//   - Options.AttemptTimeout passes without an answer, or
//   - the attempt went to the node this client knew as the leader and a
//     response to another call names a different leader meanwhile: the
//     cluster has elected a new one, so the attempt goes there at once.
//
// Moving on is safe for the same reason as any retry here: every call is a
// read or carries an idempotency key, and the ledger answers a repeated key
// with its first result.

// errAttemptTimeout ends an attempt that got no answer within
// Options.AttemptTimeout.
var errAttemptTimeout = errors.New("client: no answer from the node within the attempt timeout")

// errLeaderMoved ends an attempt on the old leader once a response named
// another one.
var errLeaderMoved = errors.New("client: the leader moved while the node did not answer")

// attempt returns the context of one attempt on ep and the function that
// ends it, which reports why the attempt was cut short (nil when it was
// not, or when ctx itself ended). Nothing waits on the attempt's behalf:
// the timeout is a timer's callback and the leader's move reaches it
// through leaderMoved, so an attempt starts no goroutine and ending it
// waits for none. (A watcher goroutine per attempt, its select and the
// wait for it to exit, took about an eighth of a busy client's CPU.)
func (c *Client) attempt(ctx context.Context, ep *endpoint) (context.Context, func() error) {
	actx, cancel := context.WithCancelCause(ctx)
	var w *moveWatch
	if l := c.leader.Load(); l != nil && l.ep == ep {
		w = &moveWatch{ep: ep, cancel: cancel}
		c.watchLeader(w)
		// The leader may have moved between the load and the
		// registration, and its leaderMoved missed w.
		if l := c.leader.Load(); l != nil && l.ep != ep {
			c.unwatchLeader(w)
			cancel(errLeaderMoved)
		}
	}
	var t *time.Timer
	if c.opts.AttemptTimeout > 0 {
		t = time.AfterFunc(c.opts.AttemptTimeout, func() { cancel(errAttemptTimeout) })
	}
	return actx, func() error {
		if t != nil {
			t.Stop()
		}
		if w != nil {
			c.unwatchLeader(w)
		}
		cause := context.Cause(actx)
		cancel(context.Canceled)
		if ctx.Err() == nil && (errors.Is(cause, errAttemptTimeout) || errors.Is(cause, errLeaderMoved)) {
			return cause
		}
		return nil
	}
}

// do runs fn against nodes, the first chosen by r, then in round-robin
// order, until it succeeds, fails with a non-retryable error, runs out of
// attempts, or ctx ends. fn gets the attempt's context (see attempt).
func do[T any](ctx context.Context, c *Client, r route, fn func(context.Context, *endpoint) (T, error)) (T, error) {
	var zero T
	var last error
	backoff := c.opts.BaseBackoff
	var hinted *endpoint
	for attempt := 0; attempt < c.opts.MaxAttempts; attempt++ {
		var ep *endpoint
		switch {
		case hinted != nil:
			ep, hinted = hinted, nil
		case attempt == 0:
			ep = c.pick(r)
		default:
			ep = c.eps[c.next.Load()%uint64(len(c.eps))]
		}
		actx, end := c.attempt(ctx, ep)
		v, err := fn(actx, ep)
		cut := end()
		if err == nil {
			return v, nil
		}
		if cut != nil {
			// The node did not answer in time, or the leader moved away
			// from it: not the server's answer, so retryable.
			err = connect.NewError(connect.CodeUnavailable, fmt.Errorf("%w (%s): %w", cut, ep.addr, err))
		}
		last = err
		if !Retryable(err) || ctx.Err() != nil {
			return zero, err
		}
		c.forgetLeader(ep)
		// Follow the server's leader hint once, else the leader a response
		// just named when this node stalled, else move on to the next node
		// (another caller may have done so already).
		hinted = c.hinted(err)
		if l := c.leader.Load(); hinted == nil && cut != nil && l != nil && l.ep != ep {
			hinted = l.ep
		}
		c.next.Add(1)
		if errors.Is(cut, errLeaderMoved) {
			continue // the new leader is known: no reason to wait
		}
		wait := backoff/2 + time.Duration(mrand.Int64N(int64(backoff)))
		backoff = min(2*backoff, c.opts.MaxBackoff)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, fmt.Errorf("client: giving up after %d attempts: %w", attempt+1, errors.Join(ctx.Err(), last))
		case <-t.C:
		}
	}
	return zero, fmt.Errorf("client: giving up after %d attempts: %w", c.opts.MaxAttempts, last)
}

// key returns k, or a fresh key when k is empty.
func key(k string) string {
	if k == "" {
		return NewKey()
	}
	return k
}
