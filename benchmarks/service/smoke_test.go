package service

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestSmokeLedgerd runs the generator for a few seconds against an
// in-process one-node cluster, with the coalescing client and with unary
// calls, and checks the report adds up.
func TestSmokeLedgerd(t *testing.T) {
	for _, mode := range []string{"coalesced", "unary"} {
		t.Run(mode, func(t *testing.T) { smokeLedgerd(t, mode) })
	}
}

func smokeLedgerd(t *testing.T, mode string) {
	c := agenttest.NewCluster(t, 1, rpc.Options{Auth: agenttest.NewAuth(t)})
	sys, err := NewLedgerd(c.Addrs(), client.Options{Token: agenttest.TokenOps, NoCoalesce: mode == "unary"}, "1 node")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	res, err := Run(context.Background(), sys, Config{
		Clients: 4, Live: 200, Duration: 2500 * time.Millisecond, Resources: 8, Capacity: 64,
		Horizon: 24 * time.Hour, Slack: 1, Mix: DefaultMix, Seed: 1, Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if res.Client != mode || !strings.Contains(table.String(), mode+" client") {
		t.Fatalf("result client %q, table %q; want %s recorded", res.Client, table.String(), mode)
	}
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if res.Committed <= 0 || res.AcceptanceRate <= 0 || res.AcceptanceRate > 1 {
		t.Fatalf("committed %.1f/s acceptance %.2f", res.Committed, res.AcceptanceRate)
	}
	if res.Live < 150 || res.Live > 250 {
		t.Fatalf("live = %d, want near 200", res.Live)
	}
	for _, s := range res.Ops {
		if s.OK+s.Rejected == 0 {
			t.Fatalf("op %s never ran", s.Op)
		}
		if s.P50 > s.P99 || s.P99 > s.Max {
			t.Fatalf("op %s: percentiles out of order: %+v", s.Op, s)
		}
	}
	if !strings.Contains(progress.String(), "run: ") {
		t.Fatalf("no progress line: %q", progress.String())
	}
	// The same live set read back through the API: nothing was lost.
	cl, err := client.New(c.Addrs(), client.Options{Token: agenttest.TokenOps})
	if err != nil {
		t.Fatal(err)
	}
	all, err := cl.ListAll(context.Background(), &ledgerdv1.ListRequest{States: []ledgerdv1.ReservationState{ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED}})
	if err != nil {
		t.Fatal(err)
	}
	// Operations cut off by the end of the run may have been applied
	// without the generator knowing: at most one per client.
	if d := len(all) - res.Live; d < -res.Clients || d > res.Clients {
		t.Fatalf("server holds %d committed reservations, generator tracks %d (more than %d apart)", len(all), res.Live, res.Clients)
	}
}
