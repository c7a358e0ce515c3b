package recovery

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/agent/pki"
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
	sec := newSecurity(t)
	// The node is reopened on the same (reserved) ports below; only this
	// first start may move to fresh ones if an unrelated program took one.
	testnet.Start(t, 3, func(a []string) error {
		c = Config{
			DataDir: filepath.Join(t.TempDir(), "data"), NodeName: "n1",
			RaftAddr: a[0], GossipAddr: a[1], HTTPAddr: a[2],
			Live: 300, Workers: 8, Seed: 7,
			UnitResources: 2, UnitsEach: 16, UnitEvery: 4, Series: 2,
		}
		sec.apply(&c)
		var err error
		res, err = Prefill(ctx, c)
		return err
	})
	if res.Accepted < c.Live || res.Resources != 10 || res.AppliedIndex == 0 || res.SeriesBooked == 0 || res.ExtraKeys != 2+3+2 {
		t.Fatalf("result %+v, want >= %d accepted on 8+2 resources, series booked, 7 extra keys", res, c.Live)
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
	if got, want := st.ByState[fsmv1.Reservation_STATE_COMMITTED], res.Accepted+res.SeriesBooked; got != want || st.Bookings != want {
		t.Errorf("reopened: %d committed, %d bookings; want %d of each", got, st.Bookings, want)
	}
	if got := len(f.Limits()); got != 3 {
		t.Errorf("reopened: %d limit entries, want 3", got)
	}
	if want := res.Accepted + res.Rejected + 8 + res.ExtraKeys; st.IdempotencyKeys != want {
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

// security is the material a secured prefill needs, made with agent/pki
// as `ledgerd tls` makes it.
type security struct{ cert, key, ca, tokens string }

func newSecurity(t *testing.T) security {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.NewCA("prefill test CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue(pki.Request{Server: true, Name: "n1", Now: time.Now(), ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := security{cert: filepath.Join(dir, "n1.pem"), key: filepath.Join(dir, "n1-key.pem"), ca: filepath.Join(dir, "ca.pem"), tokens: filepath.Join(dir, "tokens.json")}
	for path, b := range map[string][]byte{s.cert: cert, s.key: key, s.ca: ca.CertPEM,
		s.tokens: []byte(`{"tokens":[{"token":"prefill-test-token","tenant":"ops","operator":true}]}`)} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s security) apply(c *Config) {
	c.TLSCertFile, c.TLSKeyFile, c.TLSCAFile, c.TokensFile = s.cert, s.key, s.ca, s.tokens
	c.GossipKey = "cHJlZmlsbC10ZXN0LW9ubHktZ29zc2lwLWtleS0zMmI="
}

// TestPrefillRefusesAnUnsecuredNode: without the security settings the
// prefill refuses, as the agent does, naming the way out.
func TestPrefillRefusesAnUnsecuredNode(t *testing.T) {
	_, err := Prefill(context.Background(), Config{DataDir: t.TempDir(), RaftAddr: "127.0.0.1:1", GossipAddr: "127.0.0.1:2", HTTPAddr: "127.0.0.1:3", Live: 1})
	if err == nil || !strings.Contains(err.Error(), "tls_cert_file") || !strings.Contains(err.Error(), "-insecure") {
		t.Fatalf("err = %v, want the agent's refusal naming tls_cert_file and -insecure", err)
	}
}
