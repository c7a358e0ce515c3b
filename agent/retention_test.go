package agent

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/testwait"
)

// TestRetentionConfig: ended_retention and ended_max reach the retention
// the leader proposes, and values it could not or should not propose are
// refused naming the key.
func TestRetentionConfig(t *testing.T) {
	day := 24 * time.Hour.Milliseconds()
	keys := int64(fsm.DefaultIdempotencyMaxKeys)
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       fsm.Retention
		err        string
	}{
		{"defaults", `{"data_dir":"d"}`, nil, fsm.Retention{Millis: day, IdempotencyMaxKeys: keys}, ""},
		{"file", `{"data_dir":"d","ended_retention":"2h","ended_max":5000,"idempotency_max_keys":1000}`, nil, fsm.Retention{Millis: 2 * 3_600_000, MaxEnded: 5000, IdempotencyMaxKeys: 1000}, ""},
		{"env", `{"data_dir":"d"}`, map[string]string{"LEDGERD_ENDED_RETENTION": "90m", "LEDGERD_ENDED_MAX": "100"}, fsm.Retention{Millis: 90 * 60_000, MaxEnded: 100, IdempotencyMaxKeys: keys}, ""},
		{"huge key cap", `{"data_dir":"d","idempotency_max_keys":5000000000}`, nil, fsm.Retention{}, "idempotency_max_keys: must lie between 1 and 2147483647"},
		{"short retention", `{"data_dir":"d","ended_retention":"30s"}`, nil, fsm.Retention{}, "ended_retention: must be 0 (24h) or at least 1m0s"},
		{"negative retention", `{"data_dir":"d","ended_retention":"-1h"}`, nil, fsm.Retention{}, "ended_retention"},
		{"long retention", `{"data_dir":"d","ended_retention":"87601h"}`, nil, fsm.Retention{}, "ended_retention: must lie between"},
		{"small limit", `{"data_dir":"d","ended_max":5}`, nil, fsm.Retention{}, "ended_max: must be 0 (no limit) or at least 100, got 5"},
		{"negative limit", `{"data_dir":"d","ended_max":-1}`, nil, fsm.Retention{}, "ended_max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := ParseArgs([]string{"-insecure", "-config", writeConfig(t, tc.file)}, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.retention(); got != tc.want {
				t.Fatalf("retention = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAgentPutsRetentionIntoForce runs a dev agent with ended_max and
// ended_retention: its leader tick writes them into the log, /metrics
// shows them, and past the limit the reservations that ended first are
// dropped first.
func TestAgentPutsRetentionIntoForce(t *testing.T) {
	s, _ := startAgent(t, "-ended-max", "100", "-ended-retention", "2h")
	// The leader writes its cap on idempotency keys (the default) with
	// the retention.
	want := fsm.Retention{Millis: 2 * 3_600_000, MaxEnded: 100, IdempotencyMaxKeys: fsm.DefaultIdempotencyMaxKeys, Set: true, IdempotencyMaxKeysSet: true}
	testwait.Until(t, 30*time.Second, "the configured retention in force", func() bool { return s.fsm.Retention() == want })

	ctx := context.Background()
	if _, err := s.applyDev(ctx, createResource("retained", 1000)); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Hour).UnixMilli()
	const n = 110
	for i := range n {
		id := fmt.Sprintf("ended-%03d", i)
		if _, err := s.applyDev(ctx, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Owner: "default",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: id,
				Parts: []*fsmv1.Part{{Resource: "retained", Amount: 1}}, DurationMillis: 60_000, StartMillis: &start}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.applyDev(ctx, &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL, Owner: "default",
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}}); err != nil {
			t.Fatal(err)
		}
	}
	byState, got := s.fsm.Stats().ByState, 0
	for _, st := range []fsmv1.Reservation_State{fsmv1.Reservation_STATE_COMPLETED, fsmv1.Reservation_STATE_ABORTED,
		fsmv1.Reservation_STATE_EXPIRED, fsmv1.Reservation_STATE_CANCELLED, fsmv1.Reservation_STATE_DENIED} {
		got += byState[st]
	}
	if got != 100 {
		t.Fatalf("%d ended reservations kept, want the limit of 100", got)
	}
	for i := range n {
		id := fmt.Sprintf("ended-%03d", i)
		_, kept := s.fsm.Get(id)
		if kept != (i >= n-100) {
			t.Fatalf("%s (cancelled %d of %d) kept: %v; want only the last 100 kept", id, i+1, n, kept)
		}
	}
	m := scrape(t, "http://"+s.Addr()+"/metrics")
	if m["ledgerd_fsm_ended_max"] != 100 || m["ledgerd_fsm_ended_retention_seconds"] != 7200 || m["ledgerd_fsm_idempotency_max_keys"] != fsm.DefaultIdempotencyMaxKeys {
		t.Fatalf("metrics: ended_max %v, ended_retention_seconds %v, idempotency_max_keys %v",
			m["ledgerd_fsm_ended_max"], m["ledgerd_fsm_ended_retention_seconds"], m["ledgerd_fsm_idempotency_max_keys"])
	}
	if m[`ledgerd_fsm_reservations{state="cancelled"}`] != 100 {
		t.Fatalf("metrics: %v cancelled reservations, want 100", m[`ledgerd_fsm_reservations{state="cancelled"}`])
	}
}
