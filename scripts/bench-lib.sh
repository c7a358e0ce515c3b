#!/usr/bin/env bash
# Helpers shared by the bench-*.sh scripts: build the binaries, start and
# stop N `ledgerd agent` processes on loopback, read an agent's RSS.
# Source it; it expects $work (a scratch directory) to be set.

bench_build() {
	go build -tags hashicorpmetrics -o "$work/ledgerd" ./cmd/ledgerd
	go build -tags hashicorpmetrics -o "$work/loadgen" ./benchmarks/service/cmd/loadgen
}

# agents_start N PORTBASE: starts N agents with HTTP on PORTBASE+i, Raft on
# PORTBASE+10+i, gossip on PORTBASE+20+i, and waits until all are ready.
# Sets $addrs (comma-separated API addresses) and the array agent_pid.
agents_start() {
	local n=$1 base=$2 i join=()
	agent_pid=()
	addrs=""
	for ((i = 1; i <= n; i++)); do join+=(-retry-join "127.0.0.1:$((base + 20 + i))"); done
	for ((i = 1; i <= n; i++)); do
		"$work/ledgerd" agent -node-name "n$i" -data-dir "$work/data-$base-$i" \
			-http-addr "127.0.0.1:$((base + i))" -raft-addr "127.0.0.1:$((base + 10 + i))" \
			-gossip-addr "127.0.0.1:$((base + 20 + i))" -bootstrap-expect "$n" "${join[@]}" \
			-log-level warn >"$work/agent-$base-$i.log" 2>&1 &
		agent_pid[i]=$!
		addrs="$addrs,127.0.0.1:$((base + i))"
	done
	addrs=${addrs#,}
	for ((i = 1; i <= n; i++)); do
		local t=0
		until curl -fs "http://127.0.0.1:$((base + i))/readyz" >/dev/null; do
			sleep 0.1
			t=$((t + 1))
			if ((t > 600)); then
				echo "agent $i not ready after 60s" >&2
				return 1
			fi
		done
	done
}

# agents_stop: SIGTERM every agent started by agents_start and wait.
agents_stop() {
	local p
	for p in "${agent_pid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${agent_pid[@]}"; do wait "$p" 2>/dev/null || true; done
	agent_pid=()
}

# agent_pids: the running agents' process ids, comma-separated (for
# loadgen -cpu-pids).
agent_pids() {
	local IFS=,
	echo "${agent_pid[*]}"
}

# rss_kib PID: resident set size of a process in KiB.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
