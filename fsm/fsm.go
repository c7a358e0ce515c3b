package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/hashicorp/raft"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/sortedlist"
	"github.com/ledgerd/ledgerd/planner"
)

// Config holds the knobs of the state machine. Every replica of a cluster
// must use the same values: they decide what Apply does (hold TTLs,
// retention), so replicas with different settings would diverge.
// Durations are in milliseconds of log time.
type Config struct {
	// DefaultHoldTTL is the TTL of a hold or pending modification that asks
	// for none. Default 30 s.
	DefaultHoldTTL int64
	// MaxHoldTTL bounds the TTL a client may ask for. Default 1 h.
	MaxHoldTTL int64
	// Retention is how long terminal reservations (completed, aborted,
	// expired, cancelled) stay readable before they are dropped, until a
	// TYPE_SET_RETENTION entry sets the retention. Default 24 h.
	Retention int64
	// IdempotencyWindow is how long an idempotency key is remembered.
	// Default 24 h.
	IdempotencyWindow int64
	// IdempotencyMaxKeys bounds the number of remembered idempotency
	// keys: past it the oldest are forgotten first, even inside the
	// window, so memory stays bounded at any write rate. A retry whose
	// key has been forgotten is applied again. A TYPE_SET_RETENTION entry
	// with a cap replaces it from then on. Default 262,144 (see
	// DefaultIdempotencyMaxKeys).
	IdempotencyMaxKeys int
	// IdempotencyMinAge is how long (log time, ms) a key is remembered
	// even past IdempotencyMaxKeys (entries of envelope version 3 on), so
	// that a key is never forgotten while its client may still be
	// retrying a request whose outcome it does not know. Default 60 s,
	// well beyond the Go client's retries of one call (8 attempts, at
	// most 2 s apart); memory is then bounded by max(IdempotencyMaxKeys,
	// write rate × IdempotencyMinAge).
	IdempotencyMinAge int64
	// HistoryLimit is the number of events kept for History. Default 10,000.
	HistoryLimit int
	// Timelines makes the planner's per-resource timelines; nil selects
	// planner.NewIndexed. The list and the indexed timelines decide
	// identically (the property tests run one replica on each), so this is
	// a performance choice only; the slotted timeline approximates and must
	// not be used here.
	Timelines planner.TimelineFactory
}

// Default values of Config fields left zero.
const (
	DefaultHoldTTL           int64 = 30_000
	DefaultMaxHoldTTL        int64 = 3_600_000
	DefaultRetention         int64 = 24 * 3_600_000
	DefaultIdempotencyWindow int64 = 24 * 3_600_000
	// DefaultIdempotencyMaxKeys keeps about 87 s of keyed writes at 3,000
	// writes/s (the service's target rate), far beyond the client's own
	// retries of one call (8 attempts, at most 2 s apart), for about 40 MB
	// (≈ 160 bytes per key with its result). The 24 h window alone would
	// keep 260M keys at that rate.
	DefaultIdempotencyMaxKeys       = 1 << 18
	DefaultIdempotencyMinAge  int64 = 60_000
	DefaultHistoryLimit             = 10_000
)

func (c Config) withDefaults() (Config, error) {
	if c.DefaultHoldTTL == 0 {
		c.DefaultHoldTTL = DefaultHoldTTL
	}
	if c.MaxHoldTTL == 0 {
		c.MaxHoldTTL = DefaultMaxHoldTTL
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.IdempotencyWindow == 0 {
		c.IdempotencyWindow = DefaultIdempotencyWindow
	}
	if c.IdempotencyMaxKeys == 0 {
		c.IdempotencyMaxKeys = DefaultIdempotencyMaxKeys
	}
	if c.HistoryLimit == 0 {
		c.HistoryLimit = DefaultHistoryLimit
	}
	if c.IdempotencyMinAge == 0 {
		c.IdempotencyMinAge = DefaultIdempotencyMinAge
	}
	if c.Timelines == nil {
		c.Timelines = planner.NewIndexed
	}
	switch {
	case c.DefaultHoldTTL < 0:
		return c, fmt.Errorf("config: DefaultHoldTTL %d must be > 0", c.DefaultHoldTTL)
	case c.MaxHoldTTL < c.DefaultHoldTTL:
		return c, fmt.Errorf("config: MaxHoldTTL %d must be >= DefaultHoldTTL %d", c.MaxHoldTTL, c.DefaultHoldTTL)
	case c.Retention < 0:
		return c, fmt.Errorf("config: Retention %d must be >= 0", c.Retention)
	case c.IdempotencyWindow < 0:
		return c, fmt.Errorf("config: IdempotencyWindow %d must be >= 0", c.IdempotencyWindow)
	case c.IdempotencyMaxKeys < 0:
		return c, fmt.Errorf("config: IdempotencyMaxKeys %d must be >= 0", c.IdempotencyMaxKeys)
	case c.IdempotencyMinAge < 0:
		return c, fmt.Errorf("config: IdempotencyMinAge %d must be >= 0", c.IdempotencyMinAge)
	case c.HistoryLimit < 0:
		return c, fmt.Errorf("config: HistoryLimit %d must be >= 0", c.HistoryLimit)
	}
	return c, nil
}

// FSM is the replicated state machine of ledgerd: the resource table, the
// reservation table with its lifecycle, idempotency records, the event
// history, and a planner that makes admission decisions. It implements
// raft.FSM and raft.BatchingFSM.
//
// Concurrency: Apply, ApplyBatch and Restore are called by raft from one
// goroutine; every read method may be called from any goroutine at the
// same time. A sync.RWMutex guards the state. The planner is not safe for
// concurrent use even for queries, so reads that consult it take the
// exclusive lock.
type FSM struct {
	cfg Config

	mu sync.RWMutex
	// Invariant: st is only replaced (Restore) or mutated (Apply) with mu
	// held for writing.
	st *state
	// notify is closed and replaced after every applied batch.
	notify chan struct{}
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns an empty state machine.
func New(cfg Config) (*FSM, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &FSM{cfg: c, st: newState(c), notify: make(chan struct{})}, nil
}

// Apply applies one committed log entry and returns its Result as an
// *Applied (the encoded Result and the message); a group entry
// (TYPE_GROUP) returns []any with one *Applied per member, in order,
// which the cluster hands back to each member's caller. Entries that are not commands (configuration
// changes, barriers) return nil. An entry that Decode refuses panics: every replica
// would refuse it identically, and skipping it would silently diverge from
// a replica of a newer release that understands it.
func (f *FSM) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	out := f.applyLocked(l)
	f.wakeLocked()
	f.mu.Unlock()
	return out
}

// ApplyBatch applies several committed entries under one lock acquisition
// and wakes readers once.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	f.mu.Lock()
	for i, l := range logs {
		out[i] = f.applyLocked(l)
	}
	f.wakeLocked()
	f.mu.Unlock()
	return out
}

func (f *FSM) applyLocked(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	return f.applyEntryLocked(l.Index, l.Data)
}

// ApplyCommand is Apply without the raft wrapper, for offline replay and
// tests: it applies the encoded command data as log entry index and
// returns the encoded Result. Indexes must increase from call to call. It
// panics on an entry Decode refuses, exactly like Apply. A group entry is
// applied too, but its results are only returned by ApplyEntry:
// ApplyCommand returns nil for it.
func (f *FSM) ApplyCommand(index uint64, data []byte) []byte {
	out, _ := f.ApplyEntry(index, data)[0].([]byte)
	return out
}

// encodedOf returns the encoded Result of a command's *Applied, and
// anything else (nil for an entry that is not a command) as it is.
func encodedOf(v any) any {
	if a, ok := v.(*Applied); ok {
		return a.enc
	}
	return v
}

// ApplyEntry is ApplyCommand that returns what Apply returns for the
// entry, one element per command: the encoded Result ([]byte) of a lone
// command, or one encoded Result per member of a group, in order.
func (f *FSM) ApplyEntry(index uint64, data []byte) []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.applyEntryLocked(index, data)
	f.wakeLocked()
	if group, ok := out.([]any); ok {
		for i, m := range group {
			group[i] = encodedOf(m)
		}
		return group
	}
	return []any{encodedOf(out)}
}

// applyEntryLocked applies one encoded log entry: a lone command returns
// its *Applied, a group one *Applied per member ([]any).
func (f *FSM) applyEntryLocked(index uint64, data []byte) any {
	cmd, members, err := decodeEntry(data)
	if err != nil {
		panic(fmt.Sprintf("fsm: log entry %d cannot be applied (replicas must not diverge): %v", index, err))
	}
	if members != nil {
		return f.st.applyGroup(index, members)
	}
	res, enc := f.st.applyEncoded(index, cmd)
	if enc == nil {
		enc = f.st.encodeResult(res)
	}
	return newApplied(res, enc)
}

// wakeLocked wakes everyone waiting on Notify.
func (f *FSM) wakeLocked() {
	close(f.notify)
	f.notify = make(chan struct{})
}

// Notify returns a channel that is closed after the next applied entry (or
// restore). Readers wait on it, then call History or AppliedIndex, then ask
// for a new channel: no goroutine runs inside the state machine.
func (f *FSM) Notify() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.notify
}

// Snapshot captures the current state for raft. The capture shares the
// immutable records of the tables (they are replaced, never changed in
// place) and clones the rows' ordered list lazily (a pointer per chunk of
// rows), so it is cheap (it does not visit the rows); Persist encodes it
// while Apply goes on. It takes the write lock because the clone marks
// the state's chunks as shared.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	msg, rows, idem := f.st.capture()
	return &fsmSnapshot{msg: msg, rows: rows, idem: idem}, nil
}

// Restore replaces the whole state with the snapshot read from rc. It
// decodes and verifies everything and rebuilds the planner before it swaps
// state in; on error the old state is untouched.
func (f *FSM) Restore(rc io.ReadCloser) error {
	return f.RestoreWith(rc, nil)
}

// RestoreWith is Restore with the independent stages of the rebuild run
// by run (nil: one after the other, as Restore does), so that a caller
// may spread them over several cores. See StageRunner.
func (f *FSM) RestoreWith(rc io.ReadCloser, run StageRunner) error {
	st, err := f.decodeSnapshot(rc, run)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	f.wakeLocked()
	f.mu.Unlock()
	return nil
}

// VerifySnapshot decodes the snapshot read from rc as Restore would,
// rebuilding a whole state beside this one, and drops it: nil means
// Restore would take it. It leaves the FSM's state alone, and it needs the
// memory of a second state while it runs. A caller about to hand a
// snapshot from outside to raft, which stops the process when the FSM
// refuses one it was given, checks it here first.
func (f *FSM) VerifySnapshot(rc io.ReadCloser) error {
	_, err := f.decodeSnapshot(rc, nil)
	return err
}

// decodeSnapshot reads, decodes and verifies the snapshot from rc and
// builds the state it describes, without touching f's.
func (f *FSM) decodeSnapshot(rc io.ReadCloser, run StageRunner) (*state, error) {
	defer rc.Close()
	var data []byte
	var release func()
	if m, ok := rc.(SnapshotBytes); ok {
		data, release = m.SnapshotBytes(), m.ReleaseSnapshotBytes
	} else {
		var err error
		if data, err = readSnapshot(rc); err != nil {
			return nil, fmt.Errorf("restore: read: %w", err)
		}
	}
	parts, err := splitBody(data)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	j, err := prepareRestore(f.cfg, parts)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if run == nil {
		run = runInOrder
	}
	run(j.scanStages())
	if err := j.scanErr(); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	j.dropInput()
	if release != nil {
		// Nothing of the state refers to the snapshot's bytes: the scan
		// copied out what it keeps. The build stages allocate the state;
		// giving the bytes back first keeps the peak lower.
		release()
	}
	run(j.buildStages())
	st, err := j.finish()
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return st, nil
}

// SnapshotBytes is a snapshot stream whose whole content is already in
// memory, such as a snapshot file mapped read-only: RestoreWith scans those
// bytes in place instead of reading them into a buffer of its own.
// Scanning reads the bytes and copies out what the state keeps, so once
// the scan stages have returned RestoreWith calls ReleaseSnapshotBytes;
// it never touches the bytes after that, nor after it returns. A restore
// refused before that point only closes the stream: Close must release
// the bytes too, and a release must be safe to repeat.
type SnapshotBytes interface {
	SnapshotBytes() []byte
	ReleaseSnapshotBytes()
}

// readSnapshot reads a whole snapshot file into a buffer sized from the
// body length in its header (bounded, since the header is not verified
// yet) instead of growing it step by step.
func readSnapshot(r io.Reader) ([]byte, error) {
	var hdr [headerLen]byte
	n, err := io.ReadFull(r, hdr[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if n < headerLen {
		return hdr[:n], nil // checkHeader refuses it
	}
	// Growing by doubling copied a 1M-reservation snapshot twice, so the
	// header's length is taken on its word, up to 1 GiB — but only once
	// the first 4 MiB of body have arrived: a short or corrupt file never
	// costs more than that (the fuzzer's workers died of 1 GiB buffers).
	const firstRead, maxPrealloc = 4 << 20, 1 << 30
	want := int(min(binary.BigEndian.Uint64(hdr[8:]), maxPrealloc))
	buf := make([]byte, headerLen+min(want, firstRead))
	copy(buf, hdr[:])
	m, err := io.ReadFull(r, buf[headerLen:])
	if err == nil && want > firstRead {
		whole := make([]byte, headerLen+want)
		copy(whole, buf)
		var more int
		more, err = io.ReadFull(r, whole[len(buf):])
		buf, m = whole, m+more
	}
	buf = buf[:headerLen+m]
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf, nil // shorter than the header says: checkHeader refuses it
	case err != nil:
		return nil, err
	}
	// Whatever follows (a body longer than the header says, also refused).
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

// fsmSnapshot is a captured state awaiting Persist.
type fsmSnapshot struct {
	// msg is the state without reservations and idempotency records.
	msg *fsmv1.Snapshot
	// rows are the encoded reservations in ID order: a lazy copy of
	// the state's list, which Apply may change meanwhile.
	rows *sortedlist.List[string]
	// idem is encoded into the file by Persist, outside the state lock.
	idem idemView
}

// Persist encodes the captured state and writes it to sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshotIdem(sink, s.msg, ascend(s.rows), s.idem); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return nil
}

// ascend walks t in order.
func ascend(t *sortedlist.List[string]) iter.Seq[string] {
	return func(yield func(string) bool) { t.Ascend(yield) }
}

// Release does nothing: the capture holds no resources.
func (s *fsmSnapshot) Release() {}
