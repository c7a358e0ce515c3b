#!/usr/bin/env bash
# pair-long.sh OUT PAIRS LOADGEN LEDGERD_A LEDGERD_B
#
# pair-agents.sh (benchmarks/results/write-path-5/barrier-ab/) with one
# cell per side: the reserve mix at 64 clients for 60 s on three fresh
# secured agents (TLS on, wal log store), 10k live; long enough for raft's
# own snapshot check (every 10-20 s) to run on both sides. LEDGERD_A and
# LEDGERD_B may be wrappers that exec one binary with different LEDGERD_*
# settings. Run from the repository root.
#
#   pair-long.sh out 2 bin/loadgen bin/ledgerd-off bin/ledgerd-16mib
set -euo pipefail
out=$1 pairs=$2 loadgen=$3 lda=$4 ldb=$5
mkdir -p "$out"
work=$(mktemp -d -t ledgerd-ab-XXXXXX)
# shellcheck source=../../../../scripts/bench-lib.sh
source scripts/bench-lib.sh
trap 'agents_stop || true; rm -rf "$work"' EXIT
cp "$lda" "$work/ledgerd"
bench_pki >/dev/null
agent_extra=(-raft-log-store wal)
cell() { # label ledgerd mix clients
	cp "$2" "$work/ledgerd"
	agents_start 3 $((17500 + 4200)) on
	echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg) $1 $3 $4" >>"$out/order.log"
	"$loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$1" \
		-mix "$3" -clients "$4" -live 10000 -duration 60s -json "$out/res.jsonl" -quiet >>"$out/$1.txt" 2>&1
	agents_stop
	rm -rf "$work"/data-*
}
for ((p = 1; p <= pairs; p++)); do
	cell "A-$p" "$lda" reserve 64
	cell "B-$p" "$ldb" reserve 64
done
echo "$(date +%T) done" >>"$out/order.log"
