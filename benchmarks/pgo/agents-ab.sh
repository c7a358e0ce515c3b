#!/usr/bin/env bash
# agents-ab.sh BINDIR LABEL JSON: one arm of the side-by-side runs of
# README.md: three secured agents (mutual TLS, tokens, raft-wal) from
# BINDIR/ledgerd on loopback, the default mix at CL closed-loop clients
# (default 16,64; 10k live, D each, default 10s; MIX, default "default") from
# BINDIR/loadgen, the
# results appended to JSON with the label LABEL ("arm-pair", for
# summarize.py). AGENT_ARGS adds flags to every agent. Run from the
# repository root; alternate the arms.
set -euo pipefail
bindir=$1 lbl=$2 json=$3 D=${D:-10s}
# shellcheck source=../../scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_scratch pgoab
bench_prebuilt "$bindir"
read -ra more <<<"${AGENT_ARGS:-}"
agent_extra=(-raft-log-store wal ${more[@]+"${more[@]}"})
echo "== $lbl $(uptime)"
agents_start 3 $((17500 + ${PORT_OFFSET:-8000})) on
"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$lbl" \
	-clients "${CL:-16,64}" -mix "${MIX:-default}" -live 10000 -duration "$D" -json "$json" -quiet
for p in "${agent_pid[@]}"; do echo "agent $p: $(grep -h '^VmHWM' "/proc/$p/status" | tr -s ' \t' ' ')"; done
agents_stop
