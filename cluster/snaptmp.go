package cluster

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// openSnapshotStore opens raft's file snapshot store under dataDir, first
// removing the temporary snapshots a crash left behind.
//
// Raft writes a snapshot into <snapshots>/<id>.tmp and renames it when
// complete; it removes the directory when a snapshot fails, but not after
// the process was killed while writing one. Such a directory is never
// reaped, and every later snapshot lists it again with a warning ("found
// temporary snapshot"): a node snapshotting often (snapshot_log_bytes)
// logged hundreds, and at 1M reservations each left-over is a 150 MB file.
// The caller holds the data dir (raft.db is open, and locked) and raft
// has not started, so no snapshot of this node can be under way.
func openSnapshotStore(dataDir string, log *slog.Logger) (*raft.FileSnapshotStore, error) {
	dir := filepath.Join(dataDir, "snapshots")
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("cluster: read snapshot directory: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		size := dirSize(path)
		if err := os.RemoveAll(path); err != nil {
			return nil, fmt.Errorf("cluster: remove unfinished snapshot %s: %w", e.Name(), err)
		}
		log.Info("removed a snapshot left unfinished by a crash", "name", e.Name(), "bytes", size)
	}
	return raft.NewFileSnapshotStoreWithLogger(dataDir, 2, newHclog(log, "snapshot"))
}

// dirSize is the total size of the regular files under path (0 when it
// cannot be read: it is only logged).
func dirSize(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
