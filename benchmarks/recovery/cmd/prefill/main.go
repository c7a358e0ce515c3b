// Command prefill writes many live reservations into an empty ledgerd data
// directory through the agent's own write path (see package recovery), then
// stops gracefully. Start `ledgerd agent` on the same data directory with
// the same node name, addresses and security settings afterwards. Like
// the agent it runs secured: give it the agent's TLS files, gossip key and
// tokens file (or -insecure to compare with an insecure agent).
//
//	go run -tags hashicorpmetrics ./benchmarks/recovery/cmd/prefill -data-dir /tmp/d -live 1000000 \
//	    -raft-addr 127.0.0.1:18211 -gossip-addr 127.0.0.1:18221 -http-addr 127.0.0.1:18201 \
//	    -tls-cert-file server-n1.pem -tls-key-file server-n1-key.pem -tls-ca-file ledgerd-ca.pem \
//	    -gossip-key "$(ledgerd keygen)" -tokens-file tokens.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/recovery"
)

func main() {
	var c recovery.Config
	flag.StringVar(&c.DataDir, "data-dir", "", "agent data_dir to fill (must hold no Raft state)")
	flag.StringVar(&c.NodeName, "node-name", "n1", "agent node_name")
	flag.StringVar(&c.RaftAddr, "raft-addr", "127.0.0.1:7421", "agent raft_addr (recorded in the Raft configuration)")
	flag.StringVar(&c.GossipAddr, "gossip-addr", "127.0.0.1:7422", "agent gossip_addr")
	flag.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:7420", "agent http_addr (recorded only)")
	flag.IntVar(&c.Live, "live", 100000, "committed reservations to write")
	flag.IntVar(&c.Resources, "resources", 0, "resources (0 = live/100, at least 8)")
	flag.Int64Var(&c.Capacity, "capacity", 128, "capacity of each resource")
	flag.DurationVar(&c.Horizon, "horizon", 24*time.Hour, "booking horizon, starting in 1h")
	flag.IntVar(&c.Workers, "workers", 256, "concurrent writers")
	flag.IntVar(&c.UnitResources, "unit-resources", 16, "resources made of named units (-1: none)")
	flag.IntVar(&c.UnitsEach, "units", 64, "units of each unit resource")
	flag.IntVar(&c.UnitEvery, "unit-every", 32, "one writer in this many books on the unit resources")
	flag.IntVar(&c.Series, "series", 8, "hourly series over the horizon (-1: none)")
	flag.IntVar(&c.Limits, "limits", 0, "generous tenant limit entries (0: one on every resource plus one per unit resource; -1: none)")
	flag.Uint64Var(&c.Seed, "seed", 1, "random seed of the request shapes")
	flag.Uint64Var(&c.SnapshotThreshold, "snapshot-threshold", 16384, "as the agent's snapshot_threshold (its default)")
	flag.DurationVar(&c.SnapshotInterval, "snapshot-interval", 10*time.Second, "as the agent's snapshot_interval (its default)")
	flag.Uint64Var(&c.TrailingLogs, "trailing-logs", 10240, "as the agent's trailing_logs (its default)")
	flag.Uint64Var(&c.SnapshotLogBytes, "snapshot-log-bytes", 0, "as the agent's snapshot_log_bytes, in bytes (0, its default: snapshot only at the stop)")
	flag.StringVar(&c.RaftLogStore, "raft-log-store", "", "agent raft_log_store: boltdb or wal (default: the agent's)")
	flag.StringVar(&c.TLSCertFile, "tls-cert-file", "", "agent tls_cert_file (a server certificate: `ledgerd tls cert create -server`)")
	flag.StringVar(&c.TLSKeyFile, "tls-key-file", "", "agent tls_key_file")
	flag.StringVar(&c.TLSCAFile, "tls-ca-file", "", "agent tls_ca_file")
	flag.StringVar(&c.GossipKey, "gossip-key", "", "agent gossip_key (`ledgerd keygen`)")
	flag.StringVar(&c.TokensFile, "tokens-file", "", "agent tokens_file")
	flag.BoolVar(&c.Insecure, "insecure", false, "run without the TLS files, gossip key and tokens file (only to compare with an insecure agent)")
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the whole prefill here")
	flag.Parse()
	c.Progress = os.Stderr
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "prefill:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := recovery.Prefill(ctx, c)
	stop()
	fmt.Printf("prefill: %d accepted, %d rejected on %d resources in %s (%.0f accepted/s), applied index %d\n",
		res.Accepted, res.Rejected, res.Resources, res.Elapsed.Round(time.Millisecond),
		float64(res.Accepted)/res.Elapsed.Seconds(), res.AppliedIndex)
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "prefill:", err)
		os.Exit(1)
	}
}
