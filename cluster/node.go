package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/ledgerd/ledgerd/internal/raftgate"
)

// Version is announced in gossip meta so operators can see mixed versions
// during a rolling upgrade. 0.2.0 forwards only to /internal/applybatch
// and still serves the deprecated /internal/apply for 0.1.0 followers.
const Version = "0.2.0"

// logCacheSize is how many recent log entries stay in memory in front of
// raft.db (several batches of raft's default MaxAppendEntries of 64).
const logCacheSize = 512

// Node is one ledgerd server: a Raft replica plus its gossip member. All
// methods are safe for concurrent use.
type Node struct {
	cfg Config
	id  string
	log *slog.Logger

	fsm    *trackedFSM
	store  *raftboltdb.BoltStore // stable store; the log too with LogStoreBoltDB
	wal    *logStore             // the log store (store itself, or raft-wal)
	logs   *raft.LogCache        // recent entries in memory, in front of wal
	snaps  *raft.FileSnapshotStore
	trans  *raftgate.Transport
	raft   *raft.Raft
	gossip *gossip
	ap     *autopilot.Autopilot
	client *http.Client
	// scheme is "https" when peers' HTTP APIs use TLS, else "http".
	scheme string
	m      *metrics

	meta     nodeMeta // what this node announces
	started  time.Time
	raftConf raft.Config // as started; timeouts restored after an early election
	keys     *keyring    // gossip keyring; nil when gossip is unencrypted
	hadState bool        // raft state existed on disk at start

	// check is the log check (logcheck.go).
	check *logCheck

	// readable is the term in which this node, as leader, completed a
	// barrier; reads on the leader wait for it so the FSM reflects every
	// entry committed by earlier leaders.
	readable atomic.Uint64
	// leaderSince is when this node last became leader (UnixNano).
	leaderSince atomic.Int64
	// ready latches once the node first caught up at startup; Ready
	// also asks for a leader and a bounded lag (ready.go).
	ready atomic.Bool
	// leaderCommit is the leader's commit index as a follower last
	// learned it from the leader's status (ready.go).
	leaderCommit atomic.Uint64

	removeCh chan string // failed servers autopilot wants removed

	// contacts is the outcome of the latest status probe of each peer
	// (contact.go); Members reports a server whose probes fail as
	// unreachable before gossip declares it failed.
	contacts contacts
	// moved is closed and replaced whenever this node's view of the
	// leadership changes; calls to the leader end with it (leaderwatch.go).
	moved *leaderWatch

	// reconcileRounds counts the leader's reconcile rounds and
	// refusedJoins the gossip members it kept out of Raft (membership.go).
	reconcileRounds atomic.Uint64
	refusedJoins    atomic.Uint64
	// joinFailures counts the gossip join attempts that reached nobody
	// (bootstrap.go); tests wait on it to know a join was tried.
	joinFailures atomic.Uint64
	// snapByVolume counts the snapshots snapshotByVolumeLoop took.
	snapByVolume atomic.Uint64
	refusedMu    sync.Mutex
	refused      map[string]string // member ID -> last reason logged

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closed   atomic.Bool
	shutOnce sync.Once
	shutErr  error
}

// New opens (or creates) the node's data under cfg.DataDir, starts Raft,
// the transport and gossip, and begins joining or bootstrapping. It returns
// once the node runs; use Leader or Ready to learn when the cluster is
// usable. fsm.Apply must return []byte, an error, or nil.
func New(cfg Config, fsm raft.FSM) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if fsm == nil {
		return nil, fmt.Errorf("cluster: fsm is nil")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: create data dir: %w", err)
	}
	id, err := loadOrCreateNodeID(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		started:  time.Now(),
		cfg:      cfg,
		id:       id,
		log:      cfg.Logger.With("node", cfg.NodeName, "id", id),
		fsm:      newTrackedFSM(fsm),
		client:   &http.Client{Timeout: cfg.ForwardTimeout, Transport: peerTransport(cfg.RPCTLS)},
		scheme:   peerScheme(cfg.RPCTLS),
		removeCh: make(chan string, 16),
		moved:    newLeaderWatch(),
		ctx:      ctx,
		cancel:   cancel,
	}
	n.fsm.log = n.log
	n.fsm.volume = newLogVolume(cfg.SnapshotLogBytes)
	n.fsm.restart = newRestartModel(cfg.RestartTarget)
	n.check = newLogCheck(cfg.LogCheckWindow)
	n.fsm.check, n.fsm.checked = n.check, n.reportMismatches
	if cfg.onApplyPanic != nil {
		n.fsm.fatal = func(msg string) {
			cfg.onApplyPanic(msg)
			<-n.ctx.Done()
		}
	}
	ok := false
	defer func() {
		if !ok {
			n.closeResources()
			cancel()
		}
	}()
	if err := n.createRaft(); err != nil {
		return nil, err
	}
	if err := n.createGossip(); err != nil {
		return nil, err
	}
	n.m = newMetrics(n)
	if cfg.Registerer != nil {
		if err := n.m.register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	if n.hadState {
		n.electNowIfSoleVoter()
	}
	n.ap = autopilot.New(n.raft, &apDelegate{n: n},
		autopilot.WithLogger(newHclog(n.log, "autopilot")),
		autopilot.WithReconcileInterval(cfg.ReconcileInterval),
		autopilot.WithUpdateInterval(max(cfg.ReconcileInterval/2, 100*time.Millisecond)))
	ok = true
	n.startLoops()
	n.log.Info("node started", "raft", n.trans.LocalAddr(), "gossip", n.gossipAddr(),
		"rpc", cfg.RPCAdvertise, "existing_state", n.hadState)
	return n, nil
}

// ID returns this node's Raft server ID (persisted in DataDir/node-id).
func (n *Node) ID() string { return n.id }

// RaftAddr returns the address peers use for this node's Raft transport.
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// GossipAddr returns the host:port peers can join this node's gossip at.
func (n *Node) GossipAddr() string { return n.gossipAddr() }

func (n *Node) gossipAddr() string {
	ln := n.gossip.ml.LocalNode()
	return ln.Address()
}

func (n *Node) createRaft() error {
	cfg := n.cfg
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.id)
	rc.Logger = newHclog(n.log, "raft")
	// ApplyBatch proposes a batch's commands from one goroutine, back to
	// back. With raft's unbuffered apply channel the leader loop would take
	// them one at a time and write and sync each alone; buffered, it drains
	// them into one log write and one replication round.
	rc.BatchApplyCh = true
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	}
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("cluster: raft config: %w", err)
	}
	kind, err := ResolveLogStore(cfg.DataDir, cfg.LogStore)
	if err != nil {
		return fmt.Errorf("cluster: Config.LogStore: %w", err)
	}
	store, err := openRaftDB(cfg.DataDir)
	if errors.Is(err, errRaftDBLocked) {
		return fmt.Errorf("cluster: open raft.db: %w: is an agent already running on data_dir %s?", err, cfg.DataDir)
	}
	if err != nil {
		return fmt.Errorf("cluster: open raft.db: %w", err)
	}
	n.store = store
	ls, err := openLogStore(cfg.DataDir, kind, store, n.log)
	if err != nil {
		return err
	}
	n.wal = ls
	n.log.Info("opened raft.db", "log_store", kind, "since_start", time.Since(n.started).Round(time.Millisecond))
	snaps, err := openSnapshotStore(cfg.DataDir, n.log)
	if err != nil {
		return fmt.Errorf("cluster: open snapshot store: %w", err)
	}
	n.snaps = snaps
	stream, err := newStreamLayer(cfg.RaftBind, cfg.RaftAdvertise, cfg.RaftTLS, cfg.Migration)
	if err != nil {
		return err
	}
	n.trans = raftgate.New(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  newHclog(n.log, "transport"),
	}))
	n.hadState, err = raft.HasExistingState(ls, store, snaps)
	if err != nil {
		return fmt.Errorf("cluster: inspect raft state: %w", err)
	}
	// Recent entries are served from memory: replication to followers
	// and the FSM goroutine would otherwise read every entry just written
	// back from the log store.
	logs, err := raft.NewLogCache(logCacheSize, ls)
	if err != nil {
		return fmt.Errorf("cluster: log cache: %w", err)
	}
	n.logs = logs
	// NewRaft restores the newest snapshot before it returns; the entries
	// after it are replayed once a leader commits them.
	// A restore here may leave its closing collection for after the log
	// tail when the local log holds all the node will replay: in a
	// configuration of one server. A member of a larger cluster also
	// receives what the leader committed while it was down, which its
	// local log does not show (trackedFSM.startTail).
	if soleServer(snaps) {
		lastLog := ls.LastIndex
		n.fsm.startLog.Store(&lastLog)
	}
	mapped := newMappedSnapshotStore(snaps, cfg.DataDir)
	n.fsm.snaps = mapped
	r, err := raft.NewRaft(rc, n.fsm, logs, store, mapped, n.trans)
	n.fsm.startLog.Store(nil)
	if err != nil {
		return fmt.Errorf("cluster: start raft: %w", err)
	}
	// Heartbeats that change nothing may now take raft's fast path;
	// until here every heartbeat went through its main loop.
	n.trans.Bind(r)
	n.raft = r
	n.raftConf = *rc
	st := r.Stats()
	n.log.Info("raft started", "since_start", time.Since(n.started).Round(time.Millisecond),
		"snapshot_index", st["last_snapshot_index"], "last_index", st["last_log_index"])
	return nil
}

// boltOptions tunes raft.db for a log that grows and is then compacted
// behind every snapshot, which leaves the file mostly free pages. By
// default bolt writes its whole free-page list on every commit (each raft
// append) and keeps it as a sorted array: with 1M reservations that cost
// about 120 MiB of heap and a third of the node's CPU under write load.
// Without the sync bolt rebuilds the list by scanning the file when it
// opens it (about 0.1 s for a 400 MB raft.db); the hashmap list is the
// faster of bolt's two for large lists.
//
// Bolt locks the file while it is open, and by default waits for the lock
// without end: a second agent started on a data directory in use hung
// without a word (and did not stop on SIGTERM). It waits a second.
func boltOptions() *bbolt.Options {
	return &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, Timeout: time.Second}
}

// errRaftDBLocked means another process holds raft.db (an agent running
// on the data directory).
var errRaftDBLocked = errors.New("locked by another process")

// openRaftDB opens dir's raft.db with boltOptions, for the node and for
// recover alike; a lock not had within the options' timeout is
// errRaftDBLocked, naming the file.
func openRaftDB(dir string) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: boltOptions()})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is %w", path, errRaftDBLocked)
	}
	return store, err
}

func (n *Node) createGossip() error {
	n.meta = nodeMeta{
		ID: n.id, Name: n.cfg.NodeName, Raft: string(n.trans.LocalAddr()), RPC: n.cfg.RPCAdvertise,
		Expect: n.cfg.BootstrapExpect, Version: Version, Envelope: n.cfg.EnvelopeVersion, Insecure: n.cfg.Insecure,
	}
	meta, err := n.meta.encode()
	if err != nil {
		return err
	}
	keys, fromFile, err := newKeyring(n.cfg.DataDir, n.cfg.GossipKey)
	if err != nil {
		return err
	}
	if fromFile {
		n.log.Info("gossip keyring loaded from the data dir; it takes precedence over the configured gossip key", "file", keyringFile, "keys", len(keys.kr.GetKeys()))
	}
	n.keys = keys
	g := &gossip{meta: meta, kick: make(chan struct{}, 1), peers: map[string]*peer{}}
	mc, err := n.cfg.gossipConfig(n.id, g)
	if err != nil {
		return err
	}
	if keys != nil {
		mc.SecretKey, mc.Keyring = nil, keys.kr
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("cluster: start gossip on %s: %w", n.cfg.GossipBind, err)
	}
	g.ml = ml
	n.gossip = g
	return nil
}

// closeResources releases whatever New managed to open.
func (n *Node) closeResources() {
	if n.gossip != nil && n.gossip.ml != nil {
		_ = n.gossip.ml.Shutdown()
	}
	if n.raft != nil && !n.waitDone(closedCh(func() { _ = n.raft.Shutdown().Error() }), stopWait, "raft shutdown") {
		return // raft may still use the stores
	}
	_ = n.closeStores()
}

// closeStores closes the transport, the log store and raft.db once raft
// has shut down. Closing the transport first waits for the heartbeats
// raft is handling off its main loop (internal/raftgate), so none of
// them writes to a store after it is closed; the stores stay open, for
// good (errStoresOpen), if that wait has not ended within stopWait.
func (n *Node) closeStores() error {
	var errs []error
	if n.trans != nil {
		var closeErr error
		if !n.waitDone(closedCh(func() { closeErr = n.trans.Close() }), stopWait, "transport close") {
			return fmt.Errorf("cluster: a heartbeat still in flight after %s: %w", stopWait, errStoresOpen)
		}
		if closeErr != nil {
			errs = append(errs, fmt.Errorf("cluster: transport close: %w", closeErr))
		}
	}
	if err := n.wal.Close(); err != nil {
		errs = append(errs, fmt.Errorf("cluster: close log store: %w", err))
	}
	if n.store != nil {
		if err := n.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: close raft.db: %w", err))
		}
	}
	return errors.Join(errs...)
}

// errStoresOpen means closeStores left the stores open, since a heartbeat
// raft handled off its main loop had not ended: the node's other
// resources must stay too.
var errStoresOpen = errors.New("the stores stay open")

func (n *Node) startLoops() {
	n.goLoop(n.leaderWatchLoop)
	n.goLoop(n.joinLoop)
	n.goLoop(n.bootstrapLoop)
	n.goLoop(n.leadershipLoop)
	n.goLoop(n.readyLoop)
	n.goLoop(n.snapshotByVolumeLoop)
	n.goLoop(n.logCheckLoop)
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// sleep waits d or until shutdown; it reports whether the node still runs.
func (n *Node) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.ctx.Done():
		return false
	}
}

// Leader returns the current leader's server ID and RPC address, or empty
// strings when no leader is known.
func (n *Node) Leader() (id, rpcAddr string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if string(lid) == n.id {
		return n.id, n.cfg.RPCAdvertise
	}
	if p, ok := n.gossip.snapshot()[string(lid)]; ok {
		return string(lid), p.meta.RPC
	}
	return string(lid), ""
}

// IsLeader reports whether this node is the Raft leader right now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// AppliedIndex returns the index of the last log entry the FSM applied.
func (n *Node) AppliedIndex() uint64 { return n.fsm.Applied() }

// mapRaftErr turns hashicorp/raft errors into this package's sentinels,
// keeping the original in the chain.
func mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrShutdown, err)
	}
	return err
}

// Shutdown stops the node gracefully: a leader first hands leadership to
// another voter, then the node snapshots (with SnapshotOnShutdown), leaves
// gossip (so the new leader removes it from the configuration) and stops
// Raft. Safe to call more than once.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutOnce.Do(func() {
		n.closed.Store(true)
		if n.raft.State() == raft.Leader && n.otherVoters() > 0 {
			if err := n.waitFuture(ctx, "transfer leadership", n.raft.LeadershipTransfer()); err != nil {
				n.log.Warn("leadership transfer before shutdown failed", "err", err)
			}
		}
		if n.cfg.SnapshotOnShutdown {
			n.shutdownSnapshot(ctx)
		}
		leave := 2 * time.Second
		if d, ok := ctx.Deadline(); ok {
			leave = max(min(leave, time.Until(d)), 100*time.Millisecond)
		}
		// Announce the departure first so peers record a leave, not a
		// failure, when we go.
		m := n.meta
		m.Leaving = true
		if b, err := m.encode(); err == nil {
			n.gossip.setMeta(b)
			if err := n.gossip.ml.UpdateNode(leave); err != nil {
				n.log.Warn("gossip leave announcement", "err", err)
			}
		}
		if err := n.gossip.ml.Leave(leave); err != nil {
			n.log.Warn("gossip leave", "err", err)
		}
		n.shutErr = n.stop()
		n.log.Info("node stopped")
	})
	return n.shutErr
}

// stop tears everything down without leaving gossip or handing over
// leadership: what a crash looks like to the rest of the cluster.
func (n *Node) stop() error {
	n.closed.Store(true)
	n.cancel()
	var errs []error
	if err := n.gossip.ml.Shutdown(); err != nil {
		errs = append(errs, fmt.Errorf("cluster: gossip shutdown: %w", err))
	}
	// raft's shutdown waits for its own goroutines, the FSM's included;
	// an FSM that never returns must not hang the caller, so neither may
	// this wait. When it times out the stores stay open: raft may still
	// use them.
	var raftErr error
	if !n.waitDone(closedCh(func() { raftErr = n.raft.Shutdown().Error() }), stopWait, "raft shutdown") {
		return errors.Join(append(errs, fmt.Errorf("cluster: raft shutdown: not done after %s (an FSM call that does not return?)", stopWait))...)
	}
	if raftErr != nil {
		errs = append(errs, fmt.Errorf("cluster: raft shutdown: %w", raftErr))
	}
	if !n.waitDone(closedCh(n.wg.Wait), stopWait, "node goroutines") {
		errs = append(errs, fmt.Errorf("cluster: node goroutines still running after %s", stopWait))
	}
	if err := n.closeStores(); err != nil {
		errs = append(errs, err)
		if errors.Is(err, errStoresOpen) {
			return errors.Join(errs...)
		}
	}
	n.client.CloseIdleConnections()
	if n.m != nil && n.cfg.Registerer != nil {
		n.m.unregister(n.cfg.Registerer)
	}
	return errors.Join(errs...)
}

func (n *Node) otherVoters() int {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return 0
	}
	c := 0
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage == raft.Voter && string(s.ID) != n.id {
			c++
		}
	}
	return c
}

// soleServer reports whether the newest snapshot in snaps records a
// configuration of exactly one server (false when there is none or it
// cannot be listed).
func soleServer(snaps raft.SnapshotStore) bool {
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return false
	}
	return len(metas[0].Configuration.Servers) == 1
}
