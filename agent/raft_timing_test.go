package agent

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRaftTimingSettings: the Raft timeouts and the forward deadline can be
// set, reach the cluster configuration, and values Raft would refuse are
// refused with an error naming the key.
func TestRaftTimingSettings(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // substring; "" means valid
		hb, el  time.Duration
		lease   time.Duration
		forward time.Duration
	}{
		{args: nil},
		{args: []string{"-raft-heartbeat-timeout", "500ms", "-raft-election-timeout", "500ms", "-raft-leader-lease-timeout", "250ms", "-forward-timeout", "4s"},
			hb: 500 * time.Millisecond, el: 500 * time.Millisecond, lease: 250 * time.Millisecond, forward: 4 * time.Second},
		{args: []string{"-raft-heartbeat-timeout", "300ms"}, wantErr: "raft_leader_lease_timeout: must not exceed raft_heartbeat_timeout"},
		{args: []string{"-raft-heartbeat-timeout", "2s"}, wantErr: "raft_election_timeout: must be at least raft_heartbeat_timeout"},
		{args: []string{"-raft-election-timeout", "1ms"}, wantErr: "raft_election_timeout: must be at least 5ms"},
		{args: []string{"-forward-timeout", "-1s"}, wantErr: "forward_timeout: must be 0 (the default, 10s) or at least 100ms, got -1s"},
		{args: []string{"-raft-heartbeat-timeout", "soon"}, wantErr: "raft-heartbeat-timeout"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg, _, err := ParseArgs(append([]string{"-data-dir", t.TempDir(), "-insecure"}, tc.args...), func(string) string { return "" }, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg.HTTPAdvertise = "127.0.0.1:7420"
			a := &Agent{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			c, err := a.clusterConfig()
			if err != nil {
				t.Fatal(err)
			}
			if c.HeartbeatTimeout != tc.hb || c.ElectionTimeout != tc.el || c.LeaderLeaseTimeout != tc.lease || c.ForwardTimeout != tc.forward {
				t.Fatalf("cluster config heartbeat %s election %s lease %s forward %s, want %s %s %s %s",
					c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout, c.ForwardTimeout, tc.hb, tc.el, tc.lease, tc.forward)
			}
		})
	}
}
