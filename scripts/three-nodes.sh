#!/usr/bin/env bash
# Start three real `ledgerd agent` processes on loopback with
# -bootstrap-expect 3, book through a follower, SIGKILL the leader, and show
# that the survivors elect a new leader, keep every booking and keep taking
# writes. Then stop everything with SIGTERM (graceful leave).
#
# The agents are secured as a production cluster must be (docs/operations.md,
# "Securing a cluster"): the script makes a CA, a server certificate per
# node, a client certificate, a gossip key and a tokens file with
# `ledgerd tls` and `ledgerd keygen`; Raft and the internal endpoints are
# mutual TLS, the API is https, and the CLI authenticates with the client
# certificate and the operator token (through the LEDGERD_* variables).
#
#   scripts/three-nodes.sh          # the walk-through below, using the CLI
#   scripts/three-nodes.sh test     # the same scenario as a Go test (asserts), a standing
#                                   # reservation and an approval across a leader kill
#
# Ports: HTTP 1742x, Raft 1743x, gossip 1744x (x = 1..3). Data and logs go to
# a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "test" ]]; then
	exec env LEDGERD_E2E=1 go test -tags hashicorpmetrics -run 'TestThreeAgentProcesses|TestSeriesLeaderKilledBetweenExpansions|TestApprovalAcrossLeaderKill|TestGroupCommitAcrossLeaderKill' -count=1 -v ./cmd/ledgerd
fi

work=$(mktemp -d -t ledgerd-3nodes-XXXXXX)
bin="$work/ledgerd"
go build -tags hashicorpmetrics -o "$bin" ./cmd/ledgerd

source scripts/secure-lib.sh
secure_pki "$bin" "$work/pki" head-1 head-2 head-3

declare -A pid
cleanup() {
	for i in 1 2 3; do
		if [[ -n "${pid[$i]:-}" ]] && kill -0 "${pid[$i]}" 2>/dev/null; then
			kill -TERM "${pid[$i]}" 2>/dev/null || true
		fi
	done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

join=(-retry-join 127.0.0.1:17441 -retry-join 127.0.0.1:17442 -retry-join 127.0.0.1:17443)
for i in 1 2 3; do
	secure_args "head-$i"
	"$bin" agent -node-name "head-$i" -data-dir "$work/data$i" \
		-http-addr "127.0.0.1:1742$i" -raft-addr "127.0.0.1:1743$i" -gossip-addr "127.0.0.1:1744$i" \
		-bootstrap-expect 3 "${join[@]}" -dead-server-grace 10s "${secure_args[@]}" >"$work/head-$i.log" 2>&1 &
	pid[$i]=$!
done

start=$(date +%s.%N)
for i in 1 2 3; do
	until api_curl -fs "https://127.0.0.1:1742$i/readyz" >/dev/null; do
		if ! kill -0 "${pid[$i]}" 2>/dev/null; then
			echo "head-$i exited:" >&2
			cat "$work/head-$i.log" >&2
			exit 1
		fi
		sleep 0.1
	done
done
printf 'three agents ready in %.2fs\n' "$(echo "$(date +%s.%N) - $start" | bc)"

# leader prints x of the running head-x that the cluster names as leader
# (`ledgerd members` through the public API, asked of each running node).
leader() {
	local i a
	for i in 1 2 3; do
		[[ -n "${pid[$i]:-}" ]] && kill -0 "${pid[$i]}" 2>/dev/null || continue
		a=$("$bin" members -addr "127.0.0.1:1742$i" 2>/dev/null | awk '$2 == "leader" {print $6}')
		a=${a##*:1742}
		if [[ "$a" =~ ^[123]$ && -n "${pid[$a]:-}" ]] && kill -0 "${pid[$a]}" 2>/dev/null; then
			echo "$a"
			return
		fi
	done
	return 1
}
until l=$(leader); do sleep 0.1; done
f=$((l % 3 + 1))
echo "leader: head-$l; writing through follower head-$f"

cli() { "$bin" "$@"; }
cli resources create -addr "127.0.0.1:1742$f" -capacity 128 cpu
for n in 1 2 3; do
	cli reserve -addr "127.0.0.1:1742$f" -key "before-$n" -res cpu=16 -dur 1h -after +1h
done

echo "SIGKILL leader head-$l"
killed=$(date +%s.%N)
kill -KILL "${pid[$l]}"
wait "${pid[$l]}" 2>/dev/null || true
unset "pid[$l]"
until nl=$(leader); do sleep 0.05; done
printf 'new leader head-%s after %.2fs\n' "$nl" "$(echo "$(date +%s.%N) - $killed" | bc)"

addrs=""
for i in 1 2 3; do [[ -n "${pid[$i]:-}" ]] && addrs="$addrs,127.0.0.1:1742$i"; done
addrs=${addrs#,}
for n in 1 2 3; do
	cli reserve -addr "$addrs" -key "after-$n" -res cpu=16 -dur 1h -after +1h
done
echo "all reservations after the crash (expect 6):"
cli list -addr "$addrs"
cli members -addr "$addrs"
