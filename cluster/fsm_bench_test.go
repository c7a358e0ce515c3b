package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/testnet"
)

// benchOpsPerWriter is how many writes each writer makes, back to back,
// per benchmark iteration.
const benchOpsPerWriter = 4

// noopFSM is the baseline: it accepts every entry and keeps nothing.
type noopFSM struct{}

func (noopFSM) Apply(*raft.Log) any                    { return nil }
func (noopFSM) Snapshot() (raft.FSMSnapshot, error)    { return noopSnapshot{}, nil }
func (noopFSM) Restore(rc io.ReadCloser) error         { return rc.Close() }
func (noopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (noopSnapshot) Release()                          {}

type noopSnapshot struct{}

// BenchmarkFSMvsRaw measures committed writes per second and their p50/p99
// latency on three in-process servers (raft-boltdb on disk, TCP loopback)
// for 1, 16, 64 and 256 concurrent writers, each writing back to back on
// the leader. Three kinds share the cluster setup and the command bytes:
//
//   - fsm=raw: raft.Apply straight on the leader's raft, FSM that does
//     nothing (the pre-stamped command, so the log entries are the same
//     size as the ledger's);
//   - fsm=noop: Node.Apply (leader stamp, raft.Apply, applied-index
//     wrapper) into the same do-nothing FSM;
//   - fsm=ledger: Node.Apply into the real ledger FSM, which decodes
//     every command and admits it through the planner.
//
// ledger against raw is the bar (ledger's cost on top of raw Raft);
// ledger against noop isolates the FSM itself.
func BenchmarkFSMvsRaw(b *testing.B) {
	for _, writers := range []int{1, 16, 64, 256} {
		for _, kind := range []string{"raw", "noop", "ledger"} {
			b.Run(fmt.Sprintf("writers=%d/fsm=%s", writers, kind), func(b *testing.B) {
				benchFSMvsRaw(b, writers, kind)
			})
		}
	}
}

// benchNode is one server of the benchmark cluster.
type benchNode struct {
	node *Node
	srv  *http.Server
}

// startBenchCluster starts three servers bootstrapping together, each with
// the FSM mk returns, and waits for three voters. tweak, if set, changes
// each server's Config.
func startBenchCluster(b *testing.B, mk func() raft.FSM, stamp func([]byte, int64) ([]byte, error), tweak func(*Config)) *Node {
	b.Helper()
	var nodes []benchNode
	stop := func() {
		for _, bn := range nodes {
			_ = bn.srv.Close()
			_ = bn.node.stop()
		}
		nodes = nil
	}
	b.Cleanup(stop)
	// Start all three again on fresh ports if one was taken meanwhile.
	testnet.Start(b, 9, func(a []string) error {
		for i := range 3 {
			raftAddr, gossip, rpcAddr := a[3*i], a[3*i+1], a[3*i+2]
			var join []string
			for j := range 3 {
				if j != i {
					join = append(join, a[3*j+1])
				}
			}
			ln, err := net.Listen("tcp", rpcAddr)
			if err != nil {
				stop()
				return err
			}
			cfg := Config{
				NodeName: fmt.Sprintf("b%d", i), DataDir: filepath.Join(b.TempDir(), "data"),
				RaftBind: raftAddr, GossipBind: gossip, RPCAdvertise: rpcAddr, RetryJoin: join,
				BootstrapExpect: 3, Stamp: stamp, Logger: testLogger(),
				// Raft's default timeouts (1 s), as in production: the
				// tests' tight timings lose leadership under this load on a
				// small machine, which would measure elections, not writes.
				ReconcileInterval: 200 * time.Millisecond, ServerStabilizationTime: 400 * time.Millisecond,
			}
			if tweak != nil {
				tweak(&cfg)
			}
			n, err := New(cfg, mk())
			if err != nil {
				ln.Close()
				stop()
				return fmt.Errorf("b%d: %w", i, err)
			}
			mux := http.NewServeMux()
			mux.Handle("/internal/", n.Handler())
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			nodes = append(nodes, benchNode{n, srv})
		}
		return nil
	})
	var leader *Node
	waitFor(b, 60*time.Second, "three voters", func() bool {
		for _, bn := range nodes {
			if !bn.node.IsLeader() {
				continue
			}
			fut := bn.node.raft.GetConfiguration()
			if fut.Error() != nil {
				return false
			}
			v := 0
			for _, s := range fut.Configuration().Servers {
				if s.Suffrage == raft.Voter {
					v++
				}
			}
			leader = bn.node
			return v == 3
		}
		return false
	})
	return leader
}

// benchCommand is reservation i: one unit on one of 16 resources for an
// hour, at one of 720 hourly starts, so every command is admitted and the
// planner holds many bookings.
// createBenchResources creates the 16 resources res-00 … res-15 that
// benchCommand books on, through leader.
func createBenchResources(b *testing.B, ctx context.Context, leader *Node) {
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
}

func benchCommand(b *testing.B, i int) []byte {
	const hour = int64(time.Hour / time.Millisecond)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	cmd, err := fsm.Encode(&fsmv1.Command{
		Type: fsmv1.Command_TYPE_RESERVE, IdempotencyKey: fmt.Sprintf("bench-%09d", i), Owner: "bench",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id:              fmt.Sprintf("bench-%09d", i), // not "r-": that prefix is the state machine's own
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

func benchFSMvsRaw(b *testing.B, writers int, kind string) {
	ledger := kind == "ledger"
	mk := func() raft.FSM { return noopFSM{} }
	var stamp func([]byte, int64) ([]byte, error)
	if kind != "raw" {
		stamp = fsm.Stamp
	}
	if ledger {
		mk = func() raft.FSM {
			f, err := fsm.New(fsm.Config{})
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	leader := startBenchCluster(b, mk, stamp, nil)
	ctx := context.Background()
	// Resources first, for both kinds, so the logs look alike.
	createBenchResources(b, ctx, leader)
	// The raw kind sends exactly the bytes the ledger's leader would log.
	stampNow := time.Now().UnixMilli()
	write := func(i int) error {
		cmd := benchCommand(b, i)
		if kind != "raw" {
			out, err := leader.Apply(ctx, cmd)
			if err != nil || !ledger {
				return err
			}
			// The ledger must admit every write, or the benchmark times
			// refusals.
			res, err := fsm.DecodeResult(out)
			if err != nil {
				return err
			}
			if res.GetStatus() != fsmv1.Result_STATUS_OK {
				return fmt.Errorf("write %d: %v: %s", i, res.GetStatus(), res.GetMessage())
			}
			return nil
		}
		stamped, err := fsm.Stamp(cmd, stampNow)
		if err != nil {
			return err
		}
		return leader.raft.Apply(stamped, 0).Error()
	}
	var (
		seq    atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
		failed atomic.Bool
	)
	ops := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				local := make([]time.Duration, 0, benchOpsPerWriter)
				for range benchOpsPerWriter {
					i := int(seq.Add(1))
					start := time.Now()
					if err := write(i); err != nil {
						if !failed.Swap(true) {
							b.Error(err)
						}
						return
					}
					local = append(local, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
		}
		wg.Wait()
		if failed.Load() {
			b.FailNow()
		}
		ops += writers * benchOpsPerWriter
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
