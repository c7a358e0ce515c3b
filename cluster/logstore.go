package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"

	"github.com/ledgerd/ledgerd/internal/atomicfile"
)

// Log store kinds (Config.LogStore). raft.db (raft-boltdb/v2) is the
// stable store (current term, vote) with either kind.
const (
	// LogStoreBoltDB keeps the Raft log in raft.db beside the stable
	// store: two fsyncs per append (bolt's data and meta pages).
	LogStoreBoltDB = "boltdb"
	// LogStoreWAL keeps the Raft log in DataDir/wal/ with
	// hashicorp/raft-wal: append-only segment files, one fsync per
	// append.
	LogStoreWAL = "wal"
)

// DefaultLogStore is the log store of a new data directory when
// Config.LogStore is empty: raft-wal, which measured 1.2-1.8x ledgerd's
// committed writes and about 2x raw Raft's Apply rate of raft.db on the
// same machine (benchmarks/results/logstore/README.md). A data directory keeps the
// kind it was created with, so nodes whose data directories predate the
// choice stay on raft.db.
const DefaultLogStore = LogStoreWAL

// logStoreFile records a data directory's log store kind, written when
// the directory is first used.
const logStoreFile = "raft-log-store"

// walDir is raft-wal's directory under DataDir.
const walDir = "wal"

// ErrLogStoreMismatch is returned (wrapped) when the configured log store
// is not the one the data directory holds: a node cannot switch in place.
var ErrLogStoreMismatch = errors.New("the data directory holds another log store; a node cannot switch in place: wipe the data directory and let the node rejoin from its peers' snapshot")

// checkLogStoreKind rejects anything but "", boltdb and wal.
func checkLogStoreKind(kind string) error {
	switch kind {
	case "", LogStoreBoltDB, LogStoreWAL:
		return nil
	}
	return fmt.Errorf("want %q or %q, got %q", LogStoreBoltDB, LogStoreWAL, kind)
}

// DataDirLogStore reports the log store kind the data directory holds:
// its raft-log-store file, else wal when a wal/ directory exists, else
// boltdb when raft.db exists (data directories from before the choice),
// else "" (a new data directory).
func DataDirLogStore(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, logStoreFile))
	switch {
	case err == nil:
		kind := strings.TrimSpace(string(b))
		if kind == "" || checkLogStoreKind(kind) != nil {
			return "", fmt.Errorf("cluster: %s: unknown log store %q", filepath.Join(dir, logStoreFile), kind)
		}
		return kind, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cluster: read %s: %w", logStoreFile, err)
	}
	if _, err := os.Stat(filepath.Join(dir, walDir)); err == nil {
		return LogStoreWAL, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		return LogStoreBoltDB, nil
	}
	return "", nil
}

// ResolveLogStore returns the log store a node started on dir with the
// configured kind (empty: keep what dir holds, or DefaultLogStore for a
// new dir) uses. It fails with ErrLogStoreMismatch when the configured
// kind is not the one dir holds.
func ResolveLogStore(dir, configured string) (string, error) {
	if err := checkLogStoreKind(configured); err != nil {
		return "", err
	}
	onDisk, err := DataDirLogStore(dir)
	if err != nil {
		return "", err
	}
	switch {
	case onDisk == "" && configured == "":
		return DefaultLogStore, nil
	case onDisk == "":
		return configured, nil
	case configured == "" || configured == onDisk:
		return onDisk, nil
	}
	return "", fmt.Errorf("%q configured, but %s holds a %q log: %w", configured, dir, onDisk, ErrLogStoreMismatch)
}

// logStore is the opened Raft log: raft.db's BoltStore itself, or a
// raft-wal WAL.
type logStore struct {
	raft.LogStore
	kind  string
	close func() error // nil when the log is raft.db (closed with it)
}

// openLogStore opens the log of kind in dir (bolt is raft.db, already
// open) and records the kind in the data directory.
func openLogStore(dir, kind string, bolt raft.LogStore, log *slog.Logger) (*logStore, error) {
	// Recorded once: rewriting it at every start would open a window in
	// which a crash leaves it torn, and the node unable to start.
	if onDisk, err := os.ReadFile(filepath.Join(dir, logStoreFile)); err != nil || strings.TrimSpace(string(onDisk)) != kind {
		if err := atomicfile.WriteBytes(filepath.Join(dir, logStoreFile), []byte(kind+"\n")); err != nil {
			return nil, fmt.Errorf("cluster: record log store kind: %w", err)
		}
	}
	if kind == LogStoreBoltDB {
		return &logStore{LogStore: bolt, kind: kind}, nil
	}
	wd := filepath.Join(dir, walDir)
	if err := os.MkdirAll(wd, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: create %s: %w", wd, err)
	}
	w, err := raftwal.Open(wd, raftwal.WithLogger(newHclog(log, "wal")))
	if err != nil {
		return nil, fmt.Errorf("cluster: open %s: %w", wd, err)
	}
	return &logStore{LogStore: walLog{w}, kind: kind, close: w.Close}, nil
}

// walLog is raft-wal's log with raft-boltdb's answer for entries below
// the first index. raft-wal deletes a head of the log by moving the first
// index and removes a segment file only once all of it is behind; until
// then GetLog still returns the entries "deleted". The leader would then
// replicate a new server from the old log rather than send it the
// snapshot that replaced it: correct, since those entries are committed,
// but it diverges from what the snapshot and compaction settings promise.
type walLog struct{ *raftwal.WAL }

// GetLog implements raft.LogStore.
func (w walLog) GetLog(index uint64, l *raft.Log) error {
	first, err := w.FirstIndex()
	if err != nil {
		return err
	}
	if index < first {
		return raft.ErrLogNotFound
	}
	return w.WAL.GetLog(index, l)
}

// Close closes the WAL (raft.db is closed by its owner).
func (s *logStore) Close() error {
	if s == nil || s.close == nil {
		return nil
	}
	return s.close()
}

// IsMonotonic implements raft.MonotonicLogStore: raft-wal refuses a gap
// in the indexes, so after restoring an operator's snapshot Raft must
// drop the old log rather than leave a gap behind it. Without this the
// restore fails with "non-monotonic log entries".
func (s *logStore) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
