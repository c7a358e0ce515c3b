package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// RecoverConfig names the data of the one surviving server Recover turns
// into a one-server cluster.
type RecoverConfig struct {
	// DataDir is the stopped server's data directory (node-id, raft.db,
	// snapshots, wal/ with LogStoreWAL; the log store is the one it
	// holds). Required.
	DataDir string
	// RaftAddr is the Raft address the server advertises when it starts
	// again (its raft_advertise, or raft_addr). Required.
	RaftAddr string
	// TruncateFrom, if set, drops the log entries from this index on
	// before the replay: the way out when every replica stops on a
	// committed entry (docs/operations.md, "A node stopped on an entry it
	// cannot apply"). The entries dropped were never applied anywhere, so
	// no write among them was acknowledged, but they are gone for good.
	// It must be above the newest snapshot's index.
	TruncateFrom uint64
	// Logger receives Raft's progress; nil discards it.
	Logger *slog.Logger
}

// RecoverInfo reports what Recover did.
type RecoverInfo struct {
	// ID is the server's (unchanged) Raft ID.
	ID string
	// RaftAddr is its address in the new configuration.
	RaftAddr string
	// LastIndex is the last log index the server held; every entry up to
	// it is in the new snapshot.
	LastIndex uint64
	// Previous lists the servers of the last configuration found in the
	// log (empty if only a snapshot held it).
	Previous []raft.Server
	// Dropped is how many log entries TruncateFrom removed.
	Dropped uint64
}

// Recover rewrites the Raft configuration held in a stopped server's data
// directory so that, when started again, it forms a cluster of one voter:
// itself. It replays the server's snapshot and every log entry it holds
// into fsm (the same FSM type the server runs), writes a snapshot of the
// result carrying the new configuration, and truncates the log. Use it
// only when a quorum is lost for good: entries the server never received
// are gone, and the other old servers must never start again with their
// old data (wipe them; they join the recovered server as new servers).
//
// The server must be stopped: Recover fails if raft.db is locked. It
// fails, too, when DataDir holds no node ID or no Raft state.
func Recover(cfg RecoverConfig, fsm raft.FSM) (RecoverInfo, error) {
	var info RecoverInfo
	if cfg.DataDir == "" {
		return info, fmt.Errorf("cluster: recover: RecoverConfig.DataDir is required")
	}
	if _, _, err := splitHostPort("RecoverConfig.RaftAddr", cfg.RaftAddr); err != nil {
		return info, fmt.Errorf("cluster: recover: %w", err)
	}
	if fsm == nil {
		return info, fmt.Errorf("cluster: recover: fsm is nil")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, nodeIDFile))
	if errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("cluster: recover: %s has no %s: not a ledgerd data directory", cfg.DataDir, nodeIDFile)
	}
	if err != nil {
		return info, fmt.Errorf("cluster: recover: read node id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if !validNodeID(id) {
		return info, fmt.Errorf("cluster: recover: %s holds an invalid node id %q", nodeIDFile, id)
	}
	info.ID, info.RaftAddr = id, cfg.RaftAddr
	dbPath := filepath.Join(cfg.DataDir, "raft.db")
	if _, err := os.Stat(dbPath); err != nil {
		return info, fmt.Errorf("cluster: recover: %w", err)
	}
	store, err := openRaftDB(cfg.DataDir)
	if errors.Is(err, errRaftDBLocked) {
		return info, fmt.Errorf("cluster: recover: %w: stop the agent first", err)
	}
	if err != nil {
		return info, fmt.Errorf("cluster: recover: open raft.db: %w", err)
	}
	defer store.Close()
	kind, err := DataDirLogStore(cfg.DataDir)
	if err != nil {
		return info, fmt.Errorf("cluster: recover: %w", err)
	}
	if kind == "" {
		kind = LogStoreBoltDB
	}
	ls, err := openLogStore(cfg.DataDir, kind, store, log)
	if err != nil {
		return info, fmt.Errorf("cluster: recover: %w", err)
	}
	defer ls.Close()
	snaps, err := openSnapshotStore(cfg.DataDir, log)
	if err != nil {
		return info, fmt.Errorf("cluster: recover: open snapshot store: %w", err)
	}
	has, err := raft.HasExistingState(ls, store, snaps)
	if err != nil {
		return info, fmt.Errorf("cluster: recover: inspect raft state: %w", err)
	}
	if !has {
		return info, fmt.Errorf("cluster: recover: %s holds no raft state; nothing to recover", cfg.DataDir)
	}
	if info.LastIndex, err = ls.LastIndex(); err != nil {
		return info, fmt.Errorf("cluster: recover: read last index: %w", err)
	}
	if info.Previous, err = lastConfiguration(ls); err != nil {
		return info, err
	}
	if ss, err := snaps.List(); err == nil && len(ss) > 0 && ss[0].Index > info.LastIndex {
		info.LastIndex = ss[0].Index
		if len(info.Previous) == 0 {
			info.Previous = ss[0].Configuration.Servers
		}
	}
	if cfg.TruncateFrom > 0 {
		if err := truncateLog(ls, snaps, cfg.TruncateFrom, &info); err != nil {
			return info, err
		}
		log.Warn("recover: dropped log entries that are never applied", "from", cfg.TruncateFrom, "entries", info.Dropped)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	rc.Logger = newHclog(log, "raft")
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.RaftAddr))
	conf := raft.Configuration{Servers: []raft.Server{{
		Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(cfg.RaftAddr),
	}}}
	if err := raft.RecoverCluster(rc, newTrackedFSM(fsm), ls, store, snaps, trans, conf); err != nil {
		return info, fmt.Errorf("cluster: recover: %w", err)
	}
	return info, nil
}

// lastConfiguration scans the log backwards for the newest configuration
// entry.
func lastConfiguration(store raft.LogStore) ([]raft.Server, error) {
	first, err := store.FirstIndex()
	if err != nil {
		return nil, fmt.Errorf("cluster: recover: read first index: %w", err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return nil, fmt.Errorf("cluster: recover: read last index: %w", err)
	}
	for i := last; i >= first && i > 0; i-- {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("cluster: recover: read log %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			return raft.DecodeConfiguration(l.Data).Servers, nil
		}
	}
	return nil, nil
}

// truncateLog deletes the log entries from index from on, which must lie
// above the newest snapshot (a snapshot already reflects its entries).
func truncateLog(store raft.LogStore, snaps *raft.FileSnapshotStore, from uint64, info *RecoverInfo) error {
	last, err := store.LastIndex()
	if err != nil {
		return fmt.Errorf("cluster: recover: read last index: %w", err)
	}
	if ss, err := snaps.List(); err == nil && len(ss) > 0 && ss[0].Index >= from {
		return fmt.Errorf("cluster: recover: RecoverConfig.TruncateFrom %d: the newest snapshot already includes entries up to %d", from, ss[0].Index)
	}
	if from > last {
		return fmt.Errorf("cluster: recover: RecoverConfig.TruncateFrom %d: the log ends at %d, nothing to drop", from, last)
	}
	first, err := store.FirstIndex()
	if err != nil {
		return fmt.Errorf("cluster: recover: read first index: %w", err)
	}
	if err := store.DeleteRange(max(from, first), last); err != nil {
		return fmt.Errorf("cluster: recover: drop entries %d..%d: %w", from, last, err)
	}
	info.Dropped, info.LastIndex = last-from+1, from-1
	return nil
}
