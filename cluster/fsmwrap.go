package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/rtmetric"
)

// stagedRestorer is an application FSM whose restore is cut into
// independent stages that the caller may run at the same time
// (the ledger FSM's RestoreWith). run is given the stages of one call
// and returns once every one has returned. The package names the plain
// function type so that it need not import the application's FSM.
//
// Such an FSM may be handed the snapshot's mapped file (mapSnapshot),
// which skips raft's CRC of the file (snapmap.go): RestoreWith must
// verify what it is given (the ledger's snapshot carries a CRC-32C of
// its body, checked before anything is decoded) and refuse, without
// changing its state, what does not verify.
type stagedRestorer interface {
	RestoreWith(rc io.ReadCloser, run func(stages []func())) error
}

// runConcurrently is the stage runner of a node: one goroutine per
// stage, so that a restore uses every core instead of one. The stages
// build disjoint parts of the state (the fsm package documents that they
// may overlap); the Go scheduler spreads them over GOMAXPROCS threads.
func runConcurrently(stages []func()) {
	if len(stages) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, f := range stages[1:] {
		wg.Go(f)
	}
	// The first stage runs here rather than on a new goroutine.
	stages[0]()
	wg.Wait()
}

// snapMagic starts every snapshot the wrapper writes; the 8 bytes after it
// are the index of the last entry the FSM had applied, so a follower that
// restores a snapshot knows exactly what it now reflects.
var snapMagic = [8]byte{'l', 'd', 'g', 'r', 's', 'n', 'p', '1'}

// snapHeaderLen is the length of that header (snapMagic and the applied
// index), which a restore reads from the stream before it maps the file.
const snapHeaderLen = 16

// trackedFSM wraps the application FSM to record the index of the last
// entry it has actually applied. raft.AppliedIndex counts entries handed to
// the FSM goroutine, not entries applied, so read barriers wait on this
// instead.
type trackedFSM struct {
	inner raft.FSM

	// snapFailures counts failed snapshots (taking or persisting one).
	snapFailures atomic.Uint64
	// restored is the applied index of the last snapshot restored, so
	// startup can report how many entries it replayed on top of it.
	restored atomic.Uint64
	// log, if set, receives one line per restore with its timings.
	log *slog.Logger
	// snaps, if set, is the node's snapshot store, whose files a restore
	// maps instead of reading their stream (snapmap.go). Set before raft
	// starts.
	snaps *mappedSnapshotStore

	// startLog, set by a one-server node while raft restores the newest
	// snapshot on startup (NewRaft), returns the index of the last entry
	// in the local log. The first restore takes it (startTail) and
	// compares it with the snapshot's index to learn how many entries
	// will be replayed on top of it.
	startLog atomic.Pointer[func() (uint64, error)]
	// collected is closed by the collection a restore leaves for after
	// the log tail (nil: none left); tests wait on it.
	collected atomic.Pointer[chan struct{}]
	// collectAt is the collection a start's restore left waiting for the
	// log tail (nil: none); collectWait bounds the wait (0:
	// collectAfterTailWait).
	collectAt   atomic.Pointer[pendingCollection]
	collectWait time.Duration

	// volume counts the log applied since the last snapshot for
	// snapshotByVolumeLoop (snaplog.go). Set before raft starts.
	volume *logVolume
	// restart, if set, measures what a restart costs for the restart
	// target (restarttarget.go). Set before raft starts.
	restart *restartModel

	// check, if set, sums the applied entries for the log check
	// (logcheck.go); checked is then called, on the FSM goroutine, with
	// the mismatches with a peer that a completed window revealed. Set
	// before raft starts.
	check   *logCheck
	checked func([]checkMismatch)

	// fatal is called, on the FSM goroutine, with the message of an
	// entry the FSM could not apply; it must not return while the node
	// runs. Default: panic, which stops the process.
	fatal func(msg string)

	mu      sync.Mutex
	applied uint64
	changed chan struct{} // closed and replaced whenever applied grows
}

func newTrackedFSM(inner raft.FSM) *trackedFSM {
	return &trackedFSM{inner: inner, changed: make(chan struct{}), fatal: func(msg string) { panic(msg) }}
}

// cannotApplyDoc is where the recovery procedure is written down.
const cannotApplyDoc = `docs/operations.md, "A node stopped on an entry it cannot apply"`

// stopOnPanic, deferred around the inner FSM's Apply, turns a panic (an
// entry the FSM cannot decode or apply) into a stop with a message that
// names the entry and the fix. The node must stop rather than skip the
// entry: a replica that skipped it would diverge from the others.
func (f *trackedFSM) stopOnPanic(first, last uint64) {
	v := recover()
	if v == nil {
		return
	}
	where := fmt.Sprintf("log entry %d", first)
	if last != first {
		where = fmt.Sprintf("one of log entries %d..%d", first, last)
	}
	msg := fmt.Sprintf("cluster: this server's FSM cannot apply %s (%v); the server stops so that replicas do not diverge. "+
		"If this server runs an older release than the others, upgrade it; if only this replica is damaged, stop it, "+
		"move its data dir aside, start it empty and remove its old ID with `ledgerd operator raft remove-peer`; see %s",
		where, v, cannotApplyDoc)
	if f.log != nil {
		f.log.Error(msg, "stack", string(debug.Stack()))
	}
	f.fatal(msg)
}

func (f *trackedFSM) setApplied(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index > f.applied {
		f.applied = index
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// changedCh returns a channel that is closed when applied next grows
// (an entry applied or a snapshot restored).
func (f *trackedFSM) changedCh() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Applied returns the last index applied to the FSM.
func (f *trackedFSM) Applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// waitApplied blocks until the FSM has applied index, ctx ends or stop
// is closed (node shutdown: ErrShutdown).
func (f *trackedFSM) waitApplied(ctx context.Context, stop <-chan struct{}, index uint64) error {
	for {
		f.mu.Lock()
		applied, ch := f.applied, f.changed
		f.mu.Unlock()
		if applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("cluster: wait for index %d (applied %d): %w", index, applied, context.Cause(ctx))
		case <-stop:
			return fmt.Errorf("cluster: wait for index %d (applied %d): %w", index, applied, ErrShutdown)
		}
	}
}

// Apply implements raft.FSM.
func (f *trackedFSM) Apply(l *raft.Log) any {
	clock := f.restart.startApply()
	r := f.applyOne(l)
	took := f.restart.stopApply(clock)
	f.setApplied(l.Index)
	f.observe(l)
	f.restart.applied(f.volume.applied(l), took)
	if f.collectAt.Load() != nil {
		f.startPendingCollection(l.Index)
	}
	return r
}

// observe hands applied entries to the log check.
func (f *trackedFSM) observe(logs ...*raft.Log) {
	if f.check == nil {
		return
	}
	if bad := f.check.observe(logs...); len(bad) > 0 && f.checked != nil {
		f.checked(bad)
	}
}

// applyOne applies one entry, stopping the node if the FSM panics on it.
func (f *trackedFSM) applyOne(l *raft.Log) any {
	defer f.stopOnPanic(l.Index, l.Index)
	return f.inner.Apply(l)
}

// applyBatch hands logs to a batching FSM, stopping the node if it panics
// (the entry is then one of the batch).
func (f *trackedFSM) applyBatch(b raft.BatchingFSM, logs []*raft.Log) []any {
	defer f.stopOnPanic(logs[0].Index, logs[len(logs)-1].Index)
	return b.ApplyBatch(logs)
}

// ApplyBatch implements raft.BatchingFSM, so an application FSM that
// batches keeps batching behind the wrapper; one that does not gets its
// commands one by one. Raft passes commands and configuration entries.
func (f *trackedFSM) ApplyBatch(logs []*raft.Log) []any {
	if len(logs) == 0 {
		return nil
	}
	clock := f.restart.startApply()
	var out []any
	if b, ok := f.inner.(raft.BatchingFSM); ok {
		out = f.applyBatch(b, logs)
		if len(out) != len(logs) {
			out = make([]any, len(logs)) // only after a stop (tests): raft wants one response per entry
		}
	} else {
		out = make([]any, len(logs))
		for i, l := range logs {
			if l.Type == raft.LogCommand {
				out[i] = f.applyOne(l)
			}
		}
	}
	took := f.restart.stopApply(clock)
	f.setApplied(logs[len(logs)-1].Index)
	f.observe(logs...)
	f.restart.applied(f.volume.applied(logs...), took)
	if f.collectAt.Load() != nil {
		f.startPendingCollection(logs[len(logs)-1].Index)
	}
	return out
}

// Snapshot implements raft.FSM. It runs on the FSM goroutine, so applied is
// exactly the state the inner snapshot captures.
func (f *trackedFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := f.inner.Snapshot()
	if err != nil {
		f.snapFailures.Add(1)
		return nil, err
	}
	return &trackedSnapshot{inner: s, index: f.Applied(), failures: &f.snapFailures, volume: f.volume, volumeBytes: f.volume.captured(), restart: f.restart}, nil
}

// verify checks a snapshot body from outside (the bytes Snapshot's sink
// wrote: the wrapper's header, then the inner FSM's snapshot) without
// restoring it: the header, and the inner FSM's own check when it has one
// (SnapshotVerifier).
func (f *trackedFSM) verify(body []byte) error {
	if len(body) < snapHeaderLen {
		return fmt.Errorf("%d bytes, shorter than the %d-byte header", len(body), snapHeaderLen)
	}
	if [8]byte(body[:8]) != snapMagic {
		return fmt.Errorf("not a ledgerd snapshot (bad magic %q)", body[:8])
	}
	if v, ok := f.inner.(SnapshotVerifier); ok {
		return v.VerifySnapshot(io.NopCloser(bytes.NewReader(body[snapHeaderLen:])))
	}
	return nil
}

// Restore implements raft.FSM. It logs how long the restore took and how
// much of that was spent reading the snapshot stream (disk), the rest being
// the application FSM's decoding and rebuilding.
func (f *trackedFSM) Restore(rc io.ReadCloser) error {
	start := time.Now()
	tr := &timedReader{r: rc}
	var hdr [snapHeaderLen]byte
	if _, err := io.ReadFull(tr, hdr[:]); err != nil {
		rc.Close()
		return fmt.Errorf("cluster: read snapshot header: %w", err)
	}
	if [8]byte(hdr[:8]) != snapMagic {
		rc.Close()
		return fmt.Errorf("cluster: not a ledgerd snapshot (bad magic %q)", hdr[:8])
	}
	index := binary.BigEndian.Uint64(hdr[8:])
	if f.check != nil {
		// Even a restore that fails may have replaced part of the
		// state: the window around it is no longer summed whole.
		f.check.restored(index)
	}
	// body is what the application FSM reads: the rest of the stream, or
	// the rest of the mapped file (snapmap.go).
	var body io.ReadCloser = readCloser{tr, rc}
	if mb := f.mapSnapshot(rc, hdr); mb != nil {
		body = mb
		tr.n += int64(len(mb.data))
		tr.d, tr.mapped = time.Since(start), true
	}
	var err error
	// The wall time of each call of the stage runner (the scan stages,
	// then the build stages), for the log line.
	var calls []time.Duration
	// When the first call began and the last one ended, for the log
	// line: what the restore spends before the stages (reading and
	// splitting the snapshot, the resources and limits) and after them.
	var firstCall, lastEnd time.Time
	// gcOff: this restore holds the collector off (pauseGC), from before
	// a staged restore prepares until its closing collection.
	gcOff := false
	// between is how long the collection between the calls took (part
	// of the second call's time).
	var between time.Duration
	defer func() {
		if gcOff {
			resumeGC()
		}
	}()
	if sr, ok := f.inner.(stagedRestorer); ok {
		// The collector stays off from here until the cycle after the
		// restore. The restore allocates the new state and little else,
		// so a cycle during it (at 1M rows several run while the state
		// grows) frees almost nothing while it marks the growing state
		// and slows every store with its write barrier: without one the
		// build stages of a 1M-row restore took 1.9 s instead of 3 s,
		// and with none in the scan stages either the whole restore
		// 1.9-2.2 s instead of 2.3-2.5 s (restoreprof -stages paused
		// against concurrent-gc), for a heap that peaks about 5 %
		// higher. It goes off before the restore prepares its stages,
		// not when the first stage starts: the preparation allocates the
		// scan stages' outputs (the rows' list, the bookings' list, a
		// few tens of MB at 1M rows), a cycle starting then marked them
		// while still untouched, and a page first read maps the
		// kernel's zero page, so the scan's writes into it took a second
		// fault each, with a TLB flush on every CPU: the scan stages of
		// a restart from a 1M-row snapshot took 1.11-1.24 s instead of
		// 0.76-0.85 (benchmarks/results/recovery-1m/r21-first-touch).
		// A memory limit (GOMEMLIMIT, -memory-limit) still starts cycles
		// when the heap reaches it.
		pauseGC()
		gcOff = true
		err = sr.RestoreWith(body, func(stages []func()) {
			t := time.Now()
			switch len(calls) {
			case 0:
				firstCall = t
			case 1:
				// Between the scan and the build stages the snapshot's
				// bytes (hundreds of MB at 1M rows, unless the file is
				// mapped) and the scans' scratch have become garbage: one
				// cycle takes them back before the build stages grow the
				// heap (without it, and without the pause, a 1M-row
				// restore peaked at 1.8 GiB resident against 1.45 GiB,
				// for no more CPU).
				gcStart := time.Now()
				runtime.GC()
				between = time.Since(gcStart)
			}
			runConcurrently(stages)
			lastEnd = time.Now()
			calls = append(calls, lastEnd.Sub(t).Round(time.Millisecond))
		})
	} else {
		err = f.inner.Restore(body)
	}
	if err != nil {
		return err
	}
	// Never move backwards: after an operator restore the restored state
	// stands in for every entry this node had applied before.
	f.setApplied(index)
	f.restored.Store(index)
	// What was applied before is in the restored state or replaced by it.
	f.volume.captured()
	// The snapshot body and the decoding scratch are garbage now, and the
	// collector's goal was set while they were live: left alone, the heap
	// keeps growing to about twice the restored state plus the body before
	// the next cycle, and the freed pages go back to the OS only slowly
	// (at 1M reservations the agent sat at 1.2 GiB resident for a ledger
	// of 325 MiB). One forced cycle resets the goal and returns the pages.
	if tail, ok := f.startTail(index); ok && tail <= collectAfterTail {
		// A restart with a short log tail (a graceful stop leaves one
		// entry or so after its snapshot, a crash at most what the
		// restart target lets through): the cycle runs once the tail has
		// been applied, beside the rest of the node's start (the
		// readiness barrier), instead of before the tail (0.15-0.3 s at
		// 1M reservations). The collector stays off until the cycle
		// ends: the tail's garbage waits for it, rather than a cycle
		// running beside the tail and slowing it.
		done := make(chan struct{})
		f.collected.Store(&done)
		off := gcOff
		gcOff = false
		startCollections.Add(1)
		// collect is called once: here, or by whoever takes the pending
		// collection from collectAt.
		collect := func() {
			go func() {
				defer startCollections.Done()
				defer close(done)
				collectStart := time.Now()
				closingCollection(off)
				// The node serves soon: its first cycle under load comes
				// earlier than twice the restored state.
				lowerGCOnce(afterRestoreGCPercent)
				if f.log != nil {
					f.log.Info("collected after restore", "index", index, "tail", tail,
						"took", time.Since(collectStart).Round(time.Millisecond))
				}
			}()
		}
		if tail == 0 {
			collect()
		} else {
			f.collectAt.Store(&pendingCollection{index: index + tail, start: collect, allocs: heapAllocs()})
			// Should the tail not be applied soon (a leader's snapshot
			// replacing it, a stall), the collector does not stay off.
			wait := f.collectWait
			if wait <= 0 {
				wait = collectAfterTailWait
			}
			time.AfterFunc(wait, func() { f.startPendingCollection(math.MaxUint64) })
		}
		f.restart.restored(tr.n, time.Since(start))
		f.logRestore(start, index, tr, restoreCalls{calls, between, firstCall, lastEnd}, "after the tail")
		return nil
	}
	// Otherwise it runs here, before raft hands the FSM the entries after
	// the snapshot, not beside them: with nothing else running the
	// collector marks on every core, while a cycle running beside the
	// replay of a crash restart's log tail slowed that replay by a third
	// (mark assists and a shared core) and let the replay's garbage grow
	// the heap past the restore's own peak before the cycle ended. A
	// follower that installs a leader's snapshot does not know how many
	// entries follow it, and collects here too.
	collectStart := time.Now()
	closingCollection(gcOff)
	gcOff = false
	f.restart.restored(tr.n, time.Since(start))
	f.logRestore(start, index, tr, restoreCalls{calls, between, firstCall, lastEnd}, time.Since(collectStart).Round(time.Millisecond).String())
	return nil
}

// mapSnapshot returns the snapshot rc streams, after the header hdr, as
// the bytes of its mapped file (snapmap.go), when the node's store opened
// it, the application FSM restores in stages (the ledger's scans bytes in
// place), and the file maps; nil otherwise (the stream is read).
func (f *trackedFSM) mapSnapshot(rc io.ReadCloser, hdr [snapHeaderLen]byte) *mappedBody {
	if f.snaps == nil {
		return nil
	}
	if _, staged := f.inner.(stagedRestorer); !staged {
		return nil
	}
	sf := f.snaps.claim(binary.BigEndian.Uint64(hdr[8:]), int64(len(hdr)))
	if sf == nil {
		return nil
	}
	data, release, err := sf.mapState()
	if err == nil && (len(data) < len(hdr) || [snapHeaderLen]byte(data[:snapHeaderLen]) != hdr) {
		// Not the file the stream reads.
		release()
		err = errors.New("the mapped file does not start with the stream's header")
	}
	if err != nil {
		if f.log != nil && !errors.Is(err, errNoMapping) {
			f.log.Warn("snapshot not mapped, reading it", "error", err)
		}
		return nil
	}
	return &mappedBody{Reader: bytes.NewReader(data[snapHeaderLen:]), data: data[snapHeaderLen:], release: release, closer: rc}
}

// closingCollection is a restore's closing collection: one forced cycle
// that returns the freed pages, then the end of the restore's collector
// pause (off), after the cycle, so that the goal is set from the restored
// state alone rather than starting a cycle of its own at once.
func closingCollection(off bool) {
	debug.FreeOSMemory()
	if off {
		resumeGC()
	}
}

// collectAfterTail is the longest log tail after a snapshot restored on
// startup for which the restore's closing collection waits until the
// tail has been applied, the collector off meanwhile, rather than running
// before it. A graceful restart replays an entry or two; a crash restart
// under a restart target a few thousand.
const collectAfterTail = 8192

// collectAfterTailWait is how long a collection waiting for the tail
// waits at most.
const collectAfterTailWait = 10 * time.Second

// collectAfterTailBudget is how much the tail may allocate, the collector
// off, before the collection starts anyway. At 1M reservations a crash
// restart's tail allocated about 150 KB an entry (64 clients' groups), so
// the restart target's usual tails (up to ~1,500 entries) end before
// the budget does.
const collectAfterTailBudget = 128 << 20

// pendingCollection is a restore's closing collection waiting for the
// log tail up to index to be applied; allocs is heapAllocs when it
// began to wait.
type pendingCollection struct {
	index  uint64
	start  func()
	allocs uint64
}

// startPendingCollection starts the pending collection, if any, once
// applied reaches its index or the tail has allocated
// collectAfterTailBudget.
func (f *trackedFSM) startPendingCollection(applied uint64) {
	p := f.collectAt.Load()
	if p == nil || applied < p.index && heapAllocs()-p.allocs < collectAfterTailBudget {
		return
	}
	if f.collectAt.CompareAndSwap(p, nil) {
		p.start()
	}
}

// heapAllocs returns the bytes the process has allocated on the heap
// since it started (a cumulative count, cheap to read).
func heapAllocs() uint64 { return rtmetric.Uint64("/gc/heap/allocs:bytes") }

// startCollections counts the collections restores on a node's start
// left for after the log tail, waiting or running; each holds a collector
// pause until it ends. Tests that read or set GOGC themselves wait for
// them first.
var startCollections sync.WaitGroup

// startTail returns how many entries of the local log follow the snapshot
// at index, if this restore is the one of the node's start.
// Only the first restore after the pointer is set asks: a snapshot a
// leader installs later, even while NewRaft is still returning, is not a
// start.
func (f *trackedFSM) startTail(index uint64) (uint64, bool) {
	last := f.startLog.Swap(nil)
	if last == nil {
		return 0, false
	}
	n, err := (*last)()
	if err != nil {
		return 0, false
	}
	return n - min(n, index), true
}

// restoreCalls is what a staged restore's log line says of its stage
// runner's calls: the wall time of each, the collection between the
// two, when the first began and the last ended (zero: no staged
// restore).
type restoreCalls struct {
	walls       []time.Duration
	between     time.Duration
	first, last time.Time
}

// logRestore writes the restore's log line; collect is how long its
// closing collection took, or where it runs.
func (f *trackedFSM) logRestore(start time.Time, index uint64, tr *timedReader, rc restoreCalls, collect string) {
	if f.log == nil {
		return
	}
	took := time.Since(start)
	var before, after time.Duration
	if !rc.first.IsZero() {
		before, after = rc.first.Sub(start), time.Since(rc.last)
	}
	attrs := []any{"index", index, "bytes", tr.n, "took", took.Round(time.Millisecond),
		"read", tr.d.Round(time.Millisecond), "mapped", tr.mapped, "decode_and_rebuild", (took - tr.d).Round(time.Millisecond),
		"before_calls", before.Round(time.Millisecond), "stage_calls", rc.walls, "collect_between", rc.between.Round(time.Millisecond),
		"after_calls", after.Round(time.Millisecond), "collect", collect}
	if s, ok := f.inner.(sizer); ok {
		// What was restored, so that two restarts' times are compared on
		// like states (a burst of writes leaves idempotency keys that
		// outlive the key cap for a minute).
		b, k := s.Sizes()
		attrs = append(attrs, "bookings", b, "idempotency_keys", k)
	}
	f.log.Info("restored snapshot", attrs...)
}

// sizer is an application FSM that can say how large its state is (the
// ledger's Sizes).
type sizer interface {
	Sizes() (bookings, idempotencyKeys int)
}

// timedReader counts the bytes read and the time spent inside Read.
type timedReader struct {
	r io.Reader
	n int64
	d time.Duration
	// mapped: the bytes after the header were mapped (n and d count
	// the mapping), not read.
	mapped bool
}

func (t *timedReader) Read(p []byte) (int, error) {
	start := time.Now()
	n, err := t.r.Read(p)
	t.d += time.Since(start)
	t.n += int64(n)
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

type trackedSnapshot struct {
	inner    raft.FSMSnapshot
	index    uint64
	failures *atomic.Uint64
	// volumeBytes is the log volume the capture covered; a failed
	// persist gives it back, since a crash would still replay it.
	volume      *logVolume
	volumeBytes uint64
	// restart learns the size of each snapshot persisted.
	restart *restartModel
}

func (s *trackedSnapshot) Persist(sink raft.SnapshotSink) error {
	var hdr [snapHeaderLen]byte
	copy(hdr[:8], snapMagic[:])
	binary.BigEndian.PutUint64(hdr[8:], s.index)
	if _, err := sink.Write(hdr[:]); err != nil {
		sink.Cancel()
		s.failures.Add(1)
		s.volume.giveBack(s.volumeBytes)
		return fmt.Errorf("cluster: write snapshot header: %w", err)
	}
	cs := &countingSink{SnapshotSink: sink, n: int64(len(hdr))}
	if err := s.inner.Persist(cs); err != nil {
		s.failures.Add(1)
		s.volume.giveBack(s.volumeBytes)
		return err
	}
	s.restart.persisted(cs.n)
	return nil
}

// countingSink counts the bytes written through it.
type countingSink struct {
	raft.SnapshotSink
	n int64
}

func (c *countingSink) Write(p []byte) (int, error) {
	n, err := c.SnapshotSink.Write(p)
	c.n += int64(n)
	return n, err
}

func (s *trackedSnapshot) Release() { s.inner.Release() }
