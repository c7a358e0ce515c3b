#!/usr/bin/env bash
# CPU profiles of the three agents of a secured 3-node cluster under the
# 64-client reserve mix: the load generator runs for DURATION, and once its
# prefill is done (after WAIT seconds) a SECONDS-long CPU profile is taken
# from every agent's /debug/pprof/profile at the same time. Which agent led
# shows in its profile (raft's leaderLoop).
#
#   benchmarks/results/cpu-64/profile-agents.sh OUTDIR
#   CLIENTS=16 MIX=default benchmarks/results/cpu-64/profile-agents.sh OUTDIR   # another load
#
# Run from the root of the tree to profile; PORT_OFFSET moves the ports.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
DURATION=${DURATION:-15s}
WAIT=${WAIT:-7}
SECONDS_=${PROFILE_SECONDS:-5}
PORT_OFFSET=${PORT_OFFSET:-0}
MIX=${MIX:-reserve}
work=$(mktemp -d -t ledgerd-prof-XXXXXX)
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
cleanup() {
	agents_stop || true
	rm -rf "$work"
}
trap cleanup EXIT
bench_build
base=$((17900 + PORT_OFFSET))
agent_extra=(-raft-log-store wal -pprof true)
agents_start 3 "$base" on
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/run.txt"
"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "3 nodes" \
	-mix "$MIX" -clients "${CLIENTS:-64}" -live 10000 -duration "$DURATION" >>"$out/run.txt" 2>&1 &
gen=$!
sleep "$WAIT"
curls=()
for i in 1 2 3; do
	api_curl -fsS -H "Authorization: Bearer $token" -o "$out/agent-n$i.pprof" \
		"https://127.0.0.1:$((base + i))/debug/pprof/profile?seconds=$SECONDS_" &
	curls+=($!)
done
for p in "${curls[@]}"; do wait "$p"; done
wait "$gen"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.txt"
# The binary, to read the profiles with (not committed).
cp "$work/ledgerd" "$out/ledgerd.bin"
