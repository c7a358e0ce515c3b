package cluster

import (
	"context"
	"errors"
	"sync"
	"time"
)

// contactWindow is how long a failed status probe of a server counts
// against it. Gossip declares a dead server failed within a few seconds
// (probe interval × suspicion multiplier); a probe failure older than
// this with no later success is left to gossip, so a server that came
// back and is no longer probed (a former leader) is not shown
// unreachable forever.
const contactWindow = 10 * time.Second

// contacts remembers the last status probe of each peer's API address.
// Followers probe the leader every readyPoll and the leader's autopilot
// probes every server, so a server that stopped answering — killed,
// paused, or cut off — is seen within a fraction of a second, long
// before gossip's failure detector declares it failed. Members uses it
// to stop calling such a server alive.
type contacts struct {
	mu   sync.Mutex
	last map[string]contact // by API address
}

// contact is the outcome of the latest probe of one address.
type contact struct {
	ok bool
	at time.Time
	// err is why the latest failed probe failed.
	err string
}

// record keeps the outcome of one probe. A probe cut short by this
// node's own shutdown or its caller's cancellation says nothing about
// the peer and is not kept.
func (c *contacts) record(addr string, err error, now time.Time) {
	if errors.Is(err, context.Canceled) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]contact{}
	}
	ct := contact{ok: err == nil, at: now}
	if err != nil {
		ct.err = err.Error()
	}
	c.last[addr] = ct
}

// unreachable reports whether the latest probe of addr failed, within
// contactWindow before now and after since (when gossip last changed
// the server's state: a server that rejoined since is judged afresh).
func (c *contacts) unreachable(addr string, since, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.last[addr]
	return ok && !ct.ok && ct.at.After(since) && now.Sub(ct.at) <= contactWindow
}
