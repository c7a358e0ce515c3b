package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestSoleVoter(t *testing.T) {
	v := func(id string) raft.Server { return raft.Server{ID: raft.ServerID(id), Suffrage: raft.Voter} }
	nv := func(id string) raft.Server { return raft.Server{ID: raft.ServerID(id), Suffrage: raft.Nonvoter} }
	for _, tc := range []struct {
		name    string
		servers []raft.Server
		want    bool
	}{
		{"empty", nil, false},
		{"only me", []raft.Server{v("me")}, true},
		{"me and a non-voter", []raft.Server{v("me"), nv("b")}, true},
		{"someone else alone", []raft.Server{v("b")}, false},
		{"me as non-voter", []raft.Server{nv("me"), v("b")}, false},
		{"three voters", []raft.Server{v("me"), v("b"), v("c")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := soleVoter(raft.Configuration{Servers: tc.servers}, "me"); got != tc.want {
				t.Fatalf("soleVoter = %v, want %v", got, tc.want)
			}
		})
	}
}

// A one-server cluster restarted after a graceful shutdown restores the
// shutdown snapshot (no command left to replay); after a crash it replays
// the log. Either way it elects itself long before its 20 s heartbeat
// timeout would have let it campaign.
func TestOneServerRestart(t *testing.T) { forEachLogStore(t, testOneServerRestart) }

func testOneServerRestart(t *testing.T, store func(*Config)) {
	for _, tc := range []struct {
		name     string
		graceful bool
	}{{"graceful", true}, {"crash", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, tn := soloServer(t, chain(func(cfg *Config) { cfg.SnapshotOnShutdown = true }, store))
			var want []string
			for i := range 40 {
				apply(t, tn, fmt.Sprintf("w%d|v%d", i, i))
				want = append(want, fmt.Sprint("v", i))
			}
			lastCmd := tn.node.AppliedIndex()
			if tc.graceful {
				c.shutdown(tn)
			} else {
				c.crash(tn)
			}
			snaps, err := raft.NewFileSnapshotStoreWithLogger(tn.dir, 2, newHclog(slog.New(slog.NewTextHandler(io.Discard, nil)), "snap"))
			if err != nil {
				t.Fatal(err)
			}
			list, err := snaps.List()
			if err != nil {
				t.Fatal(err)
			}
			if tc.graceful && (len(list) != 1 || list[0].Index < lastCmd) {
				t.Fatalf("snapshots after graceful shutdown = %+v, want one at index >= %d", list, lastCmd)
			}
			if !tc.graceful && len(list) != 0 {
				t.Fatalf("snapshots after a crash = %+v, want none", list)
			}

			c.restart(tn)
			waitFor(t, 5*time.Second, "the sole voter to elect itself after a restart", tn.node.IsLeader)
			if got := readEntries(t, tn); !slices.Equal(got, want) {
				t.Fatalf("entries after restart = %q, want %q", got, want)
			}
			restored := tn.node.fsm.restored.Load()
			if tc.graceful && restored < lastCmd {
				t.Fatalf("restored snapshot index %d < last command %d: commands were replayed", restored, lastCmd)
			}
			if !tc.graceful && restored != 0 {
				t.Fatalf("restored snapshot index %d after a crash without snapshots, want 0", restored)
			}
		})
	}
}
