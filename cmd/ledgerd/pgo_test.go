package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/internal/pprofstr"
	"github.com/ledgerd/ledgerd/planner"
	"github.com/ledgerd/ledgerd/rpc"
)

// TestDefaultPGO checks default.pgo, the CPU profile `go build` optimises
// the binary with (scripts/pgo-profile.sh makes it): it must be a gzipped
// profile that holds samples of the hot paths it was made for, under the
// names those functions have today. A function renamed or moved since the
// profile was taken is no longer optimised by it, without any error from
// the toolchain: this test is what notices, and its message says how to
// take the profile again. It also checks that the profile names no file
// by an absolute path (of the machine that took it).
func TestDefaultPGO(t *testing.T) {
	raw, err := os.ReadFile("default.pgo")
	if err != nil {
		t.Fatalf("read default.pgo: %v (scripts/pgo-profile.sh makes it)", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("default.pgo is not a gzipped profile: %v", err)
	}
	prof, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("default.pgo: %v", err)
	}
	// The string table holds the file names;
	// scripts/pgo-profile.sh makes them relative (pgostrip), so that the
	// repository holds no paths of the machine the profile was taken on.
	strs, err := pprofstr.Strings(prof)
	if err != nil {
		t.Fatalf("default.pgo is not a well-formed profile: %v", err)
	}
	var abs []string
	for _, s := range strs {
		if strings.HasPrefix(s, "/") {
			abs = append(abs, s)
		}
	}
	if len(abs) > 0 {
		t.Errorf("default.pgo holds %d absolute paths, such as %q: take it with scripts/pgo-profile.sh, which makes them relative", len(abs), abs[0])
	}
	// A profile's string table holds every function name it samples, as
	// plain bytes; each of these is on the path the profile is for.
	for _, fn := range []any{
		(*planner.IndexedTimeline).Earliest, // the planner at a million reservations
		(*planner.IndexedTimeline).Book,
		(*planner.Planner).Book,
		(*fsm.FSM).ApplyBatch,     // the state machine under the service's load
		(*raft.Raft).Apply,        // Raft on the leader
		(*rpc.Server).Wrap,        // the API's authentication
		(*planner.Planner).Remove, // the booking table
	} {
		name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
		if !bytes.Contains(prof, []byte(name)) {
			t.Errorf("default.pgo holds no samples of %s: the profile is stale or was taken without that load; run scripts/pgo-profile.sh and commit cmd/ledgerd/default.pgo", name)
		}
	}
}
