package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// BenchmarkReserveBudget splits one client's one-phase reserve into the
// hops it crosses, each measured alone, one call at a time, all in this
// process (on loopback for the HTTP hops):
//
//	hop=edge/ledger=stub   client (coalescing, a Batch of one) → HTTP/2 →
//	                       Connect → rpc handler → a Ledger that answers at
//	                       once → back: the API edge without the ledger
//	hop=ledger/log=local   the replicated Ledger on one replica without
//	                       Raft: command built, checked, encoded, stamped,
//	                       applied by the FSM, result decoded and mapped
//	hop=ledger/log=raft-3  the same on the leader of 3 in-process nodes:
//	                       adds propose, the disk syncs, replication and
//	                       the commit round
//	hop=api/log=raft-3     the whole path: client → leader's API → Raft
//	                       (leader-only: the client knows only the leader)
//	hop=rawraft/log=raft-3 raw hashicorp/raft Apply of one entry on 3
//	                       in-process nodes with a no-op state machine
//	                       (the loadgen's raw raft system), for the bar
//
// and two at 64 callers (clients=64) for the CPU per operation when the
// client coalesces: the edge alone and the API on the one-replica ledger.
//
// Besides the mean (ns/op) each reports its p50 in microseconds and the
// process's CPU per operation. The differences give the budget: api −
// ledger/raft-3 is the edge on a real ledger; ledger/raft-3 −
// ledger/local is Raft's round. The loadgen's one-client p50 against
// agent processes adds the costs of separate processes (scheduling,
// three Go runtimes on shared cores) to these.
func BenchmarkReserveBudget(b *testing.B) {
	ctx := context.Background()
	start := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	w := ledger.Write{Tenant: "bench", Operator: true}
	holdArgs := func(i int) ledger.HoldArgs {
		w.IdempotencyKey = fmt.Sprintf("k%d", i)
		return ledger.HoldArgs{Write: w, Commit: true, Labels: map[string]string{"job": "bench"},
			Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 1}}, Duration: 3_600_000,
				NotBefore: start.UnixMilli() + int64(i%997)*60_000, Deadline: ledger.NoDeadline}}
	}
	reserveReq := func(i int) *ledgerdv1.ReserveRequest {
		nb := start.Add(time.Duration(i%997) * time.Minute)
		return &ledgerdv1.ReserveRequest{
			Shape: &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}}, Duration: durationpb.New(time.Hour),
				NotBefore: timestamppb.New(nb)},
			Labels: map[string]string{"job": "bench"}, IdempotencyKey: fmt.Sprintf("k%d", i),
		}
	}
	createCPU := func(b *testing.B, l ledger.Ledger) {
		if _, err := l.CreateResource(ctx, ledger.Write{Tenant: "bench", Operator: true, IdempotencyKey: "res"}, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40}); err != nil {
			b.Fatal(err)
		}
	}
	viaAPI := func(b *testing.B, addrs []string) func(i int) {
		c, err := client.New(addrs, client.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return func(i int) {
			if _, err := c.Reserve(ctx, reserveReq(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	viaLedger := func(b *testing.B, l ledger.Ledger) func(i int) {
		return func(i int) {
			if _, _, err := l.Hold(ctx, holdArgs(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("hop=edge/ledger=stub", func(b *testing.B) {
		measure(b, viaAPI(b, []string{serveStub(b)}))
	})
	b.Run("hop=ledger/log=local", func(b *testing.B) {
		l := agenttest.NewSite(b, agenttest.Options{}).Ledger
		createCPU(b, l)
		measure(b, viaLedger(b, l))
	})
	// 64 callers at once: the coalescing client sends Batch calls of
	// many operations, so these give the edge's CPU per operation under
	// load (less sensitive to other work on the machine than a
	// throughput).
	b.Run("hop=edge/ledger=stub/clients=64", func(b *testing.B) {
		measureParallel(b, 64, viaAPI(b, []string{serveStub(b)}))
	})
	b.Run("hop=api/log=local/clients=64", func(b *testing.B) {
		s := agenttest.NewSite(b, agenttest.Options{})
		createCPU(b, s.Ledger)
		measureParallel(b, 64, viaAPI(b, s.Addrs))
	})
	b.Run("hop=rawraft/log=raft-3", func(b *testing.B) {
		r, err := NewRawRaft(3, b.TempDir(), nil, "wal")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = r.Close() })
		measure(b, func(int) {
			if _, err := r.Reserve(ctx, Shape{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	c := agenttest.NewCluster(b, 3, rpc.Options{})
	leader := c.WaitLeader(30 * time.Second)
	createCPU(b, leader.Agent.Ledger())
	b.Run("hop=ledger/log=raft-3", func(b *testing.B) {
		measure(b, viaLedger(b, leader.Agent.Ledger()))
	})
	b.Run("hop=api/log=raft-3", func(b *testing.B) {
		measure(b, viaAPI(b, c.Addrs()))
	})
	b.Run("hop=api/log=raft-3/leader-only", func(b *testing.B) {
		measure(b, viaAPI(b, []string{leader.Addr}))
	})
}

// measure runs call once per iteration and reports the p50 latency and
// the process's CPU per operation beside the mean.
func measure(b *testing.B, call func(i int)) {
	for range 50 { // warm up: connections, the leader, the pools
		call(nextKey())
	}
	var lat []time.Duration
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		t0 := time.Now()
		call(nextKey())
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-us")
}

// measureParallel runs call from clients goroutines at once and reports
// the process's CPU per operation.
func measureParallel(b *testing.B, clients int, call func(i int)) {
	for range 50 {
		call(nextKey())
	}
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			call(nextKey())
		}
	})
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// budgetKeys numbers the operations of the budget: every one has its own
// idempotency key, across sub-benchmarks and the rounds of RunParallel.
var budgetKeys atomic.Int64

func nextKey() int { return int(budgetKeys.Add(1)) }

// processCPU is the CPU time (user + system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stubLedger answers Hold at once with a fixed reservation; every other
// method is the nil interface's (the budget calls none).
type stubLedger struct{ ledger.Ledger }

var stubReservation = &ledgerdv1.Reservation{Id: "r-stub", Tenant: "default", State: ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED,
	Parts: []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}}, Start: timestamppb.New(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)),
	End: timestamppb.New(time.Date(2031, 1, 1, 1, 0, 0, 0, time.UTC)), Version: 7, Labels: map[string]string{"job": "bench"}}

func (stubLedger) Hold(context.Context, ledger.HoldArgs) (*ledgerdv1.Reservation, []*ledgerdv1.MovedJob, error) {
	return stubReservation, nil, nil
}

// serveStub serves the API over a stubLedger on loopback (h2c, as
// -insecure agents do) and returns its address.
func serveStub(b *testing.B) string {
	srv, err := rpc.New(rpc.Options{Ledger: stubLedger{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(), Protocols: rpc.ServeProtocols(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}
