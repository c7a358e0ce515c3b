#!/usr/bin/env bash
# pair-agents.sh OUT PAIRS LOADGEN LEDGERD_A LEDGERD_B
#
# Alternated A/B pairs of two agent binaries under the same load
# generator: for each pair, A then B, each side on three fresh secured
# agents (TLS on, wal log store, empty data directories) running the
# default mix at 16 then 64 clients, then on fresh agents the reserve mix
# at 64 clients; 10k live, 10 s cells. Run from the repository root.
# DURATION (default 10s) is the length of a cell and CELLS (default
# "default:16,64 reserve:64") the mix and clients of each side's cells,
# each on fresh agents.
#
#   pair-agents.sh out 5 bin/loadgen bin/ledgerd-main bin/ledgerd-new
#   DURATION=60s CELLS=reserve:64 pair-agents.sh out 2 bin/loadgen bin/ledgerd-a bin/ledgerd-b
set -euo pipefail
out=$1 pairs=$2 loadgen=$3 lda=$4 ldb=$5
duration=${DURATION:-10s}
read -ra cells <<<"${CELLS:-default:16,64 reserve:64}"
mkdir -p "$out"
# shellcheck source=../../../../scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_scratch ab
cp "$lda" "$work/ledgerd"
bench_pki >/dev/null
agent_extra=(-raft-log-store wal)
cell() { # label ledgerd mix clients
	cp "$2" "$work/ledgerd"
	agents_start 3 $((17500 + 4200)) on
	echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg) $1 $3 $4" >>"$out/order.log"
	"$loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$1" \
		-mix "$3" -clients "$4" -live 10000 -duration "$duration" -json "$out/res.jsonl" -quiet >>"$out/$1.txt" 2>&1
	agents_stop
	rm -rf "$work"/data-*
}
for ((p = 1; p <= pairs; p++)); do
	for side in A B; do
		bin=$lda
		[[ $side == B ]] && bin=$ldb
		for c in "${cells[@]}"; do
			cell "$side-$p" "$bin" "${c%%:*}" "${c#*:}"
		done
	done
done
echo "$(date +%T) done" >>"$out/order.log"
