#!/usr/bin/env bash
# Multi-host rehearsal: three ledgerd agents on one machine as if on three
# hosts. Each binds its own loopback address (127.0.0.11, .12, .13) with the
# same ports, and runs from the configs the Terraform config module renders
# (deploy/terraform/testdata/rendered/rehearsal, kept equal to the module by
# `go test ./deploy/terraform`). The script checks that the nodes
#   1. form a cluster (one leader, three voters, a write is accepted),
#   2. survive the loss of the leader (SIGKILL; a new leader takes writes)
#      and take the node back with its data,
#   3. survive a rolling restart (SIGTERM one node at a time, a write after
#      each), ending with every node holding every reservation.
# The rendered configs are secure (mutual TLS, the API over TLS, a tokens
# file, a gossip key); the script makes each host's CA, server certificate
# (with the host's address, -ip), client certificate and tokens file with
# `ledgerd tls` (scripts/secure-lib.sh), as docs/operations.md tells an
# operator to, and talks to the API over https with the operator token.
#
# Usage: scripts/rehearsal.sh [-k]   (-k keeps the scratch directory)
# Env:   LEDGERD_BIN  use this binary instead of building one
#        WORK         scratch directory (default: a new temp dir)
set -euo pipefail

keep=0
[[ "${1:-}" == "-k" ]] && keep=1

repo=$(cd "$(dirname "$0")/.." && pwd)
rendered="$repo/deploy/terraform/testdata/rendered/rehearsal"
nodes=(rehearsal-1 rehearsal-2 rehearsal-3)
declare -A addr=([rehearsal-1]=127.0.0.11 [rehearsal-2]=127.0.0.12 [rehearsal-3]=127.0.0.13)
declare -A pid=()
work=${WORK:-$(mktemp -d -t ledgerd-rehearsal-XXXXXX)}
t0=$(date +%s)

log() { printf '[%4ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
die() {
	log "FAIL: $*"
	for n in "${nodes[@]}"; do
		[[ -f "$work/$n/agent.log" ]] && { echo "--- $n (last 15 lines)"; tail -n 15 "$work/$n/agent.log"; }
	done
	exit 1
}

cleanup() {
	for n in "${!pid[@]}"; do
		kill -TERM "${pid[$n]}" 2>/dev/null || true
	done
	for n in "${!pid[@]}"; do
		wait "${pid[$n]}" 2>/dev/null || true
	done
	if ((keep)); then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- binary -----------------------------------------------------------------
if [[ -n "${LEDGERD_BIN:-}" ]]; then
	bin=$LEDGERD_BIN
else
	bin="$work/bin/ledgerd"
	log "building ledgerd"
	(cd "$repo" && go build -tags hashicorpmetrics -o "$bin" ./cmd/ledgerd)
fi
"$bin" version
cli() { "$bin" "$@" -timeout 15s; }
all_addrs=$(printf '%s:7420,' "${addr[@]}")
all_addrs=${all_addrs%,}

# --- hosts: rendered config + TLS material per node ---------------------------
log "preparing three hosts in $work from the rendered configs"
source "$repo/scripts/secure-lib.sh"
specs=()
for n in "${nodes[@]}"; do specs+=("$n=${addr[$n]}"); done
secure_pki "$bin" "$work/pki" "${specs[@]}"
for n in "${nodes[@]}"; do
	d="$work/$n"
	mkdir -p "$d/tls"
	cp "$rendered/$n/ledgerd.json" "$d/ledgerd.json"
	cp "$ca_file" "$d/tls/ca.pem"
	cp "$pki_dir/server-$n.pem" "$d/tls/server.pem"
	cp "$pki_dir/server-$n-key.pem" "$d/tls/server-key.pem"
	cp "$tokens_file" "$d/tokens.json"
	(cd "$d" && "$bin" agent -config ledgerd.json -config-check) >/dev/null ||
		die "$n: the rendered config fails -config-check"
done

start() {
	local n=$1
	(cd "$work/$n" && exec "$bin" agent -config ledgerd.json >>agent.log 2>&1) &
	pid[$n]=$!
}

ready() { api_curl -fs -o /dev/null --max-time 2 "https://${addr[$1]}:7420/readyz"; }

wait_ready() {
	local n=$1 i
	for ((i = 0; i < 150; i++)); do
		ready "$n" && return 0
		sleep 0.2
	done
	die "$n not ready after 30s"
}

# leader prints the node whose ledgerd_raft_is_leader is 1 (among $@).
leader() {
	local n
	for n in "$@"; do
		if api_curl -fsS --max-time 2 "https://${addr[$n]}:7420/metrics" 2>/dev/null | grep -qx 'ledgerd_raft_is_leader 1'; then
			echo "$n"
			return 0
		fi
	done
	return 1
}

wait_leader() {
	local i l
	for ((i = 0; i < 150; i++)); do
		if l=$(leader "$@"); then
			echo "$l"
			return 0
		fi
		sleep 0.2
	done
	die "no leader among $* after 30s"
}

# voters counts the alive voting servers (leader or follower) in `ledgerd members` as seen from $1.
voters() { cli members -addr "${addr[$1]}:7420" | awk 'NR > 1 && ($2 == "leader" || $2 == "follower" || $2 == "voter") && $4 == "alive"' | wc -l; }

wait_voters() {
	local n=$1 want=$2 i v=0
	for ((i = 0; i < 150; i++)); do
		v=$(voters "$n" 2>/dev/null || echo 0)
		((v == want)) && return 0
		sleep 0.2
	done
	cli members -addr "${addr[$n]}:7420" || true
	die "want $want voters seen from $n, have $v"
}

writes=0
write() {
	local via=$1
	writes=$((writes + 1))
	cli reserve -addr "$via" -res cpu=1 -dur 30m -after +1h -key "rehearsal-$writes" -label step="$2" >/dev/null ||
		die "write $writes ($2) through $via failed"
}

# metric prints one unlabelled gauge of node $1.
metric() { api_curl -fsS --max-time 2 "https://${addr[$1]}:7420/metrics" | awk -v m="$2" '$1 == m { printf "%d\n", $2 }'; }

# wait_applied waits until node $1 has applied index $2 locally.
wait_applied() {
	local i a=0
	for ((i = 0; i < 100; i++)); do
		a=$(metric "$1" ledgerd_fsm_applied_index || echo 0)
		((a >= $2)) && return 0
		sleep 0.1
	done
	die "$1 applied only up to $a, want >= $2"
}

count_on() { cli list -addr "${addr[$1]}:7420" -json | grep -c '"id"' || true; }

# --- 1. form ----------------------------------------------------------------
log "step 1: start three nodes (bootstrap_expect=3, retry_join the others)"
for n in "${nodes[@]}"; do start "$n"; done
for n in "${nodes[@]}"; do wait_ready "$n"; done
l=$(wait_leader "${nodes[@]}")
wait_voters "$l" 3
log "cluster formed: leader $l, 3 voters"
cli members -addr "${addr[$l]}:7420"
cli resources create -addr "$all_addrs" -capacity 1000 cpu >/dev/null || die "create resource"
write "$all_addrs" form
log "write accepted through the node list"

# --- 2. lose a node -----------------------------------------------------------
log "step 2: SIGKILL the leader $l"
kill -KILL "${pid[$l]}"
wait "${pid[$l]}" 2>/dev/null || true
unset "pid[$l]"
rest=()
for n in "${nodes[@]}"; do [[ $n != "$l" ]] && rest+=("$n"); done
nl=$(wait_leader "${rest[@]}")
log "new leader $nl elected by ${rest[*]}"
write "${addr[${rest[0]}]}:7420,${addr[${rest[1]}]}:7420" "after-loss"
log "write accepted with one node down"
log "restart $l with its data"
start "$l"
wait_ready "$l"
wait_voters "$nl" 3
log "$l is back: 3 voters"

# --- 3. rolling restart ---------------------------------------------------------
log "step 3: rolling restart, one node at a time (SIGTERM, start, wait ready)"
for n in "${nodes[@]}"; do
	kill -TERM "${pid[$n]}"
	wait "${pid[$n]}" 2>/dev/null || true
	unset "pid[$n]"
	start "$n"
	wait_ready "$n"
	l=$(wait_leader "${nodes[@]}")
	wait_voters "$l" 3
	write "$all_addrs" "roll-$n"
	log "restarted $n; leader $l; write $writes accepted"
done

# --- verdict ------------------------------------------------------------------
# Reads go through the leader, so also check each replica's own FSM: every
# node must have applied, locally, the leader's commit index as of now.
commit=$(metric "$l" ledgerd_raft_commit_index)
for n in "${nodes[@]}"; do
	wait_applied "$n" "$commit"
done
log "every node applied the leader's commit index $commit locally"
for n in "${nodes[@]}"; do
	c=$(count_on "$n")
	((c == writes)) || die "$n lists $c reservations, want $writes"
	log "$n lists all $c reservations"
done
cli members -addr "${addr[$l]}:7420"
log "PASS: formed, survived the loss of the leader, survived a rolling restart ($writes writes, none lost)"
