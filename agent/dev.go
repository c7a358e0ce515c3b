package agent

import (
	"context"
	"fmt"
	"io"
	"time"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/ui"
)

// devResources are the dev agent's sample resources.
var devResources = []struct {
	name string
	capa int64
	unit string
}{{"cpu", 128, "cores"}, {"gpu", 8, "GPUs"}, {"licenses", 50, "seats"}}

// seedDev waits for the one-node cluster, creates sample resources and a
// sample reservation through the ledger (so through the log, like any
// client's), and tells the user how to try it.
func (a *Agent) seedDev(ctx context.Context, out io.Writer) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.waitReady(wctx); err != nil {
		return err
	}
	w := ledger.Write{Tenant: "default", Operator: true}
	for _, r := range devResources {
		w.IdempotencyKey = "dev-resource-" + r.name
		if _, err := a.ledger.CreateResource(wctx, w, &ledgerdv1.Resource{Name: r.name, Capacity: r.capa, Unit: r.unit}); err != nil {
			return fmt.Errorf("sample resource %s: %w", r.name, err)
		}
	}
	start := time.Now().Add(time.Hour).Truncate(time.Minute).UnixMilli()
	w.IdempotencyKey = "dev-sample"
	r, _, err := a.ledger.Hold(wctx, ledger.HoldArgs{
		Write: w, ID: "sample", Commit: true, Labels: map[string]string{"example": "true"},
		Shape: ledger.Shape{
			Parts:    []ledger.Part{{Resource: "cpu", Amount: 64}, {Resource: "gpu", Amount: 2}},
			Duration: 2 * time.Hour.Milliseconds(), NotBefore: start, Deadline: ledger.NoDeadline,
		},
	})
	if err != nil {
		return fmt.Errorf("sample reservation: %w", err)
	}
	fmt.Fprintf(out, `
ledgerd dev agent is ready (data in a temporary directory, removed on exit).

  Web UI: %[6]s%[7]s
  HTTP API (Connect, gRPC, gRPC-Web, JSON): %[6]s
  Metrics: %[6]s/metrics   Health: /healthz /readyz

Sample resources: cpu (128 cores), gpu (8 GPUs), licenses (50 seats).
Sample reservation %[2]q: cpu=64,gpu=2 from %[3]s to %[4]s (%[5]s).

Try:
  ledgerd resources -addr %[1]s
  ledgerd get -addr %[1]s sample
  ledgerd reserve -addr %[1]s -res cpu=16,licenses=4 -dur 1h -after +30m

Press Ctrl-C to stop.
`, a.addr, r.GetId(), r.GetStart().AsTime().UTC().Format(time.RFC3339),
		r.GetEnd().AsTime().UTC().Format(time.RFC3339), stateName(r.GetState()), a.URL(), ui.Path)
	return nil
}

// stateName prints a reservation state as the fsm's tables do
// (STATE_COMMITTED), which the dev greeting has always shown.
func stateName(s ledgerdv1.ReservationState) string {
	const prefix = "RESERVATION_"
	n := s.String()
	if len(n) > len(prefix) && n[:len(prefix)] == prefix {
		return n[len(prefix):]
	}
	return n
}

// waitReady waits until the node knows a leader and has caught up.
func (a *Agent) waitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !a.node.Ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("no leader: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
