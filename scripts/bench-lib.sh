#!/usr/bin/env bash
# Helpers shared by the bench-*.sh scripts: make the scratch directory,
# build or copy in the binaries, make the cluster's TLS material, start and
# stop N `ledgerd agent` processes on loopback (secured, or -insecure to
# compare), read an agent's RSS. Source it; the other helpers expect $work
# (a scratch directory: bench_scratch makes one) to be set.

# shellcheck source=scripts/secure-lib.sh
source scripts/secure-lib.sh

# bench_scratch NAME: makes the scratch directory $work
# (ledgerd-NAME-XXXXXX under TMPDIR) and, when the script exits, stops the
# agents started from it and removes it.
bench_scratch() {
	work=$(mktemp -d -t "ledgerd-$1-XXXXXX")
	trap 'agents_stop || true; rm -rf "$work"' EXIT
}

bench_build() {
	go build -tags hashicorpmetrics -o "$work/ledgerd" ./cmd/ledgerd
	go build -tags hashicorpmetrics -o "$work/loadgen" ./benchmarks/service/cmd/loadgen
	bench_pki
}

# bench_prebuilt DIR: bench_build for binaries built elsewhere (one arm of
# a side-by-side run): copies DIR's ledgerd and loadgen into $work and
# makes the PKI.
bench_prebuilt() {
	cp "$1/ledgerd" "$1/loadgen" "$work/"
	bench_pki >/dev/null
}

# bench_binaries: bench_prebuilt "$PREBUILT" when PREBUILT names a
# directory of binaries built elsewhere, else bench_build here.
bench_binaries() {
	if [[ -n "${PREBUILT:-}" ]]; then
		bench_prebuilt "$PREBUILT"
	else
		bench_build >/dev/null
	fi
}

# bench_pki makes, with `ledgerd tls` and `ledgerd keygen`, one CA, server
# certificates for agents n1..n5 (127.0.0.1), a client certificate, a
# gossip key and a tokens file under $work/pki (see secure-lib.sh).
bench_pki() {
	secure_pki "$work/ledgerd" "$work/pki" n1 n2 n3 n4 n5
}

# agents_start N PORTBASE [TLS]: starts N agents with HTTP on PORTBASE+i,
# Raft on PORTBASE+10+i, gossip on PORTBASE+20+i, and waits until all are
# ready. TLS "on" (the default) secures them as a production cluster:
# mutual TLS on Raft and the internal endpoints, the API over https,
# encrypted gossip, the tokens file. "off" runs them -insecure over plain
# http, only to measure what security costs. Sets $addrs (comma-separated
# API addresses), the array agent_pid and the array client_tls (the
# loadgen flags that reach these agents: CA, client certificate, token).
# The array agent_extra, if set, is appended to every agent's command line.
agents_start() {
	local n=$1 base=$2 mode=${3:-on} i join=() sec scheme=https
	agent_pid=()
	addrs=""
	case $mode in
	on) client_tls=(-ca-file "$ca_file" -cert-file "$LEDGERD_CLIENT_CERT" -key-file "$LEDGERD_CLIENT_KEY" -token "$token") ;;
	off) client_tls=() scheme=http ;;
	*)
		echo "agents_start: TLS mode $mode: want on or off" >&2
		return 1
		;;
	esac
	for ((i = 1; i <= n; i++)); do join+=(-retry-join "127.0.0.1:$((base + 20 + i))"); done
	for ((i = 1; i <= n; i++)); do
		if [[ $mode == on ]]; then
			secure_args "n$i"
			sec=("${secure_args[@]}")
		else
			sec=(-insecure) # measuring the cost of security, nothing else
		fi
		"$work/ledgerd" agent -node-name "n$i" -data-dir "$work/data-$base-$i" \
			-http-addr "127.0.0.1:$((base + i))" -raft-addr "127.0.0.1:$((base + 10 + i))" \
			-gossip-addr "127.0.0.1:$((base + 20 + i))" -bootstrap-expect "$n" "${join[@]}" \
			-log-level warn "${sec[@]}" ${agent_extra[@]+"${agent_extra[@]}"} >"$work/agent-$base-$i.log" 2>&1 &
		agent_pid[i]=$!
		addrs="$addrs,127.0.0.1:$((base + i))"
	done
	addrs=${addrs#,}
	for ((i = 1; i <= n; i++)); do
		local t=0
		until api_curl -fs "$scheme://127.0.0.1:$((base + i))/readyz" >/dev/null; do
			sleep 0.1
			t=$((t + 1))
			if ((t > 600)); then
				echo "agent $i not ready after 60s (another run on ports $base+1..$((base + 20 + n))? PORT_OFFSET moves them); its log ends:" >&2
				tail -5 "$work/agent-$base-$i.log" >&2
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
