#!/usr/bin/env bash
# Regenerates cmd/ledgerd/default.pgo, the CPU profile the Go toolchain uses
# to optimise the ledgerd binary (profile-guided optimisation: `go build`
# of a main package picks up the default.pgo beside it).
#
#   scripts/pgo-profile.sh            # about 2 minutes on 2 cores
#
# What the profile holds, merged with `go tool pprof -proto`:
#   - the three agents of a secured 3-node cluster (mutual TLS, tokens) under
#     the service benchmark's default mix, 16 and then 64 closed-loop
#     clients, 10k live reservations: CPU_SECONDS of each agent per client
#     count (the write path: API, Raft, the state machine);
#   - the planner at a million live reservations (BenchmarkAdmissionChurn
#     of the planner package: Find, Book and Release of fresh requests): the
#     admission cost of a large site, which the agents' 10k-reservation load
#     barely reaches;
#   - the state machine applying 100k reservations' commands and restoring
#     their snapshot ten times (BenchmarkRestore of the fsm package): what a
#     restarting node does before it serves.
# The binaries are built without a profile (-pgo=off), so the profile does
# not depend on the one it replaces.
#
# Variables: OUT (default cmd/ledgerd/default.pgo), CPU_SECONDS (default 15),
# PORT_OFFSET (default 0; added to the loopback ports 24501-24623).
#
# Measured effect and the commands that measured it: benchmarks/pgo/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cmd/ledgerd/default.pgo}
secs=${CPU_SECONDS:-15}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_scratch pgo

echo "pgo-profile: building ledgerd and loadgen without a profile"
go build -pgo=off -tags hashicorpmetrics -o "$work/ledgerd" ./cmd/ledgerd
go build -pgo=off -tags hashicorpmetrics -o "$work/loadgen" ./benchmarks/service/cmd/loadgen
go test -c -pgo=off -o "$work/planner.test" ./planner/
go test -c -pgo=off -o "$work/fsm.test" ./fsm/
bench_pki >/dev/null

agent_extra=(-raft-log-store wal -pprof=true)
base=$((24500 + ${PORT_OFFSET:-0}))
profiles=()
for clients in 16 64; do
	echo "pgo-profile: 3 agents, default mix, $clients clients, ${secs}s of CPU profile per agent"
	agents_start 3 "$base" on
	# The profiles start with the load generator's measured phase, whose
	# progress lines ("run: ...", one a second) follow the prefill's.
	"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -clients "$clients" -live 10000 \
		-duration "$((secs + 5))s" >"$work/loadgen-$clients.log" 2>&1 &
	lg=$!
	until grep -q '^run: ' "$work/loadgen-$clients.log"; do
		kill -0 "$lg" 2>/dev/null || { cat "$work/loadgen-$clients.log" >&2; exit 1; }
		sleep 0.2
	done
	curls=()
	for i in 1 2 3; do
		api_curl -fs "https://127.0.0.1:$((base + i))/debug/pprof/profile?seconds=$secs" -o "$work/agent-$clients-$i.pb.gz" &
		curls+=($!)
	done
	# (A bare wait would wait for the agents too.)
	for p in "${curls[@]}"; do wait "$p"; done
	wait "$lg" || { cat "$work/loadgen-$clients.log" >&2; exit 1; }
	profiles+=("$work"/agent-"$clients"-{1,2,3}.pb.gz)
	agents_stop
	base=$((base + 100))
done

echo "pgo-profile: planner admissions at a million live reservations"
"$work/planner.test" -test.run '^$' -test.bench '^BenchmarkAdmissionChurn$/^live=1M$' \
	-test.benchtime 10s -test.cpuprofile "$work/planner.pb.gz" >"$work/planner.log"
profiles+=("$work/planner.pb.gz")

echo "pgo-profile: the state machine applying and restoring 100k reservations"
"$work/fsm.test" -test.run '^$' -test.bench '^BenchmarkRestore$/^live=100000$' -test.benchtime 10x \
	-test.cpuprofile "$work/restore.pb.gz" >"$work/restore.log"
profiles+=("$work/restore.pb.gz")

go tool pprof -proto "${profiles[@]}" >"$work/merged.pgo" 2>/dev/null
# The profiles name source files and the profiled binaries by their paths
# on this machine; the committed profile holds them relative (the build
# uses function names and lines only: the same binary either way).
go run ./benchmarks/pgo/cmd/pgostrip -trim "$PWD/,$(go env GOROOT)/src/,$(go env GOMODCACHE)/" \
	"$work/merged.pgo" "$work/stripped.pgo"
mv "$work/stripped.pgo" "$out"
echo "pgo-profile: wrote $out ($(wc -c <"$out") bytes) from ${#profiles[@]} profiles"
