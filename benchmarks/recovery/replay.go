package recovery

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// snapshotHeader is the prefix the cluster package writes before the
// FSM's snapshot: 8 bytes of magic and the applied index.
const snapshotHeader = 16

// maxAppendEntries is raft's MaxAppendEntries, which the node leaves at
// its default: a restarting node hands the entries after its snapshot to
// the FSM in batches of this many.
const maxAppendEntries = 64

// Snapshot is the newest snapshot of a data directory, read whole.
type Snapshot struct {
	// ID is the snapshot store's name for it.
	ID string
	// Index is the last log index the snapshot reflects.
	Index uint64
	// Body is the FSM's snapshot, after the cluster header.
	Body []byte
}

// ReadNewestSnapshot reads the newest snapshot of the data directory dir
// (an agent's data_dir; the agent must be stopped).
func ReadNewestSnapshot(dir string) (Snapshot, error) {
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		return Snapshot{}, fmt.Errorf("open snapshot store: %w", err)
	}
	list, err := snaps.List()
	if err != nil {
		return Snapshot{}, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 {
		return Snapshot{}, errors.New("no snapshot in " + dir)
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return Snapshot{}, fmt.Errorf("open snapshot %s: %w", list[0].ID, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return Snapshot{}, fmt.Errorf("read snapshot %s: %w", list[0].ID, err)
	}
	if len(data) < snapshotHeader || string(data[:8]) != "ldgrsnp1" {
		return Snapshot{}, fmt.Errorf("snapshot %s: not a ledgerd snapshot", list[0].ID)
	}
	return Snapshot{ID: list[0].ID, Index: list[0].Index, Body: data[snapshotHeader:]}, nil
}

// LogTail is the log entries of a data directory after a snapshot, read
// from its log store (raft-wal or raft.db, whichever the directory holds)
// into memory, so that replaying them measures the FSM alone.
type LogTail struct {
	// Entries are the entries after the snapshot, in index order, of
	// every type (raft decides which reach the FSM; see Replay).
	Entries []*raft.Log
	// Read is the time the store took to hand them over.
	Read time.Duration
}

// ReadLogTail reads the entries after index from the log store of the
// data directory dir. The store is opened in a scratch copy (opening
// raft-wal may rewrite its metadata), so dir is left as it was.
func ReadLogTail(dir string, after uint64) (LogTail, error) {
	kind, err := cluster.DataDirLogStore(dir)
	if err != nil {
		return LogTail{}, fmt.Errorf("log store of %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "ledgerd-replay-")
	if err != nil {
		return LogTail{}, err
	}
	defer os.RemoveAll(tmp)
	var (
		store raft.LogStore
		close func() error
	)
	switch kind {
	case cluster.LogStoreWAL:
		wd := filepath.Join(tmp, "wal")
		if err := copyDir(filepath.Join(dir, "wal"), wd); err != nil {
			return LogTail{}, fmt.Errorf("copy wal: %w", err)
		}
		w, err := raftwal.Open(wd)
		if err != nil {
			return LogTail{}, fmt.Errorf("open wal: %w", err)
		}
		store, close = w, w.Close
	case cluster.LogStoreBoltDB:
		db := filepath.Join(tmp, "raft.db")
		if err := copyFile(filepath.Join(dir, "raft.db"), db); err != nil {
			return LogTail{}, fmt.Errorf("copy raft.db: %w", err)
		}
		b, err := raftboltdb.New(raftboltdb.Options{Path: db})
		if err != nil {
			return LogTail{}, fmt.Errorf("open raft.db: %w", err)
		}
		store, close = b, b.Close
	default:
		return LogTail{}, fmt.Errorf("%s holds no log store", dir)
	}
	defer close()
	last, err := store.LastIndex()
	if err != nil {
		return LogTail{}, fmt.Errorf("last index: %w", err)
	}
	start := time.Now()
	var tail LogTail
	for i := after + 1; i <= last; i++ {
		l := new(raft.Log)
		if err := store.GetLog(i, l); err != nil {
			return LogTail{}, fmt.Errorf("log entry %d: %w", i, err)
		}
		tail.Entries = append(tail.Entries, l)
	}
	tail.Read = time.Since(start)
	return tail, nil
}

// TailOps counts the commands of a log tail.
type TailOps struct {
	// Groups is the number of group entries; Operations the commands
	// the tail carries (a group's members counted one by one) and Keyed
	// those of them with an idempotency key (their results are encoded
	// and stored in the key's record as they are applied).
	Groups, Operations, Keyed int
}

// Operations counts the commands of tail. It decodes every command, so
// it is kept out of the replay's own time.
func (tail LogTail) Operations() (TailOps, error) {
	var n TailOps
	count := func(c *fsmv1.Command) {
		n.Operations++
		if c.GetIdempotencyKey() != "" {
			n.Keyed++
		}
	}
	for _, l := range tail.Entries {
		if l.Type != raft.LogCommand {
			continue
		}
		cmd, err := fsm.Decode(l.Data)
		if err != nil {
			return n, fmt.Errorf("log entry %d: %w", l.Index, err)
		}
		members, err := fsm.DecodeGroup(cmd)
		if err != nil {
			return n, fmt.Errorf("log entry %d: %w", l.Index, err)
		}
		if members == nil {
			count(cmd)
			continue
		}
		n.Groups++
		for _, m := range members {
			count(m)
		}
	}
	return n, nil
}

// ReplayStats counts what Replay handed to the FSM.
type ReplayStats struct {
	// Entries is the number of log entries after the snapshot and
	// Commands those of them that are commands.
	Entries, Commands int
	// Batches is the number of ApplyBatch calls.
	Batches int
	// LastIndex is the index of the last entry applied.
	LastIndex uint64
}

// Replay applies the entries of tail to f as a restarting node's raft
// does: in batches of up to raft's MaxAppendEntries entries (no-op
// entries are dropped before batching), each batch's commands and
// configuration entries given to f.ApplyBatch, barriers kept out of it.
// The results are dropped, as raft drops those of entries nobody waits for.
func Replay(f *fsm.FSM, tail LogTail) (ReplayStats, error) {
	var st ReplayStats
	batch := make([]*raft.Log, 0, maxAppendEntries)
	send := make([]*raft.Log, 0, maxAppendEntries)
	flush := func() {
		send = send[:0]
		for _, l := range batch {
			if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
				send = append(send, l)
			}
		}
		if len(send) > 0 {
			if out := f.ApplyBatch(send); len(out) != len(send) {
				panic(fmt.Sprintf("ApplyBatch returned %d results for %d entries", len(out), len(send)))
			}
			st.Batches++
		}
		batch = batch[:0]
	}
	for _, l := range tail.Entries {
		st.Entries++
		st.LastIndex = l.Index
		switch l.Type {
		case raft.LogCommand:
			st.Commands++
		case raft.LogNoop, raft.LogAddPeerDeprecated, raft.LogRemovePeerDeprecated:
			continue
		}
		batch = append(batch, l)
		if len(batch) >= maxAppendEntries {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	return st, nil
}

// RestoreSnapshot restores s into a new FSM with the stages run by run
// (nil: in order). The FSM has the default settings (fsm.Config{}): a
// node configured otherwise (idempotency cap, retention, history limit)
// replays its tail with those, so its replayed state may differ from this
// one's, and so may the cost.
func RestoreSnapshot(s Snapshot, run fsm.StageRunner) (*fsm.FSM, error) {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		return nil, err
	}
	if err := f.RestoreWith(io.NopCloser(bytes.NewReader(s.Body)), run); err != nil {
		return nil, fmt.Errorf("restore snapshot %s: %w", s.ID, err)
	}
	return f, nil
}

func copyDir(from, to string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
