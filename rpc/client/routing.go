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
			return
		}
	}
	if l != nil {
		c.leader.CompareAndSwap(l, nil)
	}
}

// forgetLeader drops the learned leader if it is ep, which just failed:
// writes go round-robin until a response names the leader again.
func (c *Client) forgetLeader(ep *endpoint) {
	if l := c.leader.Load(); l != nil && l.ep == ep {
		c.leader.CompareAndSwap(l, nil)
	}
}

// do runs fn against nodes, the first chosen by r, then in round-robin
// order, until it succeeds, fails with a non-retryable error, runs out of
// attempts, or ctx ends.
func do[T any](ctx context.Context, c *Client, r route, fn func(*endpoint) (T, error)) (T, error) {
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
		v, err := fn(ep)
		if err == nil {
			return v, nil
		}
		last = err
		if !Retryable(err) || ctx.Err() != nil {
			return zero, err
		}
		c.forgetLeader(ep)
		// Follow the server's leader hint once, else move on to the next
		// node (another caller may have done so already).
		hinted = c.hinted(err)
		c.next.Add(1)
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
