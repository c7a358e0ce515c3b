package recovery

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// Replica is the replicated state of one stopped node's data directory:
// its newest snapshot restored and its log replayed up to an index.
type Replica struct {
	Dir string
	// SnapshotIndex is the newest snapshot's index and LogEnd the last
	// index its log store holds.
	SnapshotIndex, LogEnd uint64
	// FSM holds the state; tail is what the log holds after the snapshot.
	FSM  *fsm.FSM
	tail LogTail
}

// OpenReplica restores the newest snapshot of the stopped node's data
// directory dir and reads the log entries after it, without applying
// them (ReplayTo does).
func OpenReplica(dir string) (*Replica, error) {
	s, err := ReadNewestSnapshot(dir)
	if err != nil {
		return nil, err
	}
	f, err := RestoreSnapshot(s, nil)
	if err != nil {
		return nil, err
	}
	tail, err := ReadLogTail(dir, s.Index)
	if err != nil {
		return nil, err
	}
	r := &Replica{Dir: dir, SnapshotIndex: s.Index, LogEnd: s.Index, FSM: f, tail: tail}
	if n := len(tail.Entries); n > 0 {
		r.LogEnd = tail.Entries[n-1].Index
	}
	return r, nil
}

// ReplayTo applies the log entries after the snapshot up to index, as a
// restarting node would; index must lie between SnapshotIndex and LogEnd.
func (r *Replica) ReplayTo(index uint64) error {
	if index < r.SnapshotIndex || index > r.LogEnd {
		return fmt.Errorf("%s: index %d outside its snapshot %d and log end %d", r.Dir, index, r.SnapshotIndex, r.LogEnd)
	}
	var keep []*raft.Log
	for _, l := range r.tail.Entries {
		if l.Index <= index {
			keep = append(keep, l)
		}
	}
	_, err := Replay(r.FSM, LogTail{Entries: keep})
	return err
}

// StateHash is the SHA-256 of the replica's snapshot encoding: replicas
// at the same index hold the same state exactly when their hashes match
// (the encoding is deterministic: fsm pins it with golden snapshots).
func (r *Replica) StateHash() ([32]byte, error) {
	b, err := snapshotBytes(r.FSM)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// snapshotBytes returns the encoding of f's snapshot, as raft's store
// would write it.
func snapshotBytes(f *fsm.FSM) ([]byte, error) {
	snap, err := f.Snapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	var b bufferSink
	if err := snap.Persist(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// bufferSink collects a snapshot in memory.
type bufferSink struct{ bytes.Buffer }

func (*bufferSink) ID() string    { return "memory" }
func (*bufferSink) Cancel() error { return nil }
func (*bufferSink) Close() error  { return nil }

// DiffStates describes how b's replicated state differs from a's, at
// most max lines: reservations present in one only or different in both,
// then series rows, then the first differing history event. Empty when
// the reservations, series and history agree (other tables, such as the
// idempotency records, are compared by StateHash only).
func DiffStates(a, b *fsm.FSM, max int) ([]string, error) {
	var out []string
	add := func(format string, args ...any) {
		if len(out) < max {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	ra, err := allRows(a)
	if err != nil {
		return nil, err
	}
	rb, err := allRows(b)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(ra)) {
		x, y := ra[id], rb[id]
		switch {
		case y == nil:
			add("reservation %s only in the first: %v", id, x)
		case !proto.Equal(x, y):
			add("reservation %s differs:\n  first:  %v\n  second: %v", id, x, y)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(rb)) {
		if ra[id] == nil {
			add("reservation %s only in the second: %v", id, rb[id])
		}
	}
	diffSeries(a.LiveSeries(), b.LiveSeries(), add)
	ha, hb := a.History(0, 0), b.History(0, 0)
	for i := 0; i < len(ha) || i < len(hb); i++ {
		if i >= len(ha) || i >= len(hb) || !proto.Equal(ha[i], hb[i]) {
			var x, y *fsmv1.Event
			if i < len(ha) {
				x = ha[i]
			}
			if i < len(hb) {
				y = hb[i]
			}
			add("history event %d differs:\n  first:  %v\n  second: %v", i, x, y)
			break
		}
	}
	return out, nil
}

// diffSeries adds a line for each series that differs between sa and sb,
// or that only sb holds.
func diffSeries(sa, sb []*fsmv1.Series, add func(format string, args ...any)) {
	onlyB := map[string]*fsmv1.Series{}
	for _, s := range sb {
		onlyB[s.GetId()] = s
	}
	for _, s := range sa {
		t := onlyB[s.GetId()]
		delete(onlyB, s.GetId())
		if t == nil || !proto.Equal(s, t) {
			add("series %s differs:\n  first:  %v\n  second: %v", s.GetId(), s, t)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(onlyB)) {
		add("series %s only in the second: %v", id, onlyB[id])
	}
}

// allRows lists every reservation f holds, by ID.
func allRows(f *fsm.FSM) (map[string]*fsmv1.Reservation, error) {
	out := map[string]*fsmv1.Reservation{}
	token := ""
	for {
		rs, next, err := f.List(fsm.Filter{PageToken: token, PageSize: fsm.MaxPageSize})
		if err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		for _, r := range rs {
			out[r.GetId()] = r
		}
		if next == "" {
			return out, nil
		}
		token = next
	}
}
