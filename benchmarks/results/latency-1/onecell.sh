#!/usr/bin/env bash
# onecell.sh BINDIR LABEL JSON: the one-client cells of the latency bars,
# TLS on, 10k live, each on fresh agents: raw raft's reserve mix, ledgerd's
# default mix and ledgerd's reserve mix (what scripts/bench-service.sh runs,
# without its 64-client reserve-mix cell). BINDIR holds a `ledgerd` and a
# `loadgen` built with -tags hashicorpmetrics; D sets the cell length
# (default 6s), LGF extra loadgen flags for the ledgerd cells (e.g. -http1).
# Run from the repository root.
set -euo pipefail
bindir=$1 lbl=$2 json=$3 D=${D:-6s}
# shellcheck source=../../../scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_scratch onecell
bench_prebuilt "$bindir"
common=(-live 10000 -duration "$D" -json "$json" -quiet)
read -ra lgf <<<"${LGF:-}"
echo "== $lbl rawraft $(uptime)"
"$work/loadgen" -system rawraft -nodes 3 -mix reserve -log-store wal -label "$lbl" -ca-file "$ca_file" \
	-cert-file "$work/pki/server-n1.pem" -key-file "$work/pki/server-n1-key.pem" -clients 1 "${common[@]}"
agent_extra=(-raft-log-store wal)
echo "== $lbl default $(uptime)"
agents_start 3 $((17500 + ${PORT_OFFSET:-0})) on
"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$lbl" ${lgf[@]+"${lgf[@]}"} -clients 1 "${common[@]}"
agents_stop
echo "== $lbl reserve $(uptime)"
agents_start 3 $((17600 + ${PORT_OFFSET:-0})) on
"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$lbl" ${lgf[@]+"${lgf[@]}"} -mix reserve -clients 1 "${common[@]}"
agents_stop
