package cluster

import (
	"errors"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// mappedSnapshotStore is the node's snapshot store: raft's file store,
// whose Open also lets the FSM map the snapshot's state file instead of
// reading it through the stream.
//
// Why: reading a 1M-reservation snapshot (~250 MB) into a fresh buffer
// faults in every page of that buffer, 0.15-0.6 s of a restart on the
// machines measured, where mapping the file, whose pages are in the page
// cache (raft has just read them for the checksum), takes ~20 ms; and the
// mapping goes back to the system the moment the FSM releases it, where a
// buffer's pages wait for the collector.
type mappedSnapshotStore struct {
	*raft.FileSnapshotStore
	// dir is the store's snapshots directory: state files are
	// dir/<id>/state.bin (raft's layout).
	dir string

	// open holds the snapshots opened and not closed yet. Raft hands the
	// FSM its own wrapper of the stream Open returns (it counts the bytes
	// for its progress log), so the restore finds its file here (claim).
	mu   sync.Mutex
	open map[*snapshotFile]struct{}
}

// newMappedSnapshotStore wraps inner, a file store made on dataDir.
func newMappedSnapshotStore(inner *raft.FileSnapshotStore, dataDir string) *mappedSnapshotStore {
	return &mappedSnapshotStore{FileSnapshotStore: inner, dir: filepath.Join(dataDir, "snapshots"),
		open: make(map[*snapshotFile]struct{})}
}

// Open implements raft.SnapshotStore: raft's Open (which checks the
// file's CRC), with the state file's path beside the stream.
func (s *mappedSnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	f := &snapshotFile{ReadCloser: rc, path: filepath.Join(s.dir, id, "state.bin"), size: meta.Size,
		index: meta.Index, store: s}
	s.mu.Lock()
	s.open[f] = struct{}{}
	s.mu.Unlock()
	return meta, f, nil
}

// claim returns the open snapshot of the given index whose stream has
// given exactly its first n bytes (the node's header, which the restore
// has just read), or nil if there is no such snapshot or more than one
// (a save streaming the same snapshot out has read more, or nothing).
func (s *mappedSnapshotStore) claim(index uint64, n int64) *snapshotFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *snapshotFile
	for f := range s.open {
		if f.index != index || f.read.Load() != n || f.claimed {
			continue
		}
		if found != nil {
			return nil
		}
		found = f
	}
	if found != nil {
		found.claimed = true
	}
	return found
}

// forget removes f from the open snapshots.
func (s *mappedSnapshotStore) forget(f *snapshotFile) {
	s.mu.Lock()
	delete(s.open, f)
	s.mu.Unlock()
}

// snapshotFile is an opened snapshot: the stream raft reads, and the path
// of its state file, which mapState maps instead.
type snapshotFile struct {
	io.ReadCloser
	path  string
	size  int64
	index uint64
	store *mappedSnapshotStore
	// read counts the bytes read from the stream.
	read atomic.Int64

	mu      sync.Mutex
	claimed bool // under store.mu
	unmap   func() error
}

// Read reads the stream, counting.
func (f *snapshotFile) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	f.read.Add(int64(n))
	return n, err
}

// errNoMapping: this platform does not map files; the stream is read.
var errNoMapping = errors.New("cluster: snapshot mapping not supported here")

// mapState maps the whole state file read-only. The bytes are valid until
// release (or Close) is called; release may be called more than once.
// The mapping starts at the file's first byte, whatever the stream has
// given already (the restore has read the node's header from it, and
// compares it with the mapping's first bytes).
func (f *snapshotFile) mapState() (data []byte, release func(), err error) {
	data, unmap, err := mapFile(f.path, f.size)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	f.unmap = unmap
	f.mu.Unlock()
	return data, f.release, nil
}

// release unmaps the state file, once.
func (f *snapshotFile) release() {
	f.mu.Lock()
	u := f.unmap
	f.unmap = nil
	f.mu.Unlock()
	if u != nil {
		_ = u()
	}
}

// Close releases the mapping, if any, and closes the stream.
func (f *snapshotFile) Close() error {
	f.store.forget(f)
	f.release()
	return f.ReadCloser.Close()
}

// mappedBody is the FSM's part of a mapped snapshot (what follows the
// node's 16-byte header): a stream over the bytes, and the bytes
// themselves for an FSM that scans them in place (fsm.SnapshotBytes).
type mappedBody struct {
	io.Reader
	data    []byte
	release func()
	// closer is the snapshot's stream, closed with the body.
	closer io.Closer
}

// SnapshotBytes returns the FSM snapshot's bytes, in place.
func (b *mappedBody) SnapshotBytes() []byte { return b.data }

// ReleaseSnapshotBytes unmaps the file: the FSM no longer reads it.
func (b *mappedBody) ReleaseSnapshotBytes() {
	b.data = nil
	b.release()
}

// Close releases the mapping and closes the snapshot's stream.
func (b *mappedBody) Close() error {
	b.ReleaseSnapshotBytes()
	return b.closer.Close()
}
