package client

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// TestCoReserveCall: a co-reservation retried across an election is
// booked once, each sub-request on the first candidate it fits.
func TestCoReserveCall(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, 1)
	acme := newClient(t, s, agenttest.TokenAcme)
	acme.opts.MaxAttempts = 50
	sub := func(amount int64) *ledgerdv1.CoSubRequest {
		return &ledgerdv1.CoSubRequest{Amount: amount, Start: timestamppb.New(t0.Add(time.Hour)), Duration: durationpb.New(time.Hour)}
	}
	downBriefly(s)
	out, err := acme.CoReserve(ctx, &ledgerdv1.CoReserveRequest{Id: "co", Candidates: []string{"gpu", "cpu"},
		Subs: []*ledgerdv1.CoSubRequest{sub(6), sub(6), sub(2)}})
	if err != nil {
		t.Fatalf("co-reserve across an election: %v", err)
	}
	want := []string{"gpu", "cpu", "gpu"}
	for i, p := range out.Placements {
		if p.Resource != want[i] || p.ProbabilityPermille != 1000 {
			t.Fatalf("placement %d = %v, want %s", i, p, want[i])
		}
	}
	if len(out.Placements) != 3 || out.JointPermille != 1000 {
		t.Fatalf("co-reservation = %v", out)
	}
	if n := countLive(t, acme); n != 3 {
		t.Fatalf("%d live reservations, want 3", n)
	}
}
