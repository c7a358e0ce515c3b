#!/usr/bin/env bash
# Where a ledgerd node's restart time goes: fill a one-node agent with LIVE
# reservations (one-phase reserves through the API), stop it with SIGTERM,
# restart it on the same data directory with debug logging, and print the
# time to /readyz with the log lines that mark each phase (follower state,
# election, leader, node ready with the applied index) and the data dir
# (whether a snapshot existed).
#
#   LIVE=50000 scripts/bench-recovery.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LIVE=${LIVE:-50000}
work=$(mktemp -d -t ledgerd-recovery-XXXXXX)
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
trap 'agents_stop; rm -rf "$work"' EXIT
bench_build
agents_start 1 18200
"$work/loadgen" -system ledgerd -addrs "$addrs" -mix reserve -clients 64 -live "$LIVE" \
	-resources $((LIVE / 100)) -duration 2s -quiet | tail -3
echo "RSS loaded: $(rss_kib "${agent_pid[1]}") KiB"
agents_stop
data="$work/data-18200-1"
ls -la "$data" "$data/snapshots"
t0=$(date +%s.%N)
"$work/ledgerd" agent -node-name n1 -data-dir "$data" -http-addr 127.0.0.1:18201 -raft-addr 127.0.0.1:18211 \
	-gossip-addr 127.0.0.1:18221 -bootstrap-expect 1 -log-level debug >"$work/restart.log" 2>&1 &
agent_pid=([1]=$!)
until curl -fs http://127.0.0.1:18201/readyz >/dev/null; do sleep 0.05; done
t1=$(date +%s.%N)
echo "started $(date -u -d "@$t0" +%H:%M:%S.%N | cut -c1-12), ready after $(echo "$t1 - $t0" | bc) s; RSS $(rss_kib "${agent_pid[1]}") KiB"
grep -E "initial configuration|restor|snapshot|entering|election|became leader|node ready" "$work/restart.log" | cut -c1-160
