package replicated_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/rpc"
)

// processCPU is the CPU time (user + system) the process has used, every
// goroutine included: Raft's, the FSM's and the caller's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHoldPath measures one one-phase Hold (Commit) through the
// ledger, below the HTTP edge: the command built and encoded, stamped with
// the leader's clock, applied by the FSM, its result decoded and mapped.
// log=local applies it on a single replica without Raft (agenttest's
// LocalLog), so the figures are the ledger's and the FSM's own; log=raft
// goes through a one-node Raft cluster with its disk. It reports
// allocations and the process's CPU time per operation beside wall time.
// scripts/bench-holdpath.sh runs it beside the same benchmark on an
// earlier commit.
func BenchmarkHoldPath(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"local", "raft"} {
		b.Run("log="+kind, func(b *testing.B) {
			var l ledger.Ledger
			if kind == "local" {
				l = agenttest.NewSite(b, agenttest.Options{}).Ledger
			} else {
				l = agenttest.NewCluster(b, 1, rpc.Options{}).Servers[0].Agent.Ledger()
			}
			w := ledger.Write{Tenant: "bench", Operator: true, IdempotencyKey: "res"}
			if _, err := l.CreateResource(ctx, w, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40}); err != nil {
				b.Fatal(err)
			}
			start := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			i := 0
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				i++
				w.IdempotencyKey = fmt.Sprintf("k%d", i)
				_, _, err := l.Hold(ctx, ledger.HoldArgs{Write: w, Commit: true, Labels: map[string]string{"job": "bench"},
					Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 1}}, Duration: 3_600_000,
						NotBefore: start + int64(i%997)*60_000, Deadline: ledger.NoDeadline}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkPipelineBatch measures one API Batch's trip through the
// pipeline on the leader of a three-node cluster, below the HTTP edge:
// mix=read+write is two linearizable Gets and six one-phase Holds (the
// writes go first and, applied on this leader, serve the Gets' barrier);
// mix=write is eight Holds (one ApplyBatch) and mix=read eight Gets (one
// barrier), what each half costs alone. ns/op is one whole batch; cpu-ns/op
// the process's CPU time per batch, all three nodes included.
func BenchmarkPipelineBatch(b *testing.B) {
	ctx := context.Background()
	c := agenttest.NewCluster(b, 3, rpc.Options{})
	led := c.WaitLeader(10 * time.Second).Agent.Ledger()
	w := ledger.Write{Tenant: "bench", Operator: true, IdempotencyKey: "res"}
	if _, err := led.CreateResource(ctx, w, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hold := func(l ledger.Ledger, i int) (*ledgerdv1.Reservation, error) {
		w := ledger.Write{Tenant: "bench", Operator: true, IdempotencyKey: fmt.Sprintf("k%d", i)}
		r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: w, Commit: true,
			Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 1}}, Duration: 3_600_000,
				NotBefore: start + int64(i%997)*60_000, Deadline: ledger.NoDeadline}})
		return r, err
	}
	r, err := hold(led, 0)
	if err != nil {
		b.Fatal(err)
	}
	id := r.GetId()
	next := 0 // idempotency keys, fresh across sub-benchmarks and -count
	for _, mix := range []string{"read+write", "write", "read"} {
		b.Run("mix="+mix, func(b *testing.B) {
			const n = 8
			reads := map[string]int{"read+write": 2, "write": 0, "read": n}[mix]
			errs := make([]error, n)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				p := led.Pipeline(n)
				var wg sync.WaitGroup
				for i := range n {
					next++
					k := next
					wg.Go(func() {
						defer p.Done(i)
						if i < reads {
							_, errs[i] = p.Op(i).Get(ctx, id, false)
						} else {
							_, errs[i] = hold(p.Op(i), k)
						}
					})
				}
				p.Run(ctx)
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						b.Fatalf("operation %d: %v", i, err)
					}
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
