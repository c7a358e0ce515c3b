package agent

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestAgentPolicyMetrics books over a variable job on a MOVE_VARIABLE
// resource through the API of a dev agent and checks the policy series on
// /metrics: the push, the waiting and pinned jobs, and a zero violation
// series for every resource.
func TestAgentPolicyMetrics(t *testing.T) {
	s, _ := startAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New([]string{s.Addr()}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateResource(ctx, &ledgerdv1.Resource{Name: "batch", Capacity: 10, Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE, MaxPushes: 1}); err != nil {
		t.Fatal(err)
	}
	// Two jobs of the whole resource from +1h: [1h, 3h) and [3h, 4h).
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, d := range []time.Duration{2 * time.Hour, time.Hour} {
		if _, err := c.SubmitJob(ctx, &ledgerdv1.SubmitJobRequest{Resource: "batch", Amount: 10, Duration: durationpb.New(d), NotBefore: timestamppb.New(at)}); err != nil {
			t.Fatal(err)
		}
	}
	// A reservation inside the first job's slot pushes it (once: pinned).
	resp, err := c.ReserveMoving(ctx, &ledgerdv1.ReserveRequest{Shape: &ledgerdv1.Shape{
		Parts: []*ledgerdv1.ResourceAmount{{Resource: "batch", Amount: 4}}, Duration: durationpb.New(30 * time.Minute), ExactStart: timestamppb.New(at.Add(30 * time.Minute)),
	}})
	if err != nil || len(resp.Moved) != 1 {
		t.Fatalf("reserve over the job: %v, %v", resp, err)
	}
	m := scrape(t, "http://"+s.Addr()+"/metrics")
	for _, c := range []struct {
		series string
		want   float64
	}{
		{"ledgerd_fsm_variable_job_pushes_total", 1},
		{"ledgerd_fsm_variable_jobs_waiting", 2},
		{"ledgerd_fsm_variable_jobs_pinned", 1},
		{"ledgerd_fsm_relaxed_admissions_total", 0},
		{"ledgerd_fsm_release_model_samples", 0},
		{`ledgerd_fsm_violations_total{resource="batch"}`, 0},
		{`ledgerd_fsm_violations_total{resource="cpu"}`, 0},
	} {
		if got, ok := m[c.series]; !ok || got != c.want {
			t.Errorf("%s = %g (present %t), want %g", c.series, got, ok, c.want)
		}
	}
}
