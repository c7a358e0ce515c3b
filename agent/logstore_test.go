package agent

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/cluster"
)

// An agent refuses to start on a data dir that holds the other log store,
// and says which key to look at.
func TestAgentRefusesOtherLogStore(t *testing.T) {
	dir := t.TempDir()
	start := func(store string) (*Agent, error) {
		cfg, flags, err := ParseArgs([]string{"-dev", "-data-dir", dir, "-http-addr", "127.0.0.1:0", "-raft-log-store", store},
			func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return New(cfg, Options{Dev: flags.Dev, Logger: cfg.NewLogger(io.Discard)})
	}
	a, err := start(cluster.LogStoreWAL)
	if err != nil {
		t.Fatalf("first start with wal: %v", err)
	}
	a.Close()
	_, err = start(cluster.LogStoreBoltDB)
	if !errors.Is(err, cluster.ErrLogStoreMismatch) || !strings.Contains(err.Error(), "raft_log_store") {
		t.Fatalf("start with boltdb on a wal data dir: %v; want ErrLogStoreMismatch naming raft_log_store", err)
	}
	a, err = start(cluster.LogStoreWAL)
	if err != nil {
		t.Fatalf("restart with wal: %v", err)
	}
	a.Close()
}
