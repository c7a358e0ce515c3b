package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// BenchmarkGroupCommit measures what group commit changes on the write
// path of a batch: three in-process servers (raft-boltdb on disk, TCP
// loopback) with the real ledger FSM, callers that each apply batches of
// 64 reserves back to back on the leader (what the API's Batch call and
// the client's coalescing hand to ApplyBatch), with grouping off (one
// log entry per command, as before) and on (fsm.GroupCommands). It
// reports committed commands per second, log entries per command and the
// p50/p99 latency of one batch.
func BenchmarkGroupCommit(b *testing.B) {
	for _, callers := range []int{1, 4, 16} {
		for _, group := range []bool{false, true} {
			b.Run(fmt.Sprintf("callers=%d/batch=64/group=%t", callers, group), func(b *testing.B) {
				benchGroupCommit(b, callers, 64, group)
			})
		}
	}
}

func benchGroupCommit(b *testing.B, callers, batch int, group bool) {
	tweak := func(cfg *Config) { cfg.EnvelopeVersion = fsm.CurrentVersion }
	if group {
		tweak = func(cfg *Config) {
			cfg.EnvelopeVersion, cfg.Group, cfg.GroupVersion = fsm.CurrentVersion, fsm.GroupCommands, fsm.GroupVersion
		}
	}
	leader := startBenchCluster(b, func() raft.FSM {
		f, err := fsm.New(fsm.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return f
	}, fsm.Stamp, tweak)
	ctx := context.Background()
	for r := range 16 {
		cmd, err := fsm.Encode(&fsmv1.Command{
			Type: fsmv1.Command_TYPE_CREATE_RESOURCE, IdempotencyKey: fmt.Sprintf("res-%02d", r), Owner: "bench",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{
				Name: fmt.Sprintf("res-%02d", r), Capacity: 1 << 40, Unit: "units"}},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := leader.Apply(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	}
	if group {
		waitFor(b, 30*time.Second, "every server to announce groups", func() bool {
			return leader.CommonEnvelopeVersion() >= fsm.GroupVersion
		})
	}
	var (
		seq    atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
		failed atomic.Bool
	)
	ops := 0
	first := leader.raft.LastIndex()
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				cmds := make([][]byte, batch)
				for j := range cmds {
					cmds[j] = benchCommand(b, int(seq.Add(1)))
				}
				start := time.Now()
				for j, r := range leader.ApplyBatch(ctx, cmds) {
					if r.Err != nil {
						if !failed.Swap(true) {
							b.Errorf("command %d: %v", j, r.Err)
						}
						return
					}
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		if failed.Load() {
			b.FailNow()
		}
		ops += callers * batch
	}
	b.StopTimer()
	entries := leader.raft.LastIndex() - first
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "cmds/s")
	b.ReportMetric(float64(entries)/float64(max(ops, 1)), "entries/cmd")
	b.ReportMetric(pct(0.50), "batch-p50-ms")
	b.ReportMetric(pct(0.99), "batch-p99-ms")
}
