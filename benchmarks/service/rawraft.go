package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"go.etcd.io/bbolt"

	"github.com/ledgerd/ledgerd/internal/raftgate"
)

// RawRaft is the ceiling: n in-process hashicorp/raft nodes on loopback TCP
// with the stores ledgerd uses (raft-boltdb/v2 with the same bolt options
// as the stable store, and as the log store or hashicorp/raft-wal in a
// wal/ directory beside it, behind the same log cache), ledgerd's raft configuration (raft's defaults
// and the agent's snapshot settings), and a no-op FSM. Every write
// of the mix becomes as many Apply calls of a command of ledgerd's size as
// ledgerd makes Raft entries (hold+commit and modify: two), a read becomes
// VerifyLeader. Nothing is decided, so nothing is ever rejected.
type RawRaft struct {
	nodes  []*raft.Raft
	stores []*raftboltdb.BoltStore
	wals   []*raftwal.WAL
	trans  []*raftgate.Transport
	dir    string
	rmDir  bool
	ids    atomic.Uint64
	leader atomic.Pointer[raft.Raft]
}

type noopFSM struct{ applied atomic.Uint64 }

func (f *noopFSM) Apply(*raft.Log) any { f.applied.Add(1); return nil }
func (f *noopFSM) Snapshot() (raft.FSMSnapshot, error) {
	return noopSnap{}, nil
}
func (f *noopFSM) Restore(r io.ReadCloser) error {
	_, err := io.Copy(io.Discard, r)
	return errors.Join(err, r.Close())
}

type noopSnap struct{}

func (noopSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (noopSnap) Release()                          {}

// boltOptions are the raft.db options of ledgerd's cluster package: no
// free-list sync on commit, hashmap free list.
func boltOptions() *bbolt.Options {
	return &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}
}

// logCacheSize is the size of the in-memory log cache ledgerd's cluster
// package puts in front of raft-boltdb.
const logCacheSize = 512

// rawCommand has the size of the ledgerd commands of the reserve mix once
// stamped: 89 bytes for a one-part reserve, 80 for a cancel, with the Go
// client's 32-character idempotency key.
var rawCommand = make([]byte, 90)

// NewRawRaft starts n nodes under dir (a temporary directory when empty)
// with their Raft log in logStore ("boltdb", the default when empty, or
// "wal", as ledgerd's raft_log_store) and waits for a leader. With tc the nodes' transport is TLS with it, as
// a secured ledgerd's Raft transport is (tc must carry a certificate for
// 127.0.0.1 that serves as server and client, the CA as RootCAs and
// ClientCAs, and RequireAndVerifyClientCert); nil is plain TCP.
func NewRawRaft(n int, dir string, tc *tls.Config, logStore string) (*RawRaft, error) {
	if n <= 0 {
		return nil, fmt.Errorf("rawraft: nodes = %d: must be > 0", n)
	}
	switch logStore {
	case "", "boltdb", "wal":
	default:
		return nil, fmt.Errorf("rawraft: log store %q: want boltdb or wal", logStore)
	}
	r := &RawRaft{dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "rawraft-")
		if err != nil {
			return nil, fmt.Errorf("rawraft: %w", err)
		}
		r.dir, r.rmDir = d, true
	}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: io.Discard})
	var servers []raft.Server
	for i := range n {
		var t *raft.NetworkTransport
		var err error
		if tc == nil {
			t, err = raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 10*time.Second, logger)
		} else {
			var ln net.Listener
			if ln, err = tls.Listen("tcp", "127.0.0.1:0", tc); err == nil {
				t = raft.NewNetworkTransportWithLogger(&tlsStream{Listener: ln, conf: tc}, 3, 10*time.Second, logger)
			}
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("rawraft: transport %d: %w", i, err)
		}
		r.trans = append(r.trans, raftgate.New(t))
		servers = append(servers, raft.Server{ID: raft.ServerID(strconv.Itoa(i)), Address: t.LocalAddr()})
	}
	for i := range n {
		d := filepath.Join(r.dir, strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.Close()
			return nil, fmt.Errorf("rawraft: %w", err)
		}
		store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(d, "raft.db"), BoltOptions: boltOptions()})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("rawraft: store %d: %w", i, err)
		}
		r.stores = append(r.stores, store)
		snaps, err := raft.NewFileSnapshotStoreWithLogger(d, 2, logger)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("rawraft: snapshots %d: %w", i, err)
		}
		var log raft.LogStore = store
		if logStore == "wal" {
			wd := filepath.Join(d, "wal")
			if err := os.MkdirAll(wd, 0o755); err != nil {
				r.Close()
				return nil, fmt.Errorf("rawraft: %w", err)
			}
			w, err := raftwal.Open(wd)
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("rawraft: wal %d: %w", i, err)
			}
			r.wals = append(r.wals, w)
			log = w
		}
		// The store stack of a ledgerd node: recent entries cached in
		// memory in front of the log store, so that replication does not
		// read every entry just written back from disk.
		logs, err := raft.NewLogCache(logCacheSize, log)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("rawraft: log cache %d: %w", i, err)
		}
		cfg := raft.DefaultConfig()
		cfg.LocalID = servers[i].ID
		cfg.Logger = logger
		// A ledgerd agent's snapshot defaults: snapshots (and the log
		// compaction behind them) happen within a cell, as on ledgerd.
		cfg.SnapshotInterval = 10 * time.Second
		cfg.SnapshotThreshold = 16384
		cfg.TrailingLogs = 10240
		// And its buffered apply channel (cluster/node.go).
		cfg.BatchApplyCh = true
		node, err := raft.NewRaft(cfg, &noopFSM{}, logs, store, snaps, r.trans[i])
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("rawraft: node %d: %w", i, err)
		}
		r.trans[i].Bind(node)
		r.nodes = append(r.nodes, node)
	}
	if err := r.nodes[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		r.Close()
		return nil, fmt.Errorf("rawraft: bootstrap: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.findLeader() == nil {
		if time.Now().After(deadline) {
			r.Close()
			return nil, errors.New("rawraft: no leader after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r, nil
}

// tlsStream is a raft.StreamLayer over TLS: it accepts on a TLS listener
// and dials peers with the same configuration (by IP address).
type tlsStream struct {
	net.Listener
	conf *tls.Config
}

// Dial implements raft.StreamLayer.
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return (&tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.conf}).Dial("tcp", string(addr))
}

func (r *RawRaft) findLeader() *raft.Raft {
	for _, n := range r.nodes {
		if n.State() == raft.Leader {
			r.leader.Store(n)
			return n
		}
	}
	return nil
}

func (r *RawRaft) apply(ctx context.Context, k int) error {
	for range k {
		for attempt := 0; ; attempt++ {
			l := r.leader.Load()
			if l == nil {
				l = r.findLeader()
			}
			if l == nil {
				// An election is under way (a leader lost its lease
				// on a loaded machine): wait it out as a refused
				// Apply is waited out below.
				if attempt >= 50 {
					return raft.ErrNotLeader
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("apply: no leader: %w", ctx.Err())
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			timeout := 10 * time.Second
			if d, ok := ctx.Deadline(); ok {
				timeout = time.Until(d)
			}
			err := l.Apply(rawCommand, timeout).Error()
			if err == nil {
				break
			}
			if errors.Is(err, raft.ErrNotLeader) && attempt < 50 {
				r.leader.Store(nil)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return fmt.Errorf("apply: %w", err)
		}
	}
	return nil
}

func (r *RawRaft) book(ctx context.Context, s Shape, entries int) (Booking, error) {
	if err := r.apply(ctx, entries); err != nil {
		return Booking{}, err
	}
	return Booking{ID: strconv.FormatUint(r.ids.Add(1), 10), Shape: s, Start: s.NotBefore}, nil
}

// Name implements System.
func (r *RawRaft) Name() string { return "raw raft" }

// Setup implements System: one Apply per resource.
func (r *RawRaft) Setup(ctx context.Context, resources []string, _ int64) error {
	return r.apply(ctx, len(resources))
}

// Reserve implements System: one Apply.
func (r *RawRaft) Reserve(ctx context.Context, s Shape) (Booking, error) { return r.book(ctx, s, 1) }

// HoldCommit implements System: two Applies.
func (r *RawRaft) HoldCommit(ctx context.Context, s Shape) (Booking, error) {
	return r.book(ctx, s, 2)
}

// Modify implements System: two Applies.
func (r *RawRaft) Modify(ctx context.Context, b Booking, s Shape) (Booking, error) {
	if err := r.apply(ctx, 2); err != nil {
		return b, err
	}
	b.Shape = s
	return b, nil
}

// Cancel implements System: one Apply.
func (r *RawRaft) Cancel(ctx context.Context, _ Booking) error { return r.apply(ctx, 1) }

// Read implements System: VerifyLeader, the cost of a linearizable read.
func (r *RawRaft) Read(context.Context, Booking) error {
	l := r.leader.Load()
	if l == nil {
		if l = r.findLeader(); l == nil {
			return raft.ErrNotLeader
		}
	}
	return l.VerifyLeader().Error()
}

// ErrorCode implements System.
func (r *RawRaft) ErrorCode(err error) string {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return "not_leader"
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "other"
}

// Close implements System: shuts every node down and removes a temporary
// data directory.
func (r *RawRaft) Close() error {
	var errs []error
	for _, n := range r.nodes {
		errs = append(errs, n.Shutdown().Error())
	}
	for _, t := range r.trans {
		errs = append(errs, t.Close())
	}
	for _, w := range r.wals {
		errs = append(errs, w.Close())
	}
	for _, s := range r.stores {
		errs = append(errs, s.Close())
	}
	if r.rmDir {
		errs = append(errs, os.RemoveAll(r.dir))
	}
	return errors.Join(errs...)
}
