// Command restoreprof restores the newest snapshot of a stopped agent's
// data directory into a fresh ledger FSM in-process, under the CPU
// profiler, and prints the time to read the file, the time to restore it,
// and the Go heap the restored ledger holds.
//
// With -replay it restores the snapshot without profiling and then
// replays the log entries after it (a crashed agent's log tail, see
// KEEP_CRASH in scripts/bench-recovery.sh) as a restarting node's raft
// hands them to the FSM, under the CPU profiler: it prints the entries and
// operations replayed and the wall and CPU time of the replay alone, and
// the applied index and row count the replayed state ends with.
//
//	go run -tags hashicorpmetrics ./benchmarks/recovery/cmd/restoreprof -data-dir /tmp/d -cpuprofile cpu.pb.gz
//	go run -tags hashicorpmetrics ./benchmarks/recovery/cmd/restoreprof -replay -data-dir /tmp/crash -cpuprofile replay.pb.gz
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/benchmarks/recovery"
	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

func main() {
	dir := flag.String("data-dir", "", "agent data_dir (the agent must be stopped)")
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the restore here")
	mem := flag.String("memprofile", "", "write a heap profile of the restored ledger here (after a collection)")
	stages := flag.String("stages", "concurrent", "how to run the restore's independent stages: concurrent, concurrent-gc (a collection between scan and build), paused (the collector off throughout but for one collection between scan and build) or in-order")
	replay := flag.Bool("replay", false, "profile the replay of the log entries after the snapshot instead of the restore")
	persist := flag.Bool("persist", false, "profile taking a snapshot of the restored state (capture, then Persist into a snapshot store in a scratch directory, as a node does) instead of the restore")
	persistStore := flag.String("persist-store", "node", "the store -persist writes to: node (the node's own, as ledgerd writes snapshots) or raft (raft's file store, for a side-by-side comparison)")
	times := flag.Bool("stagetimes", false, "print the wall time of each restore stage and of each call of the stage runner")
	flag.Parse()
	var runner fsm.StageRunner
	switch *stages {
	case "concurrent":
		runner = concurrently
	case "concurrent-gc":
		// As the agent does: a collection before the build stages,
		// once the scan stages have dropped the snapshot's bytes.
		calls := 0
		runner = func(stages []func()) {
			if calls++; calls == 2 {
				runtime.GC()
			}
			concurrently(stages)
		}
	case "paused":
		// The collector off for the whole restore (its preparation and
		// the scan stages too), with one collection between the calls,
		// as the agent does.
		calls, saved := 0, 0
		beforeRestore = func() { saved = debug.SetGCPercent(-1) }
		runner = func(stages []func()) {
			if calls++; calls == 2 {
				runtime.GC()
			}
			concurrently(stages)
			if calls == 2 {
				debug.SetGCPercent(saved)
			}
		}
	case "in-order":
	default:
		fmt.Fprintln(os.Stderr, "restoreprof: -stages: want concurrent, concurrent-gc, paused or in-order")
		os.Exit(2)
	}
	var clock *stageClock
	if *times {
		clock = new(stageClock)
		runner = timeStages(runner, clock)
	}
	if *mem != "" && (*replay || *persist) {
		fmt.Fprintln(os.Stderr, "restoreprof: -memprofile profiles the restore: it cannot be combined with -replay or -persist")
		os.Exit(2)
	}
	if *persistStore != "node" && *persistStore != "raft" {
		fmt.Fprintf(os.Stderr, "restoreprof: -persist-store %q: want node or raft\n", *persistStore)
		os.Exit(2)
	}
	if *replay && *persist {
		fmt.Fprintln(os.Stderr, "restoreprof: -replay and -persist: choose one")
		os.Exit(2)
	}
	if *persist {
		if err := runPersist(*dir, *cpu, *persistStore, runner, clock); err != nil {
			fmt.Fprintln(os.Stderr, "restoreprof:", err)
			os.Exit(1)
		}
		return
	}
	if *replay {
		if err := runReplay(*dir, *cpu, runner, clock); err != nil {
			fmt.Fprintln(os.Stderr, "restoreprof:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*dir, *cpu, *mem, runner, clock); err != nil {
		fmt.Fprintln(os.Stderr, "restoreprof:", err)
		os.Exit(1)
	}
}

// beforeRestore runs just before each command restores (after it has
// read the snapshot): -stages paused turns the collector off there.
var beforeRestore = func() {}

// restore is each command's restore of snap: beforeRestore, the clock's
// start, the restore itself.
func restore(snap recovery.Snapshot, runner fsm.StageRunner, clock *stageClock) (*fsm.FSM, error) {
	beforeRestore()
	clock.begin()
	return recovery.RestoreSnapshot(snap, runner)
}

// stageClock holds when the timed restore began, for timeStages: each
// command marks it (begin) just before it restores. A nil clock (no
// -stagetimes) marks nothing.
type stageClock struct{ start time.Time }

func (c *stageClock) begin() {
	if c != nil {
		c.start = time.Now()
	}
}

// timeStages wraps run (nil: in order) so that it prints, for each call,
// the time since the previous call returned (for the first call: since
// clock began, the split of the snapshot and the resources), the call's
// wall time and each stage's.
func timeStages(run fsm.StageRunner, clock *stageClock) fsm.StageRunner {
	var last time.Time
	call := 0
	return func(stages []func()) {
		if call == 0 {
			last = clock.start
		}
		call++
		start := time.Now()
		walls := make([]time.Duration, len(stages))
		timed := make([]func(), len(stages))
		for i, f := range stages {
			timed[i] = func() {
				t := time.Now()
				f()
				walls[i] = time.Since(t)
			}
		}
		if run == nil {
			for _, f := range timed {
				f()
			}
		} else {
			run(timed)
		}
		end := time.Now()
		fmt.Printf("restoreprof: call %d: %s after the previous, %s wall; stages", call,
			start.Sub(last).Round(time.Millisecond), end.Sub(start).Round(time.Millisecond))
		for _, w := range walls {
			fmt.Printf(" %s", w.Round(time.Millisecond))
		}
		fmt.Println()
		last = time.Now()
	}
}

// concurrently runs each stage on its own goroutine, as the agent's
// cluster node does.
func concurrently(stages []func()) {
	var wg sync.WaitGroup
	for _, f := range stages {
		wg.Go(f)
	}
	wg.Wait()
}

func run(dir, cpuFile, memFile string, runner fsm.StageRunner, clock *stageClock) error {
	t0 := time.Now()
	snap, err := recovery.ReadNewestSnapshot(dir)
	if err != nil {
		return err
	}
	read, size := time.Since(t0), len(snap.Body)
	if memFile != "" {
		// Every allocation of the restore sampled, so the profile adds
		// up to the heap the ledger holds.
		runtime.MemProfileRate = 4096
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	closeProfile, err := startCPUProfile(cpuFile)
	if err != nil {
		return err
	}
	defer closeProfile()
	t1, cpu1 := time.Now(), cpuTime()
	l, err := restore(snap, runner, clock)
	if err != nil {
		return err
	}
	took, cpu := time.Since(t1), cpuTime()-cpu1
	pprof.StopCPUProfile()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The snapshot's bytes are in both readings, so the difference is
	// the ledger's.
	runtime.KeepAlive(snap.Body)
	st := l.Stats()
	live := st.ByState[fsmv1.Reservation_STATE_COMMITTED] + st.ByState[fsmv1.Reservation_STATE_ACTIVE] + st.ByState[fsmv1.Reservation_STATE_HELD]
	heap := after.HeapInuse - min(after.HeapInuse, before.HeapInuse)
	fmt.Printf("restoreprof: snapshot %s, %d MiB, read %s, fsm restore %s wall, %s CPU (%.1f us CPU per live reservation); "+
		"%d live, %d idempotency keys; heap held by the ledger %d MiB (%.0f B per live reservation)\n",
		snap.ID, size>>20, read.Round(time.Millisecond), took.Round(time.Millisecond), cpu.Round(time.Millisecond),
		float64(cpu.Microseconds())/float64(max(live, 1)), live, st.IdempotencyKeys, heap>>20, float64(heap)/float64(max(live, 1)))
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		// The file's bytes (read whole above) are part of it.
		fmt.Printf("restoreprof: peak resident set of the process %d MiB (with the snapshot's %d MiB read into a buffer; a node maps the file instead)\n", ru.Maxrss>>10, size>>20)
	}
	if memFile != "" {
		f, err := os.Create(memFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			return err
		}
	}
	runtime.KeepAlive(l)
	return nil
}

// cpuTime is the user plus system CPU time this process has used (all
// threads, so the garbage collector's work is included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runReplay restores the newest snapshot of dir, reads the log entries
// after it into memory, and replays them under the CPU profiler.
func runReplay(dir, cpuFile string, runner fsm.StageRunner, clock *stageClock) error {
	snap, err := recovery.ReadNewestSnapshot(dir)
	if err != nil {
		return err
	}
	t0 := time.Now()
	l, err := restore(snap, runner, clock)
	if err != nil {
		return err
	}
	restored := time.Since(t0)
	snap.Body = nil
	tail, err := recovery.ReadLogTail(dir, snap.Index)
	if err != nil {
		return err
	}
	ops, err := tail.Operations()
	if err != nil {
		return err
	}
	var dataBytes int
	for _, e := range tail.Entries {
		dataBytes += len(e.Data)
	}
	// As the node does after a restore (cluster's trackedFSM.Restore):
	// one collection, so the replay does not pay for the restore's garbage.
	debug.FreeOSMemory()
	closeProfile, err := startCPUProfile(cpuFile)
	if err != nil {
		return err
	}
	defer closeProfile()
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	t1, cpu1 := time.Now(), cpuTime()
	st, err := recovery.Replay(l, tail)
	took, cpu := time.Since(t1), cpuTime()-cpu1
	pprof.StopCPUProfile()
	runtime.ReadMemStats(&gc1)
	if err != nil {
		return err
	}
	stats := l.Stats()
	rows := 0
	for _, n := range stats.ByState {
		rows += n
	}
	fmt.Printf("restoreprof: snapshot %s at %d restored in %s; log tail read in %s\n",
		snap.ID, snap.Index, restored.Round(time.Millisecond), tail.Read.Round(time.Millisecond))
	fmt.Printf("restoreprof: replay of %d entries (%d commands, %d groups, %d operations of which %d keyed, %d batches, %.1f MiB of entry data): %s wall, %s CPU "+
		"(%.1f us CPU per entry, %.2f us per operation, %.2f us per KiB), %d GC cycles, %d MiB allocated\n",
		st.Entries, st.Commands, ops.Groups, ops.Operations, ops.Keyed, st.Batches, float64(dataBytes)/(1<<20), took.Round(time.Millisecond), cpu.Round(time.Millisecond),
		float64(cpu.Nanoseconds())/1e3/float64(max(st.Entries, 1)), float64(cpu.Nanoseconds())/1e3/float64(max(ops.Operations, 1)),
		float64(cpu.Nanoseconds())/1e3/max(float64(dataBytes)/1024, 1),
		gc1.NumGC-gc0.NumGC, (gc1.TotalAlloc-gc0.TotalAlloc)>>20)
	fmt.Printf("restoreprof: replayed state: applied index %d (last entry %d), %d reservations, %d bookings, %d idempotency keys\n",
		l.AppliedIndex(), st.LastIndex, rows, stats.Bookings, stats.IdempotencyKeys)
	runtime.KeepAlive(l)
	return nil
}

// startCPUProfile creates path and starts the CPU profiler writing to it
// (nothing when path is empty); the caller stops the profiler when the
// timed part ends and calls the returned function to close the file.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { f.Close() }, nil
}

// runPersist restores the newest snapshot of dir, then takes a snapshot
// of that state as a node does: the capture (on the FSM goroutine, which
// it holds up) and Persist into a snapshot store (CRC, write, fsync) in
// a scratch directory, under the CPU profiler. storeKind picks the store:
// the node's (cluster.NewSnapshotStore) or raft's file store.
func runPersist(dir, cpuFile, storeKind string, runner fsm.StageRunner, clock *stageClock) error {
	snap, err := recovery.ReadNewestSnapshot(dir)
	if err != nil {
		return err
	}
	l, err := restore(snap, runner, clock)
	if err != nil {
		return err
	}
	snap.Body = nil
	tmp, err := os.MkdirTemp("", "ledgerd-persist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var store raft.SnapshotStore
	if storeKind == "raft" {
		store, err = raft.NewFileSnapshotStore(tmp, 1, io.Discard)
	} else {
		store, err = cluster.NewSnapshotStore(tmp, 1)
	}
	if err != nil {
		return err
	}
	debug.FreeOSMemory()
	closeProfile, err := startCPUProfile(cpuFile)
	if err != nil {
		return err
	}
	defer closeProfile()
	t0, cpu0 := time.Now(), cpuTime()
	s, err := l.Snapshot()
	if err != nil {
		return err
	}
	captured := time.Since(t0)
	sink, err := store.Create(raft.SnapshotVersionMax, l.AppliedIndex(), 1, raft.Configuration{}, 1, nil)
	if err != nil {
		return err
	}
	if err := s.Persist(sink); err != nil {
		return err
	}
	s.Release()
	took, cpu := time.Since(t0), cpuTime()-cpu0
	pprof.StopCPUProfile()
	list, err := store.List()
	if err != nil || len(list) == 0 {
		return fmt.Errorf("list the written snapshot: %v", err)
	}
	fmt.Printf("restoreprof: snapshot of %s into the %s store: capture %s, capture and persist %s wall, %s CPU, %d MiB written\n",
		snap.ID, storeKind, captured.Round(time.Millisecond), took.Round(time.Millisecond), cpu.Round(time.Millisecond), list[0].Size>>20)
	runtime.KeepAlive(l)
	return nil
}
