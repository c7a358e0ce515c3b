#!/usr/bin/env bash
# Service benchmark: ledgerd (1/3/5 agents as real processes) against raw
# hashicorp/raft Apply, an embedded 3-member etcd and a local PostgreSQL,
# with the same closed-loop workload (benchmarks/service), one after the
# other on this machine. Then cold start / recovery time and resident memory
# of a one-node ledgerd holding RECOVERY_LIVE reservations.
#
#   scripts/bench-service.sh                 # the whole matrix (about 30 min)
#   DURATION=5s CLIENTS=1,16 scripts/bench-service.sh   # quicker
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
	echo "settings: DURATION=$DURATION LIVE=$LIVE CLIENTS=$CLIENTS RECOVERY_LIVE=$RECOVERY_LIVE"
} >"$out/env.txt"
common=(-live "$LIVE" -duration "$DURATION" -json "$json" -quiet)
step() { echo "== $* (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$log"; }

if ! skip rawraft; then
	step "raw raft, 3 nodes, reserve mix"
	"$work/loadgen" -system rawraft -nodes 3 -mix reserve -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
fi

if ! skip ledgerd; then
	step "ledgerd, 3 nodes, default mix"
	agents_start 3 17500
	"$work/loadgen" -system ledgerd -addrs "$addrs" -cpu-pids "$(agent_pids)" -label "3 nodes" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
	agents_stop
	if ! skip reserve-mix; then
		step "ledgerd, 3 nodes, reserve mix"
		agents_start 3 17600
		"$work/loadgen" -system ledgerd -addrs "$addrs" -cpu-pids "$(agent_pids)" -label "3 nodes" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
		agents_stop
	fi
fi

# The same 64-client cells with one API call per operation (no coalescing
# into Batch calls), for the side-by-side comparison.
if ! skip ledgerd && ! skip ledgerd-unary; then
	step "ledgerd, 3 nodes, default mix, unary client"
	agents_start 3 17650
	"$work/loadgen" -system ledgerd -coalesce=false -addrs "$addrs" -cpu-pids "$(agent_pids)" -label "3 nodes, unary" -clients 64 "${common[@]}" | tee -a "$log"
	agents_stop
	if ! skip reserve-mix; then
		step "ledgerd, 3 nodes, reserve mix, unary client"
		agents_start 3 17680
		"$work/loadgen" -system ledgerd -coalesce=false -addrs "$addrs" -cpu-pids "$(agent_pids)" -label "3 nodes, unary" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
		agents_stop
	fi
fi

if ! skip ledgerd-nodes; then
	for n in 1 5; do
		step "ledgerd, $n nodes, default mix"
		agents_start "$n" $((17700 + 100 * n))
		"$work/loadgen" -system ledgerd -addrs "$addrs" -cpu-pids "$(agent_pids)" -label "$n nodes" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
		agents_stop
	done
fi

if ! skip etcd; then
	step "etcd, 3 members, default mix"
	"$work/peerbench" -system etcd -nodes 3 -dir "$work/etcd" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
	rm -rf "$work/etcd"
	if ! skip reserve-mix; then
		step "etcd, 3 members, reserve mix"
		"$work/peerbench" -system etcd -nodes 3 -port 24790 -dir "$work/etcd2" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
		rm -rf "$work/etcd2"
	fi
fi

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if ! skip postgres && [[ -n "$pgbin" ]]; then
	pgdir=$(mktemp -d -t ledgerd-pg-XXXXXX)
	chown postgres "$pgdir"
	su postgres -c "$pgbin/initdb -D $pgdir/data -U postgres --auth=trust" >"$work/initdb.log"
	su postgres -c "$pgbin/pg_ctl -D $pgdir/data -l $pgdir/pg.log -w start -o '-p 5499 -k $pgdir -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB'" >/dev/null
	step "postgresql $("$pgbin/postgres" --version | awk '{print $3}'), 1 node, default mix"
	"$work/peerbench" -system postgres -dsn "postgres://postgres@127.0.0.1:5499/postgres" -clients "$CLIENTS" "${common[@]}" | tee -a "$log"
	if ! skip reserve-mix; then
		su postgres -c "$pgbin/psql -h $pgdir -p 5499 -U postgres -qc 'DROP TABLE bookings; DROP TABLE resources'" >/dev/null
		step "postgresql, 1 node, reserve mix"
		"$work/peerbench" -system postgres -dsn "postgres://postgres@127.0.0.1:5499/postgres" -mix reserve -clients 64 "${common[@]}" | tee -a "$log"
	fi
fi

if ! skip recovery; then
	step "recovery: one ledgerd node with $RECOVERY_LIVE live reservations"
	agents_start 1 18000
	pid=${agent_pid[1]}
	rss0=$(rss_kib "$pid")
	"$work/loadgen" -system ledgerd -addrs "$addrs" -cpu-pids "$(agent_pids)" -label "1 node, recovery" -mix reserve -clients 64 \
		-live "$RECOVERY_LIVE" -resources $((RECOVERY_LIVE / 100)) -duration 5s -json "$out/recovery.jsonl" -quiet | tee -a "$log"
	rss1=$(rss_kib "$pid")
	du_kib=$(du -sk "$work/data-18000-1" | cut -f1)
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	t0=$(date +%s.%N)
	"$work/ledgerd" agent -node-name n1 -data-dir "$work/data-18000-1" -http-addr 127.0.0.1:18001 \
		-raft-addr 127.0.0.1:18011 -gossip-addr 127.0.0.1:18021 -bootstrap-expect 1 -log-level info \
		>"$work/agent-restart.log" 2>&1 &
	agent_pid=([1]=$!)
	until curl -fs http://127.0.0.1:18001/readyz >/dev/null; do sleep 0.05; done
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
