#!/usr/bin/env bash
# Service benchmark: ledgerd (1/3/5 agents as real processes) against raw
# hashicorp/raft Apply, an embedded 3-member etcd, a one-node PostgreSQL and
# a PostgreSQL primary with a synchronous streaming standby, with the same
# closed-loop workload (benchmarks/service), one after the other on this
# machine. Then cold start / recovery time and resident memory of a one-node
# ledgerd holding RECOVERY_LIVE reservations.
#
#   scripts/bench-service.sh                 # the whole matrix (about 30 min)
#   DURATION=5s CLIENTS=1,16 scripts/bench-service.sh   # quicker
#   TLS=on,off scripts/bench-service.sh      # every cell with and without TLS, side by side
#
#   TLS=on DURATION=10s CLIENTS=1,16,64,256 PORT_OFFSET=5000 \
#     OUT=benchmarks/results/write-path-baseline scripts/bench-service.sh   # the write-path baseline
#
# Variables:
#   DURATION       measured time per cell (default 15s)
#   LIVE           live reservations held during every cell (default 10000)
#   CLIENTS        closed-loop client counts of the default-mix cells and of
#                  raw raft (default 1,16,64,256); the reserve-mix cells of
#                  ledgerd run at 1 and 64 clients (the one-client p50 bar and
#                  the raw raft bar), those of etcd and PostgreSQL at 64
#   RECOVERY_LIVE  reservations of the recovery cell (default 100000)
#   TLS            on, off or both (below; default on)
#   LOG_STORES     boltdb, wal or both (below; default wal)
#   OUT            results directory (default benchmarks/results/service)
#   PORT_OFFSET    added to every loopback port the script uses (default 0;
#                  e.g. 5000 when another run of this script shares the
#                  machine: ledgerd 17500-20900, etcd 23790-23992 and
#                  24790-24992, PostgreSQL 5499-5502 then move up by it)
#   SKIP           cells to leave out, space-separated: rawraft ledgerd
#                  ledgerd-unary ledgerd-nodes etcd postgres postgres-standby
#                  recovery reserve-mix
#
# The systems and their labels in the report (system, label):
#   raw raft, "3 nodes"        hashicorp/raft Apply in the load generator
#   ledgerd, "N nodes"         N agents (secured unless TLS=off)
#   etcd, "3 nodes"            3 embedded members in peerbench
#   postgresql, "1 nodes"      one server on 127.0.0.1:5499 (+ PORT_OFFSET)
#   postgresql, "primary + sync standby"
#                              a primary on 127.0.0.1:5501 (+ offset) with
#                              synchronous_standby_names=standby1 and a
#                              streaming standby (pg_basebackup -R) on
#                              127.0.0.1:5502 (+ offset), application_name
#                              standby1: a commit returns once the standby
#                              has flushed it. Before every cell and after
#                              it the script checks pg_stat_replication on
#                              the primary (state streaming, sync_state
#                              sync, ssl as the TLS setting says) and fails
#                              if the standby is not synchronous.
# Every PostgreSQL server runs fsync=on and synchronous_commit=on (checked
# with SHOW before measuring), in a temporary directory as the postgres
# user, from the Debian package (installed with apt-get if missing);
# everything is stopped and removed on exit.
#
# CPU per operation: every cell reports the CPU time of all processes of
# the system per operation of its measured phase: the load generator (in
# which raw raft and etcd run) plus the ledgerd agents' processes or each
# PostgreSQL postmaster's whole process tree (backends, WAL writer, sender
# and receiver, startup process), passed as -cpu-pids.
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
#        certificate: PostgreSQL's common setting); the standby's
#        replication connection uses sslmode=require too.
#   off  the same without TLS: ledgerd agents with -insecure over plain
#        http (no authentication at all), raw raft over TCP, etcd over http,
#        PostgreSQL with sslmode=disable (clients and the standby's
#        replication connection). Only to show what security costs.
# Cells of the first setting carry the plain labels ("3 nodes"), which the
# report's bars judge; the others say ", no TLS" or ", TLS" after them.
#
# LOG_STORES (a comma-separated list of boltdb and wal; default wal, the
# agent's own default for a new data dir) is
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
# JSON result per cell), run.log (the tables as printed, with the load
# average at every step), env.txt, recovery.md, and results.md /
# throughput.svg / latency-cdf.svg rendered from the JSON: results.md opens
# with the bars of the write-path goals (ledgerd 3 nodes against each peer
# per client count, met or not met) and a table of throughput beside CPU
# per operation for every system.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15s}
LIVE=${LIVE:-10000}
CLIENTS=${CLIENTS:-1,16,64,256}
RECOVERY_LIVE=${RECOVERY_LIVE:-100000}
OUT=${OUT:-benchmarks/results/service}
TLS=${TLS:-on}
LOG_STORES=${LOG_STORES:-wal}
PORT_OFFSET=${PORT_OFFSET:-0}
LOADGEN_FLAGS=${LOADGEN_FLAGS:-} # more loadgen flags for every cell
SKIP=${SKIP:-} # space-separated: rawraft ledgerd ledgerd-unary ledgerd-nodes etcd postgres postgres-standby recovery reserve-mix

mkdir -p "$OUT"
out=$(cd "$OUT" && pwd)
work=$(mktemp -d -t ledgerd-bench-XXXXXX)
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
pg_root="" pgbin=""
pg_up=() # data directories of the running PostgreSQL servers
cleanup() {
	agents_stop || true
	local d
	for d in ${pg_up[@]+"${pg_up[@]}"}; do
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
	done
	[[ -n "$pg_root" ]] && rm -rf "$pg_root"
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
	echo "settings: DURATION=$DURATION LIVE=$LIVE CLIENTS=$CLIENTS RECOVERY_LIVE=$RECOVERY_LIVE TLS=$TLS LOG_STORES=$LOG_STORES SKIP=$SKIP PORT_OFFSET=$PORT_OFFSET LOADGEN_FLAGS=$LOADGEN_FLAGS"
} >"$out/env.txt"
common=(-live "$LIVE" -duration "$DURATION" -json "$json" -quiet)
# LOADGEN_FLAGS passes further flags to every loadgen cell, e.g.
# LOADGEN_FLAGS='-batch-inflight 4' (several Batch calls in flight per node).
read -ra loadgen_flags <<<"${LOADGEN_FLAGS:-}"
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
portbase() { if [[ $2 == on ]]; then echo $(($1 + PORT_OFFSET)); else echo $(($1 + 1000 + PORT_OFFSET)); fi; }
# peer_tls MODE: the flags that put raw raft's transport (loadgen) on
# mutual TLS with the cluster's server certificate, or none.
peer_tls() { [[ $1 == on ]] && echo "-ca-file $ca_file -cert-file $pki_dir/server-n1.pem -key-file $pki_dir/server-n1-key.pem" || true; }

# The label of the PostgreSQL primary + synchronous standby cells.
pg_standby_label="primary + sync standby"

# pg_sslmode MODE: the libpq sslmode of a TLS setting.
pg_sslmode() { if [[ $1 == on ]]; then echo require; else echo disable; fi; }
# pg_initdb DIR: a new cluster in DIR owned by postgres, trusting local
# connections (loopback only; replication included).
pg_initdb() { runuser -u postgres -- "$pgbin/initdb" -D "$1" -U postgres --auth=trust >>"$work/pg.log" 2>&1; }
# pg_start DIR PORT [-c NAME=VALUE...]: starts the server of DIR on
# 127.0.0.1:PORT, durable (fsync, synchronous commit), ssl=on.
pg_start() {
	local d=$1 port=$2
	shift 2
	runuser -u postgres -- "$pgbin/pg_ctl" -D "$d" -l "$d.log" -w -t 120 start -o "-p $port -k $pg_root \
-c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB -c fsync=on -c synchronous_commit=on \
-c ssl=on -c ssl_cert_file=$pg_root/server.crt -c ssl_key_file=$pg_root/server.key $*" >/dev/null || {
		echo "postgresql in $d did not start:" >&2
		tail -20 "$d.log" >&2
		exit 1
	}
	pg_up+=("$d")
}
# pg_stop DIR: stops the server of DIR.
pg_stop() {
	runuser -u postgres -- "$pgbin/pg_ctl" -D "$1" -m fast -w stop >/dev/null
	local keep=() d
	for d in "${pg_up[@]}"; do [[ $d == "$1" ]] || keep+=("$d"); done
	pg_up=(${keep[@]+"${keep[@]}"})
}
# pg_pid DIR: the postmaster's process id (the root of the server's tree).
pg_pid() { head -1 "$1/postmaster.pid"; }
# pg_sql PORT SQL: runs SQL on the server at PORT, prints the bare result.
pg_sql() { runuser -u postgres -- "$pgbin/psql" -h "$pg_root" -p "$1" -U postgres -XAtqc "$2"; }
# pg_reset PORT: drops the benchmark's tables.
pg_reset() { pg_sql "$1" 'DROP TABLE IF EXISTS bookings; DROP TABLE IF EXISTS resources' >/dev/null 2>&1; }
# pg_check_durable PORT: fails unless the server fsyncs and commits
# synchronously.
pg_check_durable() {
	local got
	got=$(pg_sql "$1" "SELECT current_setting('fsync') || ',' || current_setting('synchronous_commit')")
	[[ $got == on,on ]] || {
		echo "postgresql on $1: fsync,synchronous_commit = $got, want on,on" >&2
		exit 1
	}
}
# pg_conninfo DIR PRIMARYPORT MODE: points the standby of DIR at the
# primary as standby1, over TLS or not, and reloads it if it runs (the WAL
# receiver reconnects with the new settings).
pg_conninfo() {
	local conf=$1/postgresql.auto.conf
	sed -i '/^primary_conninfo/d' "$conf"
	echo "primary_conninfo = 'host=127.0.0.1 port=$2 user=postgres application_name=standby1 sslmode=$(pg_sslmode "$3")'" >>"$conf"
	if [[ -f $1/postmaster.pid ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$1" reload >/dev/null; fi
}
# pg_wait_sync PORT MODE: waits up to 60 s until the primary at PORT has
# standby1 streaming as its synchronous standby, over TLS iff MODE is on;
# fails loudly otherwise.
pg_wait_sync() {
	local want=false got="" t
	[[ $2 == on ]] && want=true
	for ((t = 0; t < 300; t++)); do
		got=$(pg_sql "$1" "SELECT s.state || ',' || s.sync_state || ',' || coalesce(l.ssl::text, 'none')
			FROM pg_stat_replication s LEFT JOIN pg_stat_ssl l ON l.pid = s.pid
			WHERE s.application_name = 'standby1'" 2>&1 | paste -sd' ' -) || true # a refused query is retried
		if [[ $got == "streaming,sync,$want" ]]; then
			echo "postgresql on $1: standby1 streaming, sync_state = sync, ssl = $want" | tee -a "$log"
			return 0
		fi
		sleep 0.2
	done
	echo "postgresql on $1: standby1 is not a synchronous standby with ssl = $want after 60 s: pg_stat_replication says '${got:-no row}'" >&2
	exit 1
}

# Each system's cells run once per TLS setting back to back, so that the
# two figures of a pair are measured minutes apart at most, under the same
# load of the machine.
if ! skip rawraft; then
	for mode in "${modes[@]}"; do
		for store in "${stores[@]}"; do
			step "raw raft, 3 nodes, reserve mix, log store $store, TLS $mode"
			# shellcheck disable=SC2046
			"$work/loadgen" "${loadgen_flags[@]}" -system rawraft -nodes 3 -mix reserve -log-store "$store" -label "$(label "$(slabel "3 nodes" "$store")" "$mode")" $(peer_tls "$mode") \
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
			"$work/loadgen" "${loadgen_flags[@]}" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "$(slabel "3 nodes" "$store")" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
			agents_stop
		done
	done
	agent_extra=(-raft-log-store "${stores[0]}")
	if ! skip reserve-mix; then
		for mode in "${modes[@]}"; do
			step "ledgerd, 3 nodes, reserve mix, TLS $mode"
			agents_start 3 "$(portbase 17600 "$mode")" "$mode"
			"$work/loadgen" "${loadgen_flags[@]}" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "3 nodes" "$mode")" -mix reserve -clients 1,64 "${common[@]}" | tee -a "$log"
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
		"$work/loadgen" "${loadgen_flags[@]}" -system ledgerd -coalesce=false -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "3 nodes, unary" "$mode")" -clients 64 "${common[@]}" | tee -a "$log"
		agents_stop
	done
	if ! skip reserve-mix; then
		for mode in "${modes[@]}"; do
			step "ledgerd, 3 nodes, reserve mix, unary client, TLS $mode"
			agents_start 3 "$(portbase 17680 "$mode")" "$mode"
			"$work/loadgen" "${loadgen_flags[@]}" -system ledgerd -coalesce=false -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "3 nodes, unary" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
			agents_stop
		done
	fi
fi

if ! skip ledgerd-nodes; then
	for n in 1 5; do
		for mode in "${modes[@]}"; do
			step "ledgerd, $n nodes, default mix, TLS $mode"
			agents_start "$n" "$(portbase $((17700 + 100 * n)) "$mode")" "$mode"
			"$work/loadgen" "${loadgen_flags[@]}" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "$(label "$n nodes" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
			agents_stop
		done
	done
fi

if ! skip etcd; then
	for mode in "${modes[@]}"; do
		etls=()
		[[ $mode == on ]] && etls=(-tls-ca-file "$ca_file" -tls-cert-file "$pki_dir/server-n1.pem" -tls-key-file "$pki_dir/server-n1-key.pem")
		step "etcd, 3 members, default mix, TLS $mode"
		"$work/peerbench" -system etcd -nodes 3 -port $((23790 + PORT_OFFSET)) -dir "$work/etcd" "${etls[@]}" -label "$(label "3 nodes" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		rm -rf "$work/etcd"
	done
	if ! skip reserve-mix; then
		for mode in "${modes[@]}"; do
			etls=()
			[[ $mode == on ]] && etls=(-tls-ca-file "$ca_file" -tls-cert-file "$pki_dir/server-n1.pem" -tls-key-file "$pki_dir/server-n1-key.pem")
			step "etcd, 3 members, reserve mix, TLS $mode"
			"$work/peerbench" -system etcd -nodes 3 -port $((24790 + PORT_OFFSET)) -dir "$work/etcd2" "${etls[@]}" -label "$(label "3 nodes" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
			rm -rf "$work/etcd2"
		done
	fi
fi

# PostgreSQL: one node, then a primary with a synchronous streaming
# standby. Every server runs fsync=on and synchronous_commit=on (checked
# before measuring), ssl=on with a self-signed certificate; each TLS
# setting picks sslmode in the clients' connection string (require:
# encrypted, disable: clear text) and in the standby's replication
# connection. The CPU of each server's whole process tree (postmaster,
# backends, WAL sender and receiver, writers) is counted per operation.
if ! skip postgres || ! skip postgres-standby; then
	pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
	if [[ -z "$pgbin" ]]; then
		echo "PostgreSQL is not installed: installing the Debian package" | tee -a "$log"
		apt-get install -y -q postgresql >>"$work/apt.log" 2>&1 || {
			echo "apt-get install postgresql failed (run apt-get update first?): $work/apt.log" >&2
			exit 1
		}
		pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	fi
	pgver=$("$pgbin/postgres" --version | awk '{print $3}')
	echo "postgresql: $pgver" >>"$out/env.txt"
	pg_root=$(mktemp -d -t ledgerd-pg-XXXXXX)
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 \
		-keyout "$pg_root/server.key" -out "$pg_root/server.crt" 2>/dev/null
	chmod 600 "$pg_root/server.key"
	chown -R postgres "$pg_root"
fi

if ! skip postgres; then
	port=$((5499 + PORT_OFFSET))
	pg_initdb "$pg_root/one"
	pg_start "$pg_root/one" "$port"
	pg_check_durable "$port"
	for mode in "${modes[@]}"; do
		dsn="postgres://postgres@127.0.0.1:$port/postgres?sslmode=$(pg_sslmode "$mode")"
		pg_reset "$port"
		step "postgresql $pgver, 1 node, default mix, TLS $mode"
		"$work/peerbench" -system postgres -nodes 1 -dsn "$dsn" -cpu-pids "$(pg_pid "$pg_root/one")" -label "$(label "1 nodes" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		if ! skip reserve-mix; then
			pg_reset "$port"
			step "postgresql, 1 node, reserve mix, TLS $mode"
			"$work/peerbench" -system postgres -nodes 1 -dsn "$dsn" -cpu-pids "$(pg_pid "$pg_root/one")" -label "$(label "1 nodes" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
		fi
	done
	pg_stop "$pg_root/one"
fi

if ! skip postgres-standby; then
	# A primary on 5501 (+ PORT_OFFSET) whose commits wait for the standby
	# named standby1 (synchronous_commit=on: until the standby has flushed
	# the commit record to its disk), and that standby on 5502, streaming
	# from it.
	primary=$((5501 + PORT_OFFSET)) standby=$((5502 + PORT_OFFSET))
	pg_initdb "$pg_root/primary"
	pg_start "$pg_root/primary" "$primary" -c synchronous_standby_names=standby1
	runuser -u postgres -- "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$pg_root/standby" -R -X stream -c fast \
		>>"$work/pg.log" 2>&1
	pg_conninfo "$pg_root/standby" "$primary" "${modes[0]}"
	pg_start "$pg_root/standby" "$standby"
	pg_check_durable "$primary"
	pg_check_durable "$standby"
	[[ $(pg_sql "$standby" "SELECT pg_is_in_recovery()") == t ]] || {
		echo "postgresql on $standby is not a standby" >&2
		exit 1
	}
	for mode in "${modes[@]}"; do
		pg_conninfo "$pg_root/standby" "$primary" "$mode"
		pg_wait_sync "$primary" "$mode"
		dsn="postgres://postgres@127.0.0.1:$primary/postgres?sslmode=$(pg_sslmode "$mode")"
		pids="$(pg_pid "$pg_root/primary"),$(pg_pid "$pg_root/standby")"
		pg_reset "$primary"
		step "postgresql $pgver, primary + sync standby, default mix, TLS $mode"
		"$work/peerbench" -system postgres -nodes 2 -dsn "$dsn" -cpu-pids "$pids" -label "$(label "$pg_standby_label" "$mode")" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		pg_wait_sync "$primary" "$mode" # still synchronous at the end of the cells
		if ! skip reserve-mix; then
			pg_reset "$primary"
			step "postgresql, primary + sync standby, reserve mix, TLS $mode"
			"$work/peerbench" -system postgres -nodes 2 -dsn "$dsn" -cpu-pids "$pids" -label "$(label "$pg_standby_label" "$mode")" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
			pg_wait_sync "$primary" "$mode"
		fi
	done
	pg_stop "$pg_root/standby"
	pg_stop "$pg_root/primary"
fi

if ! skip recovery; then
	# The recovery cell runs in the first TLS setting only.
	mode=${modes[0]}
	base=$(portbase 18000 "$mode")
	step "recovery: one ledgerd node with $RECOVERY_LIVE live reservations, TLS $mode"
	agents_start 1 "$base" "$mode"
	pid=${agent_pid[1]}
	rss0=$(rss_kib "$pid")
	"$work/loadgen" "${loadgen_flags[@]}" -system ledgerd -addrs "$addrs" "${client_tls[@]}" -cpu-pids "$(agent_pids)" -label "1 node, recovery" -mix reserve -clients 64 \
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
