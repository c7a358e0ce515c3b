#!/usr/bin/env bash
# Service benchmark: ledgerd (1/3/5 agents as real processes) against raw
# hashicorp/raft Apply, an embedded 3-member etcd and a local PostgreSQL,
# with the same closed-loop workload (benchmarks/service), one after the
# other on this machine. Then cold start / recovery time and resident memory
# of a one-node ledgerd holding RECOVERY_LIVE reservations.
#
#   scripts/bench-service.sh                 # the whole matrix (about 30 min)
#   DURATION=5s CLIENTS=1,16 scripts/bench-service.sh   # quicker
#   TLS=on,off scripts/bench-service.sh      # every cell with and without TLS, side by side
#
#   TLS=on,off DURATION=8s CLIENTS=1,16,64 SKIP='ledgerd-unary ledgerd-nodes recovery' \
#     OUT=benchmarks/results/service-tls scripts/bench-service.sh   # the committed TLS cost run
#
# TLS (a comma-separated list of on and off; default on) says how every
# system runs; each cell is run once per setting, in the same run:
#   on   ledgerd as a production cluster must run (secure by default): mutual
#        TLS between the agents on Raft and the internal endpoints, the API
#        over https (TLS 1.3 in practice) with a client certificate and the
#        operator token, encrypted gossip; the PKI is made with `ledgerd tls`
#        and `ledgerd keygen` into the scratch directory. Raw raft runs its
#        transport over mutual TLS 1.3 with the same certificates; etcd
#        serves clients and peers over mutual TLS (its embed config's client
#        and peer TLS info, client-cert-auth); PostgreSQL runs with ssl=on
#        and a self-signed certificate, and the benchmark connects with
#        sslmode=require (encrypted, the server not verified, no client
#        certificate: PostgreSQL's common setting).
#   off  the same without TLS: ledgerd agents with -insecure over plain
#        http (no authentication at all), raw raft over TCP, etcd over http,
#        PostgreSQL with sslmode=disable. Only to show what security costs.
# Cells of the first setting carry the plain labels ("3 nodes"), which the
# report's bars judge; the others say ", no TLS" or ", TLS" after them.
#
# LOG_STORES (a comma-separated list of boltdb and wal; default boltdb) is
# where raw raft's nodes and the 3-node ledgerd agents of the default-mix
# cells keep the Raft log (the agents' raft_log_store), each cell run once
# per store back to back; the cells of the first store carry the plain
# labels, the others ", wal" (or ", boltdb") after the base label. Every
# other ledgerd cell runs on the first store.
#
#   LOG_STORES=boltdb,wal CLIENTS=1,16,64 SKIP='reserve-mix ledgerd-unary ledgerd-nodes etcd postgres recovery' \
#     OUT=benchmarks/results/logstore scripts/bench-service.sh   # the committed log store run
#
# Results go to $OUT (default benchmarks/results/service): service.jsonl (one
# JSON result per cell), run.log (the tables as printed), env.txt, recovery.md,
# and results.md / throughput.svg / latency-cdf.svg rendered from the JSON.
# PostgreSQL (the Debian package) is started as the postgres user on
# 127.0.0.1:5499 in a temporary data directory; it is skipped if not installed.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15s}
LIVE=${LIVE:-10000}
CLIENTS=${CLIENTS:-1,16,64,256}
RECOVERY_LIVE=${RECOVERY_LIVE:-100000}
OUT=${OUT:-benchmarks/results/service}
TLS=${TLS:-on}
LOG_STORES=${LOG_STORES:-boltdb}
LOADGEN_FLAGS=${LOADGEN_FLAGS:-} # more loadgen flags for every cell
SKIP=${SKIP:-} # space-separated: rawraft ledgerd ledgerd-unary ledgerd-nodes etcd postgres recovery reserve-mix

mkdir -p "$OUT"
out=$(cd "$OUT" && pwd)
work=$(mktemp -d -t ledgerd-bench-XXXXXX)
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
pgdir=""
cleanup() {
	agents_stop || true
	if [[ -n "$pgdir" ]]; then
		su postgres -c "$pgbin/pg_ctl -D $pgdir/data -m fast stop" >/dev/null 2>&1 || true
		rm -rf "$pgdir"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
skip() { [[ " $SKIP " == *" $1 "* ]]; }

bench_build
(cd benchmarks/peers && go build -tags hashicorpmetrics -o "$work/peerbench" ./cmd/peerbench)
json="$out/service.jsonl"
log="$out/run.log"
: >"$json"
: >"$log"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD)"
	echo "go: $(go version)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "cores: $(nproc)"
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "settings: DURATION=$DURATION LIVE=$LIVE CLIENTS=$CLIENTS RECOVERY_LIVE=$RECOVERY_LIVE TLS=$TLS LOG_STORES=$LOG_STORES LOADGEN_FLAGS=$LOADGEN_FLAGS"
} >"$out/env.txt"
common=(-live "$LIVE" -duration "$DURATION" -json "$json" -quiet)
# LOADGEN_FLAGS passes further flags to every loadgen cell, e.g.
# LOADGEN_FLAGS='-batch-inflight 4' (several Batch calls in flight per node).
read -ra loadgen_flags <<<"${LOADGEN_FLAGS:-}"
common+=("${loadgen_flags[@]}")
step() { echo "== $* (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$log"; }

# TLS settings in run order; the first one's cells carry the plain labels.
read -ra modes <<<"${TLS//,/ }"
for m in "${modes[@]}"; do
	[[ $m == on || $m == off ]] || {
		echo "TLS=$TLS: want on, off or both (comma-separated)" >&2
		exit 2
	}
done
read -ra stores <<<"${LOG_STORES//,/ }"
for s in "${stores[@]}"; do
	[[ $s == boltdb || $s == wal ]] || {
		echo "LOG_STORES=$LOG_STORES: want boltdb, wal or both (comma-separated)" >&2
		exit 2
	}
done
# slabel BASE STORE: BASE, with the store named unless it is the first.
slabel() { if [[ $2 == "${stores[0]}" ]]; then echo "$1"; else echo "$1, $2"; fi; }
# storebase BASE STORE: agents of each store get their own ports and data
# directories (a data directory keeps its log store).
storebase() {
	local k
	for k in "${!stores[@]}"; do [[ ${stores[k]} == "$2" ]] && break; done
	echo $(($1 + 2000 * k))
}
# Agents run on the first store unless a cell says otherwise.
agent_extra=(-raft-log-store "${stores[0]}")

# label BASE MODE: the report label of a cell.
label() {
	if [[ $2 == "${modes[0]}" ]]; then
		echo "$1"
	elif [[ $2 == off ]]; then
		echo "$1, no TLS"
	else
		echo "$1, TLS"
	fi
}
# portbase BASE MODE: agents of the off setting get their own ports and
# data directories.
portbase() { if [[ $2 == on ]]; then echo "$1"; else echo $(($1 + 1000)); fi; }
# peer_tls MODE: the flags that put raw raft's transport (loadgen) on
# mutual TLS with the cluster's server certificate, or none.
peer_tls() { [[ $1 == on ]] && echo "-ca-file $ca_file -cert-file $pki_dir/server-n1.pem -key-file $pki_dir/server-n1-key.pem" || true; }

# Each system's cells run once per TLS setting back to back, so that the
# two figures of a pair are measured minutes apart at most, under the same
# load of the machine.
if ! skip rawraft; then
	for mode in "${modes[@]}"; do
		for store in "${stores[@]}"; do
			step "raw raft, 3 nodes, reserve mix, log store $store, TLS $mode"
			# shellcheck disable=SC2046
			"$work/loadgen" -system rawraft -nodes 3 -mix reserve -log-store "$store" -label "$(label "$(slabel "3 nodes" "$store")" "$mode")" $(peer_tls "$mode") \
				-clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		done
	done
fi

if ! skip ledgerd; then
	for mode in "${modes[@]}"; do
		for store in "${stores[@]}"; do
			step "ledgerd, 3 nodes, default mix, log store $store, TLS $mode"
			agent_extra=(-raft-log-store "$store")
			agents_start 3 "$(storebase "$(portbase 17500 "$mode")" "$store")" "$mode"
			"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "$(slabel "3 nodes" "$store")" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
			agents_stop
		done
	done
	agent_extra=(-raft-log-store "${stores[0]}")
	if ! skip reserve-mix; then
		for mode in "${modes[@]}"; do
			step "ledgerd, 3 nodes, reserve mix, TLS $mode"
			agents_start 3 "$(portbase 17600 "$mode")" "$mode"
			"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "3 nodes" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
			agents_stop
		done
	fi
fi

# The same 64-client cells with one API call per operation (no coalescing
# into Batch calls), for the side-by-side comparison.
if ! skip ledgerd && ! skip ledgerd-unary; then
	for mode in "${modes[@]}"; do
		step "ledgerd, 3 nodes, default mix, unary client, TLS $mode"
		agents_start 3 "$(portbase 17650 "$mode")" "$mode"
		"$work/loadgen" -system ledgerd -coalesce=false -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "3 nodes, unary" "$mode")" -clients 64 "${common[@]}" | tee -a "$log"
		agents_stop
	done
	if ! skip reserve-mix; then
		for mode in "${modes[@]}"; do
			step "ledgerd, 3 nodes, reserve mix, unary client, TLS $mode"
			agents_start 3 "$(portbase 17680 "$mode")" "$mode"
			"$work/loadgen" -system ledgerd -coalesce=false -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "3 nodes, unary" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
			agents_stop
		done
	fi
fi

if ! skip ledgerd-nodes; then
	for n in 1 5; do
		for mode in "${modes[@]}"; do
			step "ledgerd, $n nodes, default mix, TLS $mode"
			agents_start "$n" "$(portbase $((17700 + 100 * n)) "$mode")" "$mode"
			"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "$n nodes" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
			agents_stop
		done
	done
fi

if ! skip etcd; then
	for mode in "${modes[@]}"; do
		etls=()
		[[ $mode == on ]] && etls=(-tls-ca-file "$ca_file" -tls-cert-file "$pki_dir/server-n1.pem" -tls-key-file "$pki_dir/server-n1-key.pem")
		step "etcd, 3 members, default mix, TLS $mode"
		"$work/peerbench" -system etcd -nodes 3 -dir "$work/etcd" "${etls[@]}" -label "$(label "3 nodes" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		rm -rf "$work/etcd"
	done
	if ! skip reserve-mix; then
		for mode in "${modes[@]}"; do
			etls=()
			[[ $mode == on ]] && etls=(-tls-ca-file "$ca_file" -tls-cert-file "$pki_dir/server-n1.pem" -tls-key-file "$pki_dir/server-n1-key.pem")
			step "etcd, 3 members, reserve mix, TLS $mode"
			"$work/peerbench" -system etcd -nodes 3 -port 24790 -dir "$work/etcd2" "${etls[@]}" -label "$(label "3 nodes" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
			rm -rf "$work/etcd2"
		done
	fi
fi

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if ! skip postgres && [[ -n "$pgbin" ]]; then
	pgdir=$(mktemp -d -t ledgerd-pg-XXXXXX)
	# ssl=on with a self-signed certificate; each setting picks sslmode in
	# the connection string (require: encrypted, disable: clear text).
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 \
		-keyout "$pgdir/server.key" -out "$pgdir/server.crt" 2>/dev/null
	chmod 600 "$pgdir/server.key"
	chown -R postgres "$pgdir"
	su postgres -c "$pgbin/initdb -D $pgdir/data -U postgres --auth=trust" >"$work/initdb.log"
	su postgres -c "$pgbin/pg_ctl -D $pgdir/data -l $pgdir/pg.log -w start -o '-p 5499 -k $pgdir -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB -c ssl=on -c ssl_cert_file=$pgdir/server.crt -c ssl_key_file=$pgdir/server.key'" >/dev/null
	pg_reset() { su postgres -c "$pgbin/psql -h $pgdir -p 5499 -U postgres -qc 'DROP TABLE IF EXISTS bookings; DROP TABLE IF EXISTS resources'" >/dev/null 2>&1; }
	for mode in "${modes[@]}"; do
		sslmode=disable
		[[ $mode == on ]] && sslmode=require
		dsn="postgres://postgres@127.0.0.1:5499/postgres?sslmode=$sslmode"
		pg_reset
		step "postgresql $("$pgbin/postgres" --version | awk '{print $3}'), 1 node, default mix, TLS $mode"
		"$work/peerbench" -system postgres -dsn "$dsn" -label "$(label "1 nodes" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		if ! skip reserve-mix; then
			pg_reset
			step "postgresql, 1 node, reserve mix, TLS $mode"
			"$work/peerbench" -system postgres -dsn "$dsn" -label "$(label "1 nodes" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
		fi
	done
fi

if ! skip recovery; then
	# The recovery cell runs in the first TLS setting only.
	mode=${modes[0]}
	base=$(portbase 18000 "$mode")
	step "recovery: one ledgerd node with $RECOVERY_LIVE live reservations, TLS $mode"
	agents_start 1 "$base" "$mode"
	pid=${agent_pid[1]}
	rss0=$(rss_kib "$pid")
	"$work/loadgen" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "1 node, recovery" -mix reserve -clients 64 \
		-live "$RECOVERY_LIVE" -resources $((RECOVERY_LIVE / 100)) -duration 5s -json "$out/recovery.jsonl" -quiet | tee -a "$log"
	rss1=$(rss_kib "$pid")
	du_kib=$(du -sk "$work/data-$base-1" | cut -f1)
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	sec=(-insecure) scheme=http
	if [[ $mode == on ]]; then
		secure_args n1
		sec=("${secure_args[@]}") scheme=https
	fi
	t0=$(date +%s.%N)
	"$work/ledgerd" agent -node-name n1 -data-dir "$work/data-$base-1" -http-addr "127.0.0.1:$((base + 1))" \
		-raft-addr "127.0.0.1:$((base + 11))" -gossip-addr "127.0.0.1:$((base + 21))" -bootstrap-expect 1 -log-level info "${sec[@]}" \
		>"$work/agent-restart.log" 2>&1 &
	agent_pid=([1]=$!)
	until api_curl -fs "$scheme://127.0.0.1:$((base + 1))/readyz" >/dev/null; do sleep 0.05; done
	t1=$(date +%s.%N)
	rss2=$(rss_kib "${agent_pid[1]}")
	n=$(tail -1 "$out/recovery.jsonl" | sed 's/.*"live":\([0-9]*\).*/\1/')
	{
		echo "| live reservations | data dir | RSS empty | RSS loaded | RSS after restart | bytes/reservation (loaded − empty) | restart to ready |"
		echo "|---:|---:|---:|---:|---:|---:|---:|"
		printf '| %d | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %.0f | %.2f s |\n' "$n" "$(echo "$du_kib/1024" | bc -l)" \
			"$(echo "$rss0/1024" | bc -l)" "$(echo "$rss1/1024" | bc -l)" "$(echo "$rss2/1024" | bc -l)" \
			"$(echo "($rss1-$rss0)*1024/$n" | bc -l)" "$(echo "$t1-$t0" | bc -l)"
	} | tee "$out/recovery.md" | tee -a "$log"
	grep -iE "snapshot|restor|replay" "$work/agent-restart.log" | head -20 >"$out/recovery-agent.log" || true
	agents_stop
fi

"$work/loadgen" -report "$json" -out "$out"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"
echo "results in $out"
