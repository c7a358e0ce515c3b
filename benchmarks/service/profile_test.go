package service

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestProfileLedgerd runs the workload against an in-process cluster so
// that `go test -cpuprofile` sees servers and clients in one profile. It is
// off by default:
//
//	LEDGERD_BENCH_PROFILE=3 go test -tags hashicorpmetrics -run TestProfileLedgerd \
//	    -cpuprofile cpu.out -count=1 ./benchmarks/service
//
// The variable is the node count; LEDGERD_BENCH_MIX picks the mix.
func TestProfileLedgerd(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LEDGERD_BENCH_PROFILE"))
	if n <= 0 {
		t.Skip("set LEDGERD_BENCH_PROFILE=<nodes> to profile a run")
	}
	mix, err := ParseMix(os.Getenv("LEDGERD_BENCH_MIX"))
	if err != nil {
		t.Fatal(err)
	}
	c := agenttest.NewCluster(t, n, rpc.Options{Auth: agenttest.NewAuth(t)})
	sys, err := NewLedgerd(c.Addrs(), client.Options{Token: agenttest.TokenOps}, strconv.Itoa(n)+" nodes")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sys, Config{
		Clients: 64, Live: 10000, Duration: 10 * time.Second, Resources: 100, Capacity: 128,
		Horizon: 24 * time.Hour, Slack: 1, Mix: mix, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	res.Label, res.Mix = strconv.Itoa(n)+" nodes (in-process)", os.Getenv("LEDGERD_BENCH_MIX")
	if err := res.WriteTable(os.Stdout); err != nil {
		t.Fatal(err)
	}
}
