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
	createBenchResources(b, ctx, leader)
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
					cmds[j] = groupBenchCommand(b, int(seq.Add(1)))
				}
				start := time.Now()
				res := leader.ApplyBatch(ctx, cmds)
				d := time.Since(start)
				for j, r := range res {
					err := r.Err
					if err == nil {
						// Every reserve must be admitted: a refusal would
						// measure a cheaper path.
						if rr, derr := fsm.DecodeResult(r.Data); derr != nil || rr.GetStatus() != fsmv1.Result_STATUS_OK {
							err = fmt.Errorf("result %v (%v)", rr, derr)
						}
					}
					if err != nil {
						if !failed.Swap(true) {
							b.Errorf("command %d: %v", j, err)
						}
						return
					}
				}
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

// groupBenchCommand is reserve i: one unit on one of 16 resources for an
// hour at one of 720 hourly starts, with an ID from the index as every
// reserve of the public API has (so a group numbers them).
func groupBenchCommand(b *testing.B, i int) []byte {
	const hour = int64(time.Hour / time.Millisecond)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	cmd, err := fsm.Encode(&fsmv1.Command{
		Type: fsmv1.Command_TYPE_RESERVE, IdempotencyKey: fmt.Sprintf("bench-%09d", i), Owner: "bench",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Parts:           []*fsmv1.Part{{Resource: fmt.Sprintf("res-%02d", i%16), Amount: 1}},
			DurationMillis:  hour,
			NotBeforeMillis: base + int64(i%720)*hour,
		}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return cmd
}
