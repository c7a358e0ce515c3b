package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/crc64ecma"
)

// mappedSnapshotStore is the node's snapshot store: raft's file store,
// whose Create computes the state file's CRC faster (snapsink.go) and
// whose Open also lets the FSM map the snapshot's state file instead of
// reading it through the stream.
//
// Why: reading a 1M-reservation snapshot (~250 MB) into a fresh buffer
// faults in every page of that buffer, 0.15-0.6 s of a restart on the
// machines measured, where mapping the file takes ~20 ms; and the mapping
// goes back to the system the moment the FSM releases it, where a
// buffer's pages wait for the collector.
//
// Its Open also checks raft's CRC-64 of the file later than raft's does
// (snapshotFile.Read): raft's reads the whole file before it returns, and
// at 1M reservations that pass (table-driven CRC-64, about 1 GB/s here)
// was 0.3 s of a 3 s restart, before the restore could begin. Every reader
// that streams the file past the node's 16-byte header still gets raft's
// check first: a follower being sent the snapshot, a restore that reads
// the stream. Only a restore of the mapped file skips it, and that one
// verifies every byte otherwise: the header's magic and index (the index
// against the snapshot's metadata, claim), and the rest with the
// application FSM's own checksum (stagedRestorer).
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

// Open implements raft.SnapshotStore: raft's Open, reading the same
// metadata and state file, with the CRC check deferred to the first read
// past the header (see the type) and the state file's path beside the
// stream.
func (s *mappedSnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, err := readSnapshotMeta(filepath.Join(s.dir, id, "meta.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: open snapshot %s: %w", id, err)
	}
	path := filepath.Join(s.dir, id, "state.bin")
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: open snapshot %s: %w", id, err)
	}
	f := &snapshotFile{fh: fh, buf: bufio.NewReader(fh), path: path, size: meta.Size,
		index: meta.Index, crc: meta.CRC, store: s}
	s.mu.Lock()
	s.open[f] = struct{}{}
	s.mu.Unlock()
	return &meta.SnapshotMeta, f, nil
}

// fileSnapshotMeta is raft's meta.json of a file snapshot: the metadata
// and the CRC-64 (ECMA) of state.bin.
type fileSnapshotMeta struct {
	raft.SnapshotMeta
	CRC []byte
}

// readSnapshotMeta reads a snapshot's meta.json as raft's store does.
func readSnapshotMeta(path string) (*fileSnapshotMeta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	meta := new(fileSnapshotMeta)
	if err := json.Unmarshal(b, meta); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return meta, nil
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
	fh    *os.File
	buf   *bufio.Reader
	path  string
	size  int64
	index uint64
	// crc is the file's CRC-64 (ECMA) from its metadata; checked is set
	// once check has compared it, checkErr is the outcome. Only Read
	// (raft's one reading goroutine) touches them.
	crc      []byte
	checked  bool
	checkErr error
	store    *mappedSnapshotStore
	// read counts the bytes read from the stream.
	read atomic.Int64

	mu      sync.Mutex
	claimed bool // under store.mu
	unmap   func() error
}

// Read reads the stream, counting. The first read that would go past the
// node's header checks the whole file's CRC first, as raft's Open did,
// and fails if it does not match.
func (f *snapshotFile) Read(p []byte) (int, error) {
	if !f.checked && f.read.Load()+int64(len(p)) > snapHeaderLen {
		f.checked, f.checkErr = true, f.check()
	}
	if f.checkErr != nil {
		return 0, f.checkErr
	}
	n, err := f.buf.Read(p)
	f.read.Add(int64(n))
	return n, err
}

// check computes the state file's CRC-64 (ECMA, raft's; crc64ecma), over
// the whole file as raft's Open did, and compares it with the metadata's.
// It reads through its own offsets, leaving the stream's where it is.
func (f *snapshotFile) check() error {
	h := crc64ecma.New()
	if _, err := io.Copy(h, io.NewSectionReader(f.fh, 0, math.MaxInt64)); err != nil {
		return fmt.Errorf("cluster: snapshot %s: read for its CRC: %w", f.path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, f.crc) {
		return fmt.Errorf("cluster: snapshot %s: CRC mismatch (computed %x, metadata %x)", f.path, got, f.crc)
	}
	return nil
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

// Close releases the mapping, if any, and closes the file.
func (f *snapshotFile) Close() error {
	f.store.forget(f)
	f.release()
	return f.fh.Close()
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
