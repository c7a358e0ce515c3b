#!/usr/bin/env bash
# Sustained load on one cluster: ROUNDS consecutive load-generator runs of
# DURATION each (64 clients, reserve mix, 10k live, TLS on, wal log store)
# against the same three secured agents, with the agents' resident sets and
# their snapshots counted after every round. The service benchmark's cells
# run for seconds on young agents; this shows what a minute or more of the
# same load does to them.
#
#   benchmarks/results/sustained-64/sustained.sh OUTDIR
#   AGENT_EXTRA="-restart-target 0" benchmarks/results/sustained-64/sustained.sh OUTDIR
#
# Run from the root of the tree. PREBUILT: a directory with ledgerd and
# loadgen built with -tags hashicorpmetrics (else they are built here).
# The agents log at INFO; their logs are copied to OUTDIR. HEAP=1 also
# saves every agent's heap profile after the last round (agent-nI.heap;
# it turns on -pprof).
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
ROUNDS=${ROUNDS:-8}
DURATION=${DURATION:-8s}
work=$(mktemp -d -t ledgerd-sustained-XXXXXX)
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
cleanup() {
	agents_stop || true
	cp "$work"/agent-*.log "$out/" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
bench_binaries
base=$((17900 + ${PORT_OFFSET:-0}))
# shellcheck disable=SC2206 # AGENT_EXTRA is a list of flags
agent_extra=(-raft-log-store wal -log-level info ${AGENT_EXTRA:-})
[[ -n "${HEAP:-}" ]] && agent_extra+=(-pprof true)
agents_start 3 "$base" on
echo "agents: ${agent_extra[*]}" | tee "$out/run.txt"
for r in $(seq 1 "$ROUNDS"); do
	echo "== round $r load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.txt"
	"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "round $r" \
		-mix reserve -clients 64 -live 10000 -duration "$DURATION" >>"$out/run.txt" 2>&1
	line="after round $r: rss MiB"
	for i in 1 2 3; do line="$line n$i $(($(rss_kib "${agent_pid[i]}") / 1024))"; done
	line="$line; snapshots by log volume"
	for i in 1 2 3; do line="$line n$i $(grep -c 'snapshot by log volume taken' "$work/agent-$base-$i.log" || true)"; done
	echo "$line" >>"$out/run.txt"
done
if [[ -n "${HEAP:-}" ]]; then
	for i in 1 2 3; do
		api_curl -fsS -H "Authorization: Bearer $token" -o "$out/agent-n$i.heap" "https://127.0.0.1:$((base + i))/debug/pprof/heap?gc=1"
	done
fi
