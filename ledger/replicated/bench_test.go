package replicated_test

import (
	"context"
	"fmt"
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
