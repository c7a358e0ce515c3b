#!/usr/bin/env bash
# Diagnostic, not a configuration: what the leader's log fsync costs ledgerd.
# The leader's data dir on tmpfs (its fsync nearly free, and nothing it
# writes durable), the followers' on disk, against all three on disk; n1 is
# made the leader in both (operator raft transfer-leader until it leads).
# Then one client (reserve mix) and 16 clients (default mix), 8 s each.
#
#   VARIANT=disk|leader-tmpfs [PREBUILT=DIR] benchmarks/results/leader-fsync/leaderfs.sh OUTDIR
#
# Run from the root of the tree. PREBUILT: a directory with ledgerd and
# loadgen built with -tags hashicorpmetrics (else they are built here).
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
V=${VARIANT:-disk}
case $V in
disk | leader-tmpfs) ;;
*)
	echo "VARIANT=$V: want disk or leader-tmpfs" >&2
	exit 2
	;;
esac
work=$(mktemp -d -t ledgerd-lfs-XXXXXX)
shm=$(mktemp -d -p /dev/shm ledgerd-lfs-XXXXXX)
source scripts/bench-lib.sh
cleanup() { agents_stop || true; rm -rf "$work" "$shm"; }
trap cleanup EXIT
bench_binaries
base=17900
[[ $V == leader-tmpfs ]] && ln -s "$shm" "$work/data-$base-1"
agent_extra=(-raft-log-store wal)
agents_start 3 "$base" on
op() { "$work/ledgerd" operator raft "$@" -addr "127.0.0.1:$((base + 1))" -ca-file "$ca_file" -cert-file "$LEDGERD_CLIENT_CERT" -key-file "$LEDGERD_CLIENT_KEY" -token "$token"; }
# n1's Raft address is the one that must lead (its data dir is the one on
# tmpfs in the leader-tmpfs variant).
want="127.0.0.1:$((base + 11))"
for try in $(seq 1 10); do
	l=$(op list-peers -json | python3 -c 'import json,sys; print([m["raft_address"] for m in json.load(sys.stdin)["members"] if m["role"]=="ROLE_LEADER"][0])')
	[[ $l == "$want" ]] && break
	op transfer-leader >/dev/null
	sleep 1
done
if [[ $l != "$want" ]]; then
	echo "n1 ($want) did not become the leader after $try tries (leader: $l); nothing measured" >&2
	exit 1
fi
echo "variant $V leader $l (try $try)" | tee "$out/run.txt"
"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "3 nodes $V" \
	-mix reserve -clients 1 -live 10000 -duration 8s -json "$out/r.jsonl" >>"$out/run.txt" 2>&1
"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "3 nodes $V" \
	-mix default -clients 16 -live 10000 -duration 8s -json "$out/r.jsonl" >>"$out/run.txt" 2>&1
