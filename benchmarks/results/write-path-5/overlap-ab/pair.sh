#!/usr/bin/env bash
# pair.sh OUT PAIRS LEDGERD LOADGEN_A FLAGS_A LOADGEN_B FLAGS_B
#
# Alternated A/B pairs of the load generator's client against the same
# agent binary: for each pair, A then B, each side on three fresh secured
# agents (TLS on, wal log store, empty data directories) running the
# default mix at 16 then 64 clients, then on fresh agents the reserve mix
# at 64 clients; 10k live, 10 s cells. Run from the repository root.
#
#   pair.sh out 5 bin/ledgerd bin/loadgen-main "" bin/loadgen-new "-batch-inflight 2"
set -euo pipefail
out=$1 pairs=$2 ledgerd=$3 lga=$4 fla=$5 lgb=$6 flb=$7
mkdir -p "$out"
# shellcheck source=../../../../scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_scratch ab
cp "$ledgerd" "$work/ledgerd"
bench_pki >/dev/null
agent_extra=(-raft-log-store wal)
cell() { # label loadgen flags mix clients
	agents_start 3 $((17500 + 4200)) on
	echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg) $1 $4 $5" >>"$out/order.log"
	# shellcheck disable=SC2086 # $3 holds several flags
	"$2" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$1" $3 \
		-mix "$4" -clients "$5" -live 10000 -duration 10s -json "$out/res.jsonl" -quiet >>"$out/$1.txt" 2>&1
	agents_stop
	rm -rf "$work"/data-*
}
for ((p = 1; p <= pairs; p++)); do
	cell "A-$p" "$lga" "$fla" default 16,64
	cell "A-$p" "$lga" "$fla" reserve 64
	cell "B-$p" "$lgb" "$flb" default 16,64
	cell "B-$p" "$lgb" "$flb" reserve 64
done
echo "$(date +%T) done" >>"$out/order.log"
