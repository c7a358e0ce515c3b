#!/usr/bin/env bash
# The Hold path before and after a change, side by side in one run:
# BenchmarkHoldPath (ledger/replicated/bench_test.go) on this tree and the
# same benchmark on BASE (default ee65182, the commit before the ledger
# and agent packages existed, where the ledger lived in rpc as FSMLedger),
# alternated COUNT times, then compared with benchstat.
#
#   scripts/bench-holdpath.sh                       # BASE=ee65182 COUNT=6
#   BASE=<rev> COUNT=10 BENCHTIME=5000x OUT=dir scripts/bench-holdpath.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-ee65182}
COUNT=${COUNT:-6}
BENCHTIME=${BENCHTIME:-3000x}
OUT=${OUT:-benchmarks/holdpath}
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/base" "$BASE" >/dev/null

# The same benchmark, written against the earlier layout (rpc.FSMLedger
# over rpc/rpctest's local log or a one-node cluster). Only the names of
# the packages differ from ledger/replicated/bench_test.go.
if [ -d "$work/base/rpc/rpctest" ]; then
cat > "$work/base/rpc/zz_holdpath_bench_test.go" <<'GO'
package rpc_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/rpctest"
)

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkHoldPath(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"local", "raft"} {
		b.Run("log="+kind, func(b *testing.B) {
			var l rpc.Ledger
			if kind == "local" {
				l = rpctest.NewSite(b, rpctest.Options{}).Ledger
			} else {
				s := rpctest.NewCluster(b, 1, rpc.Options{}).Servers[0]
				l = &rpc.FSMLedger{R: s.Node, FSM: s.FSM}
			}
			w := rpc.Write{Tenant: "bench", Operator: true, IdempotencyKey: "res"}
			if _, err := l.CreateResource(ctx, w, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40}); err != nil {
				b.Fatal(err)
			}
			start := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			i := 0
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				i++
				w.IdempotencyKey = fmt.Sprintf("k%d", i)
				_, _, err := l.Hold(ctx, rpc.HoldArgs{Write: w, Commit: true, Labels: map[string]string{"job": "bench"},
					Shape: rpc.Shape{Parts: []rpc.Part{{Resource: "cpu", Amount: 1}}, Duration: 3_600_000,
						NotBefore: start + int64(i%997)*60_000, Deadline: rpc.NoDeadline}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
GO
  basepkg=./rpc/
else
  basepkg=./ledger/replicated/
fi

before="$OUT/before.txt" after="$OUT/after.txt"
: >"$before"; : >"$after"
(cd "$work/base" && go test -c -tags hashicorpmetrics -o "$work/before.test" "$basepkg")
go test -c -tags hashicorpmetrics -o "$work/after.test" ./ledger/replicated/
for i in $(seq "$COUNT"); do
  echo "round $i/$COUNT (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  (cd "$work/base/${basepkg#./}" && "$work/before.test" -test.run '^$' -test.bench HoldPath -test.benchtime "$BENCHTIME") | grep -E '^(Benchmark|goos|goarch|cpu)' >>"$before"
  (cd ledger/replicated && "$work/after.test" -test.run '^$' -test.bench HoldPath -test.benchtime "$BENCHTIME") | grep -E '^(Benchmark|goos|goarch|cpu)' >>"$after"
done
go run "$BENCHSTAT" "$before" "$after" | tee "$OUT/benchstat.txt"
