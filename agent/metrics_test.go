package agent

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// scrape fetches url and returns every sample by its series text, e.g.
// `ledgerd_fsm_reservations{state="held"}`.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestAgentLedgerMetrics runs a dev agent, adds a hold next to the sample
// reservation, and checks the ledger's series on /metrics against what was
// written: holds, reservations by state, per-resource capacity and 24-hour
// utilization, applied index, and the snapshot failure counter.
func TestAgentLedgerMetrics(t *testing.T) {
	s, _ := startAgent(t)
	ctx := context.Background()
	// A hold of 10 licenses for 6 h, well inside the 24 h window.
	if _, err := s.applyDev(ctx, &fsmv1.Command{
		Type: fsmv1.Command_TYPE_HOLD, IdempotencyKey: "metrics-hold", Owner: "default",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id: "metrics-hold", Parts: []*fsmv1.Part{{Resource: "licenses", Amount: 10}},
			DurationMillis: 6 * time.Hour.Milliseconds(), NotBeforeMillis: time.Now().Add(2 * time.Hour).UnixMilli(),
			HoldTtlMillis: time.Hour.Milliseconds(),
		}},
	}); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, "http://"+s.Addr()+"/metrics")
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-3 }
	for _, c := range []struct {
		series string
		want   float64
	}{
		{"ledgerd_fsm_holds", 1},
		{"ledgerd_fsm_pending_modifications", 0},
		{`ledgerd_fsm_reservations{state="held"}`, 1},
		{`ledgerd_fsm_reservations{state="committed"}`, 1},
		{`ledgerd_fsm_reservations{state="cancelled"}`, 0},
		{`ledgerd_fsm_resource_capacity{resource="cpu"}`, 128},
		{`ledgerd_fsm_resource_capacity{resource="licenses"}`, 50},
		{`ledgerd_fsm_resource_in_use{resource="cpu"}`, 0},
		// The sample books 64 of 128 cores and 2 of 8 GPUs for 2 of the
		// next 24 hours; the hold 10 of 50 licenses for 6 hours.
		{`ledgerd_fsm_resource_utilization_ratio{resource="cpu"}`, 64.0 * 2 / (128 * 24)},
		{`ledgerd_fsm_resource_utilization_ratio{resource="gpu"}`, 2.0 * 2 / (8 * 24)},
		{`ledgerd_fsm_resource_utilization_ratio{resource="licenses"}`, 10.0 * 6 / (50 * 24)},
		{"ledgerd_fsm_metrics_errors", 0},
		{"ledgerd_snapshot_failures_total", 0},
		{"ledgerd_snapshots_by_log_volume_total", 0},
		{"ledgerd_raft_is_leader", 1},
	} {
		got, ok := m[c.series]
		if !ok {
			t.Errorf("/metrics lacks %s", c.series)
			continue
		}
		if !near(got, c.want) {
			t.Errorf("%s = %g, want %g", c.series, got, c.want)
		}
	}
	// Five commands went through the log (three resources, the sample, the
	// hold), plus ticks and the configuration entry.
	if got := m["ledgerd_fsm_applied_index"]; got < 5 {
		t.Errorf("ledgerd_fsm_applied_index = %g, want >= 5", got)
	}
	if got, now := m["ledgerd_fsm_log_time_seconds"], float64(time.Now().Unix()); got < now-60 || got > now+60 {
		t.Errorf("ledgerd_fsm_log_time_seconds = %g, want within a minute of %g", got, now)
	}
}
