package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/crc64ecma"
)

// The log check: replicas compare, window by window, the entries they
// applied, and report a difference at once rather than when someone next
// reads every replica. Raft promises that committed logs agree; the check
// watches that promise, which a bug in raft (hashicorp/raft#695, see
// internal/raftgate) once broke silently for a whole chaos campaign.
//
// Each node sums (CRC-64) every entry its FSM is handed, in windows of
// DefaultLogCheckWindow consecutive indices, and keeps the sums of its
// last logCheckKeep complete windows. Every DefaultLogCheckInterval it
// fetches each live peer's newer sums (/internal/logcheck) and compares
// them with its own, window by window, each window once per peer; a
// window it has not finished yet is compared when it finishes. A window
// counts only if the node applied all of it from the log: a snapshot
// restore inside a window leaves that window out. The check observes; it
// never stops a node or changes what it applies.

// DefaultLogCheckWindow is the number of consecutive log indices a log
// check window covers (Config.LogCheckWindow).
const DefaultLogCheckWindow = 1 << 14

// DefaultLogCheckInterval is how often a node compares its windows with
// its peers' (Config.LogCheckInterval).
const DefaultLogCheckInterval = 10 * time.Second

// logCheckKeep is how many complete windows a node keeps for its peers
// (16 KiB of sums; 16M entries with the default window, far more than a
// check interval sees).
const logCheckKeep = 1024

// windowSum is the sum of one complete window.
type windowSum struct {
	Window uint64 `json:"w"`
	Sum    uint64 `json:"s"`
}

// checkClaim is what a node answers on /internal/logcheck: how it sums,
// its window size and the sums of its complete windows, oldest first.
type checkClaim struct {
	Alg  string      `json:"a"`
	Size uint64      `json:"n"`
	Sums []windowSum `json:"w"`
}

// checkAlg names what a window sum covers and how. A release that sums
// differently must change it, so that servers of two releases never
// compare sums made two ways.
const checkAlg = "crc64-ecma(index-le64,type,data)/1"

// checkMismatch is a window whose sum differs between this node and peer.
type checkMismatch struct {
	Peer         string
	Window       uint64
	First, Last  uint64 // the window's indices
	Ours, Theirs uint64
}

func (m checkMismatch) String() string {
	return fmt.Sprintf("entries %d-%d: sum %016x here, %016x on %s", m.First, m.Last, m.Ours, m.Theirs, m.Peer)
}

// logCheck sums the entries a node applies and compares the sums with
// its peers'. observe and restored run on the FSM goroutine, peerClaim
// and retain on logCheckLoop's, claim on HTTP handlers'; all are safe for
// concurrent use.
type logCheck struct {
	size uint64

	mu    sync.Mutex
	from  uint64 // the first index after the last restore
	cur   uint64 // the window being summed; math.MaxUint64: none
	sum   uint64
	whole bool                  // cur is summed from its first index
	done  []windowSum           // the last complete windows, in window order
	peers map[string]checkClaim // each peer's last claim
	// compared[peer] is the newest window compared with that peer, so
	// that a window is counted once per peer.
	compared map[string]uint64

	matched, mismatched uint64 // windows compared, by outcome
}

func newLogCheck(size uint64) *logCheck {
	if size == 0 {
		size = DefaultLogCheckWindow
	}
	return &logCheck{size: size, from: 1, cur: math.MaxUint64, peers: map[string]checkClaim{}, compared: map[string]uint64{}}
}

// restored records that the FSM now holds a snapshot at index: the
// window around it is no longer summed whole.
func (c *logCheck) restored(index uint64) {
	c.mu.Lock()
	c.from, c.cur, c.sum, c.whole = index+1, math.MaxUint64, 0, false
	c.mu.Unlock()
}

// observe adds applied entries, in log order, and returns any mismatch
// with a peer's claim that the windows they completed revealed.
func (c *logCheck) observe(logs ...*raft.Log) []checkMismatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	completed := false
	var head [9]byte
	for _, l := range logs {
		if w := l.Index / c.size; w != c.cur {
			if c.whole { // false for the sentinel: no window yet
				c.finish(windowSum{c.cur, c.sum})
				completed = true
			}
			c.cur, c.sum, c.whole = w, 0, c.from <= max(w*c.size, 1)
		}
		binary.LittleEndian.PutUint64(head[:8], l.Index)
		head[8] = byte(l.Type)
		c.sum = crc64ecma.Update(crc64ecma.Update(c.sum, head[:]), l.Data)
	}
	if !completed {
		return nil
	}
	var out []checkMismatch
	for peer := range c.peers {
		out = append(out, c.compare(peer)...)
	}
	return out
}

// finish keeps a complete window.
func (c *logCheck) finish(s windowSum) {
	c.done = append(c.done, s)
	if len(c.done) > logCheckKeep {
		c.done = c.done[len(c.done)-logCheckKeep:]
	}
}

// claim returns this node's window size and complete windows.
func (c *logCheck) claim() checkClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return checkClaim{Alg: checkAlg, Size: c.size, Sums: append([]windowSum(nil), c.done...)}
}

// peerClaim records peer's claim and returns the mismatches it reveals.
// A claim summed another way or with another window size is not
// comparable and is ignored.
func (c *logCheck) peerClaim(peer string, cl checkClaim) []checkMismatch {
	if cl.Alg != checkAlg || cl.Size != c.size || len(cl.Sums) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peers[peer] = cl
	return c.compare(peer)
}

// compare checks peer's last claim against this node's complete windows,
// each window once.
func (c *logCheck) compare(peer string) []checkMismatch {
	var out []checkMismatch
	last, seen := c.compared[peer]
	for _, theirs := range c.peers[peer].Sums {
		if seen && theirs.Window <= last {
			continue
		}
		i := sort.Search(len(c.done), func(i int) bool { return c.done[i].Window >= theirs.Window })
		if i == len(c.done) || c.done[i].Window != theirs.Window {
			continue // not finished here (yet), or not whole
		}
		ours := c.done[i]
		c.compared[peer], last, seen = ours.Window, ours.Window, true
		if ours.Sum == theirs.Sum {
			c.matched++
			continue
		}
		out = append(out, checkMismatch{
			Peer: peer, Window: ours.Window, First: ours.Window * c.size, Last: (ours.Window+1)*c.size - 1,
			Ours: ours.Sum, Theirs: theirs.Sum,
		})
		c.mismatched++
	}
	return out
}

// retain forgets the claims of peers for which keep is false (servers
// that left: a replaced server comes back under a new ID).
func (c *logCheck) retain(keep func(peer string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.peers {
		if !keep(p) {
			delete(c.peers, p)
			delete(c.compared, p)
		}
	}
}

// comparedWith returns the newest window compared with peer, if any.
func (c *logCheck) comparedWith(peer string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.compared[peer]
	return w, ok
}

// counts returns how many windows were compared with a peer, by outcome.
func (c *logCheck) counts() (matched, mismatched uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.matched, c.mismatched
}

// reportMismatches logs each window found to differ from a peer's. It
// runs on the FSM goroutine too, so it must not block.
func (n *Node) reportMismatches(bad []checkMismatch) {
	for _, m := range bad {
		n.log.Error("log check: this server and a peer applied different entries; one of them diverged from the cluster",
			"window", m.String(), "peer", m.Peer, "doc", logCheckDoc)
	}
}

// logCheckDoc is where the operator's response is written down.
const logCheckDoc = `docs/operations.md, "The log check found a difference"`

// serveLogCheck answers a peer with this server's complete windows after
// the one named by the "after" parameter (all of them without it).
func (n *Node) serveLogCheck(w http.ResponseWriter, r *http.Request) {
	cl := n.check.claim()
	if a := r.URL.Query().Get("after"); a != "" {
		after, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			writeErr(w, http.StatusBadRequest, errClassOther, fmt.Errorf("cluster: log check: parameter after: %w", err))
			return
		}
		i := sort.Search(len(cl.Sums), func(i int) bool { return cl.Sums[i].Window > after })
		cl.Sums = cl.Sums[i:]
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(cl)
}

// logCheckLoop compares, every LogCheckInterval, this server's windows
// with each live peer's.
func (n *Node) logCheckLoop() {
	every := n.cfg.LogCheckInterval
	if every <= 0 {
		every = DefaultLogCheckInterval
	}
	for n.sleep(every) {
		members := n.gossip.snapshot()
		n.check.retain(func(id string) bool { _, ok := members[id]; return ok })
		for id, p := range members {
			if id == n.id || p.status != statusAlive || p.meta.RPC == "" {
				continue
			}
			after, ok := n.check.comparedWith(id)
			cl, err := n.fetchLogCheck(n.ctx, p.meta.RPC, after, ok)
			if err != nil {
				// A peer of the previous release has no such endpoint;
				// an unreachable one is checked next time.
				n.log.Debug("log check: fetch a peer's sums", "peer", id, "err", err)
				continue
			}
			n.reportMismatches(n.check.peerClaim(id, cl))
		}
	}
}

// fetchLogCheck asks the peer at rpcAddr for its windows after `after`
// (all of them if !since).
func (n *Node) fetchLogCheck(ctx context.Context, rpcAddr string, after uint64, since bool) (checkClaim, error) {
	var cl checkClaim
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	path := pathLogCheck
	if since {
		path += "?after=" + strconv.FormatUint(after, 10)
	}
	if err := n.getInternal(ctx, rpcAddr, path, 1<<20, &cl); err != nil {
		return cl, fmt.Errorf("cluster: log check of %s: %w", rpcAddr, err)
	}
	return cl, nil
}
