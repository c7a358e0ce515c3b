package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// maxMetaSize is memberlist's limit on node metadata.
const maxMetaSize = memberlist.MetaMaxSize

// nodeMeta is what each server announces in gossip. Keep it small: it must
// fit in 512 bytes.
type nodeMeta struct {
	ID      string `json:"id"`
	Name    string `json:"n,omitempty"`
	Raft    string `json:"r"`
	RPC     string `json:"h"`
	Expect  int    `json:"e,omitempty"`
	Version string `json:"v,omitempty"`
	// Leaving is set (and gossiped) just before a graceful leave, so peers
	// can tell a departure from a failure: memberlist reports both through
	// NotifyLeave without a usable state on the node it passes.
	Leaving bool `json:"l,omitempty"`
	// Envelope is the highest FSM envelope version this server can apply
	// (Config.EnvelopeVersion). Servers of the previous release do not
	// send it (they ignore the field when they decode ours, as
	// encoding/json skips unknown keys); absent means 1.
	Envelope uint32 `json:"ev,omitempty"`
	// Insecure is set by a server that runs without authenticating all
	// its peers and callers (Config.Insecure).
	Insecure bool `json:"in,omitempty"`
}

func (m nodeMeta) encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode gossip meta: %w", err)
	}
	if len(b) > maxMetaSize {
		return nil, fmt.Errorf("cluster: gossip meta is %d bytes, limit %d (shorten NodeName or addresses)", len(b), maxMetaSize)
	}
	return b, nil
}

func decodeMeta(b []byte) (nodeMeta, error) {
	var m nodeMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("cluster: decode gossip meta: %w", err)
	}
	if m.ID == "" || m.Raft == "" {
		return m, fmt.Errorf("cluster: gossip meta lacks id or raft address")
	}
	return m, nil
}

// gossipStatus is a member's health as gossip last reported it.
type gossipStatus string

const (
	statusAlive   gossipStatus = "alive"
	statusSuspect gossipStatus = "suspect"
	statusFailed  gossipStatus = "failed"
	statusLeft    gossipStatus = "left"
)

// peer is a server known through gossip.
type peer struct {
	meta   nodeMeta
	status gossipStatus
	since  time.Time // when status last changed
}

// gossip holds the memberlist and the view of servers built from its events.
// The event methods run on memberlist's goroutines; they only update the
// view and kick the membership loop, never touch Raft.
type gossip struct {
	ml   *memberlist.Memberlist
	kick chan struct{}

	mu    sync.Mutex
	meta  []byte           // this node's encoded meta
	peers map[string]*peer // by server ID
}

func (g *gossip) notify() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// NodeMeta implements memberlist.Delegate.
func (g *gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.meta) > limit {
		return nil
	}
	return g.meta
}

// setMeta replaces this node's meta; callers then push it with UpdateNode.
func (g *gossip) setMeta(b []byte) {
	g.mu.Lock()
	g.meta = b
	g.mu.Unlock()
}

// NotifyMsg implements memberlist.Delegate; ledgerd sends no user messages.
func (g *gossip) NotifyMsg([]byte) {}

// GetBroadcasts implements memberlist.Delegate.
func (g *gossip) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState implements memberlist.Delegate.
func (g *gossip) LocalState(bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate.
func (g *gossip) MergeRemoteState([]byte, bool) {}

func (g *gossip) upsert(n *memberlist.Node, status gossipStatus) {
	m, err := decodeMeta(n.Meta)
	if err != nil {
		return // not a ledgerd server (or a corrupt announcement): ignore
	}
	if n.Name != m.ID {
		// A server's memberlist name is its ID, and memberlist keeps one
		// live member per name; a meta naming another ID would let one
		// member overwrite another's entry (and its RPC address, which
		// followers forward writes to).
		return
	}
	g.mu.Lock()
	p, ok := g.peers[m.ID]
	if status == statusFailed && (m.Leaving || ok && p.meta.Leaving) {
		status = statusLeft
	}
	if !ok || p.status != status {
		g.peers[m.ID] = &peer{meta: m, status: status, since: time.Now()}
	} else {
		p.meta = m
	}
	g.mu.Unlock()
	g.notify()
}

// NotifyJoin implements memberlist.EventDelegate.
func (g *gossip) NotifyJoin(n *memberlist.Node) { g.upsert(n, statusAlive) }

// NotifyUpdate implements memberlist.EventDelegate (meta changed).
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.upsert(n, statusAlive) }

// NotifyLeave implements memberlist.EventDelegate. It fires for graceful
// leaves and for failures alike, and the State field of the node it passes
// is not kept current by memberlist, so a departure is recognised by the
// Leaving flag the node gossiped before it left.
func (g *gossip) NotifyLeave(n *memberlist.Node) { g.upsert(n, statusFailed) }

// snapshot returns a copy of the current view.
func (g *gossip) snapshot() map[string]peer {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]peer, len(g.peers))
	for id, p := range g.peers {
		out[id] = *p
	}
	return out
}

// splitHostPort parses a host:port into memberlist's address and port.
func splitHostPort(field, addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("cluster: %s %q: %w", field, addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("cluster: %s %q: bad port", field, addr)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, p, nil
}
