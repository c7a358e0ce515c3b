package recovery

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/testnet"
)

// A small prefill, then the data directory opened the way the agent opens
// it: every accepted reservation is there, committed, from the shutdown
// snapshot; a second prefill into it is refused.
func TestPrefillSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var c Config
	var res Result
	// The node is reopened on the same (reserved) ports below; only this
	// first start may move to fresh ones if an unrelated program took one.
	testnet.Start(t, 3, func(a []string) error {
		c = Config{
			DataDir: filepath.Join(t.TempDir(), "data"), NodeName: "n1",
			RaftAddr: a[0], GossipAddr: a[1], HTTPAddr: a[2],
			Live: 300, Workers: 8, Seed: 7,
		}
		var err error
		res, err = Prefill(ctx, c)
		return err
	})
	if res.Accepted < c.Live || res.Resources != 8 || res.AppliedIndex == 0 {
		t.Fatalf("result %+v, want >= %d accepted on 8 resources", res, c.Live)
	}

	snaps, err := raft.NewFileSnapshotStore(c.DataDir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 || list[0].Index < res.AppliedIndex {
		t.Fatalf("snapshots %+v (%v), want one at index >= %d", list, err, res.AppliedIndex)
	}

	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.New(cluster.Config{
		NodeName: c.NodeName, DataDir: c.DataDir, RaftBind: c.RaftAddr, GossipBind: c.GossipAddr,
		RPCAdvertise: c.HTTPAddr, BootstrapExpect: 1, Stamp: fsm.Stamp,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, f)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !node.Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("reopened node not ready within 20s")
		}
	}
	st := f.Stats()
	if got := st.ByState[fsmv1.Reservation_STATE_COMMITTED]; got != res.Accepted || st.Bookings != res.Accepted {
		t.Errorf("reopened: %d committed, %d bookings; want %d of each", got, st.Bookings, res.Accepted)
	}
	if want := res.Accepted + res.Rejected + res.Resources; st.IdempotencyKeys != want {
		t.Errorf("reopened: %d idempotency keys, want %d (one per logged request)", st.IdempotencyKeys, want)
	}
	if err := node.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	c.Live = 10
	if _, err := Prefill(ctx, c); err == nil || !strings.Contains(err.Error(), "already holds a ledger") {
		t.Fatalf("second prefill into the same dir: %v, want a refusal", err)
	}
}
