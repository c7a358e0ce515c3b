#!/usr/bin/env bash
# Restart time and resident memory of a one-node `ledgerd agent` holding
# LIVE reservations:
#
#   1. prefill: LIVE committed reservations written through the agent's own
#      write path in-process (benchmarks/recovery), stopped gracefully. It
#      snapshots only when it stops (an automatic snapshot every 16k entries
#      of a growing ledger would triple its time); the data dir is then what
#      an agent leaves: one snapshot and the trailing log entries;
#   2. first start of the agent on that data dir (restore of the shutdown
#      snapshot), RSS after ready, a short API load, RSS and heap after it;
#   3. graceful restart: SIGTERM (snapshot on shutdown), start, time to ready;
#   4. crash restart: a short load, SIGKILL, start, time to ready (restore of
#      the last automatic snapshot plus replay of the tail).
#
# Each start prints the time from exec to /readyz and the agent's phase
# log lines (since_start: raft.db open, snapshot restore split into reading
# and decoding/rebuilding, election, ready with entries replayed).
#
#   LIVE=100000 scripts/bench-recovery.sh
#   LIVE=1000000 OUT=benchmarks/results/recovery scripts/bench-recovery.sh
#
# The agent runs secured (TLS=on, the default): the prefill and every start
# get the same server certificate, CA, gossip key and tokens file, made
# with `ledgerd tls` and `ledgerd keygen` into the scratch directory, and
# the API is reached over https with the client certificate and token.
# TLS=off runs the prefill and the agent -insecure over plain http, only to
# compare.
# OUT (optional) receives run-LIVE.log, the agent logs and pprof output.
# AGENT_GOMEMLIMIT and AGENT_GOGC (optional) are passed to the agent as
# GOMEMLIMIT and GOGC (the other processes keep the defaults). Other
# agent settings reach it through their LEDGERD_* variables, e.g.
# LEDGERD_SNAPSHOT_LOG_BYTES=4MiB to bound the crash restart's replay or
# LEDGERD_GC_HEADROOM=256MiB; the header line lists every one set.
# RAFT_LOG_STORE (optional: boltdb or wal) is the prefill's and the agent's
# raft_log_store.
# KEEP=DIR saves a copy of the prefilled data dir there; PREFILLED=DIR
# starts from such a copy instead of running the prefill (the addresses
# below are recorded in it), with the prefill's LIVE given again. A copy
# more than an hour old is refused (its bookings have begun, so it no
# longer holds LIVE live reservations) unless PREFILLED_AGED=ok. A copy
# does not measure quite what a fresh run does: a fresh run restarts
# within a minute of its prefill, so its snapshots keep every
# idempotency key (keys younger than a minute outlive the key cap: 1.1M
# at LIVE=1000000), while a copy's load is stamped minutes later and the
# cap trims them (262,144): a smaller snapshot and a faster restart. Use
# copies to compare builds side by side, fresh runs for the figure.
# KEEP_CRASH=DIR saves a copy of the data dir as the SIGKILL left it
# (before the crash restart), to replay its log tail again with
# `restoreprof -replay`; the run ends with one such replay under the CPU
# profiler (replay-cpu-LIVE.top).
set -euo pipefail
cd "$(dirname "$0")/.."
# The agent settings the caller passes (LEDGERD_*), for the header; read
# before secure-lib exports the client's own LEDGERD_ variables.
caller_settings=$(env | grep '^LEDGERD_' | sort | tr '\n' ' ' || true)
if [ -n "${PREFILLED:-}" ] && [ -z "${LIVE:-}" ]; then
	# LIVE sets the load's resources (LIVE/100) and names the outputs: a
	# default that differs from the prefill's would load a tenth of them.
	echo "PREFILLED=$PREFILLED: set LIVE to the prefill's LIVE as well" >&2
	exit 2
fi
LIVE=${LIVE:-100000}
LOAD=${LOAD:-10s}
TLS=${TLS:-on}
if [ -n "${PREFILLED:-}" ]; then
	# The prefill books a horizon starting an hour after it ran; once that
	# hour has passed, reservations begin to end and every restart holds
	# fewer than LIVE live ones (the measured times would look better than
	# they are). The newest snapshot's metadata is written as it stops.
	newest=$(stat -c %Y "$PREFILLED"/snapshots/*/meta.json 2>/dev/null | sort -n | tail -1 || true)
	[ -n "$newest" ] || { echo "PREFILLED=$PREFILLED holds no snapshot" >&2; exit 2; }
	age=$(($(date +%s) - newest))
	if ((age > 3600)) && [[ ${PREFILLED_AGED:-} != ok ]]; then
		echo "PREFILLED=$PREFILLED was made $((age / 60)) min ago: its bookings have begun, so restarts hold fewer than LIVE=$LIVE live reservations; prefill again, or set PREFILLED_AGED=ok to measure it anyway" >&2
		exit 2
	fi
fi
work=$(mktemp -d -t ledgerd-recovery-XXXXXX)
out=${OUT:-$work/out}
mkdir -p "$out"
log="$out/run-$LIVE.log"
: >"$log"
pid=""
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT
say() { echo "$*" | tee -a "$log"; }

go build -tags hashicorpmetrics -o "$work/ledgerd" ./cmd/ledgerd
go build -tags hashicorpmetrics -o "$work/loadgen" ./benchmarks/service/cmd/loadgen
go build -tags hashicorpmetrics -o "$work/prefill" ./benchmarks/recovery/cmd/prefill
go build -tags hashicorpmetrics -o "$work/restoreprof" ./benchmarks/recovery/cmd/restoreprof
# shellcheck source=scripts/secure-lib.sh
source scripts/secure-lib.sh
case $TLS in
on)
	secure_pki "$work/ledgerd" "$work/pki" n1
	secure_args n1
	sec=("${secure_args[@]}")
	# The prefill turns verify-incoming and TLS on the API on with the files.
	prefill_sec=()
	for a in "${sec[@]}"; do [[ $a == -tls-verify-incoming=* || $a == -tls-http=* ]] || prefill_sec+=("$a"); done
	client_tls=(-ca-file "$ca_file" -cert-file "$LEDGERD_CLIENT_CERT" -key-file "$LEDGERD_CLIENT_KEY" -token "$token")
	scheme=https
	;;
off)
	sec=(-insecure) # only to compare with the secured agent
	prefill_sec=(-insecure)
	client_tls=()
	scheme=http
	ca_file="" LEDGERD_CLIENT_CERT="" LEDGERD_CLIENT_KEY=""
	;;
*)
	echo "TLS=$TLS: want on or off" >&2
	exit 2
	;;
esac
# get PATH [CURL ARGS]: GET from the agent's HTTP API.
get() {
	local path=$1
	shift
	if [[ $TLS == on ]]; then api_curl -fs "$@" "$scheme://$http$path"; else curl -fs "$@" "$scheme://$http$path"; fi
}

data="$work/data"
http=127.0.0.1:18201
addrs=(-node-name n1 -data-dir "$data" -http-addr "$http" -raft-addr 127.0.0.1:18211 -gossip-addr 127.0.0.1:18221)
if [ -n "${RAFT_LOG_STORE:-}" ]; then addrs+=(-raft-log-store "$RAFT_LOG_STORE"); fi
resources=$((LIVE / 100 > 8 ? LIVE / 100 : 8))

say "# $(date -u +%FT%TZ) LIVE=$LIVE ${RAFT_LOG_STORE:+RAFT_LOG_STORE=$RAFT_LOG_STORE }${AGENT_GOMEMLIMIT:+GOMEMLIMIT=$AGENT_GOMEMLIMIT }${AGENT_GOGC:+GOGC=$AGENT_GOGC }${caller_settings}commit $(git rev-parse --short HEAD) $(go version | cut -d' ' -f3) $(nproc) cores"
say "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${PREFILLED:-}" ]; then
	cp -a "$PREFILLED" "$data"
	say "prefilled data dir copied from a prefill made $((age / 60)) min ago"
else
	/usr/bin/time -f "prefill process: %e s wall, %U s user, %S s sys, max RSS %M KiB" \
		"$work/prefill" "${addrs[@]}" "${prefill_sec[@]}" -live "$LIVE" -snapshot-interval 1h 2>&1 | grep -v '^prefill: [0-9]*/' | tee -a "$log"
	if [ -n "${KEEP:-}" ]; then cp -a "$data" "$KEEP"; fi
fi
say "data dir: $(du -sh "$data" | cut -f1) ($(du -sh "$data/raft.db" | cut -f1) raft.db,${RAFT_LOG_STORE:+ $(du -sh "$data/wal" 2>/dev/null | cut -f1) wal/,} snapshot $(du -ch "$data"/snapshots/*/state.bin | tail -1 | cut -f1))"

# mem LABEL: VmRSS, RssAnon, RssFile of the agent, its peak resident set
# since it started (VmHWM), and its Go heap. After peak_reset, VmHWM is
# still the peak since the start (the larger of the one before the reset
# and the kernel's since), and "peak since reset" is the kernel's alone.
hwm_before=""
mem() {
	local s hwm
	hwm=$(awk '/^VmHWM:/ {print int($2/1024)}' "/proc/$pid/status")
	s=$(awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s %d MiB  ", $1, $2/1024}' "/proc/$pid/status")
	if [ -n "$hwm_before" ]; then
		s="VmHWM: $((hwm > hwm_before ? hwm : hwm_before)) MiB  $s peak since reset: $hwm MiB  "
	else
		s="VmHWM: $hwm MiB  $s"
	fi
	say "$1: $s heap_inuse $(get /metrics | awk '/^go_memstats_heap_inuse_bytes/ {printf "%d MiB", $2/1048576}')"
}

# peak_reset: the kernel restarts the agent's VmHWM from its current
# resident set (clear_refs 5), so that the next mem also reports the peak
# of what ran in between (the load's own, apart from the restore's).
peak_reset() {
	hwm_before=$(awk '/^VmHWM:/ {print int($2/1024)}' "/proc/$pid/status")
	echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || hwm_before=""
}

cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"; }

# start NAME LABEL: start the agent (log in agent-LIVE-NAME.log), wait for
# /readyz, print the phases.
start() {
	local t0 t1 alog="$out/agent-$LIVE-$1.log"
	shift
	hwm_before=""
	t0=$(date +%s.%N)
	env ${AGENT_GOMEMLIMIT:+GOMEMLIMIT=$AGENT_GOMEMLIMIT} ${AGENT_GOGC:+GOGC=$AGENT_GOGC} \
		"$work/ledgerd" agent "${addrs[@]}" "${sec[@]}" -bootstrap-expect 1 -pprof=true >"$alog" 2>&1 &
	pid=$!
	until get /readyz >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || { cat "$alog"; exit 1; }
		sleep 0.02
	done
	t1=$(date +%s.%N)
	# CPU the agent used to get there (user + system), which the shared
	# machine's load does not inflate the way it inflates wall time.
	say "$1: ready $(echo "$t1 - $t0" | bc) s after exec, $(cpu_s) s CPU (load $(cut -d' ' -f1 /proc/loadavg))"
	grep -E 'msg="(agent starting|opened raft.db|restored snapshot|collected after restore|raft started|became leader|node ready)"' "$alog" |
		sed -E 's/^time=[^ ]*T([^ ]*) level=[A-Z]+ /  \1 /; s/ node=n1 id=[^ ]*//' | tee -a "$log"
}

load() {
	"$work/loadgen" -system ledgerd -addrs "$http" "${client_tls[@]}" -cpu-pids "$pid" -mix reserve -clients 64 -live 2000 \
		-resources "$resources" -duration "$1" -quiet | tail -4 | tee -a "$log"
}

start first "first start (prefill's shutdown snapshot)"
sleep 2
mem "RSS after restore"
peak_reset
load "$LOAD"
mem "RSS after ${LOAD} of load"
get /debug/pprof/heap -o "$out/heap-$LIVE.pb.gz"
go tool pprof -top -inuse_space "$out/heap-$LIVE.pb.gz" 2>/dev/null | head -25 >"$out/heap-$LIVE.top"

t0=$(date +%s.%N)
kill -TERM "$pid"
wait "$pid" || true
say "graceful stop (with shutdown snapshot): $(echo "$(date +%s.%N) - $t0" | bc) s"
start graceful "graceful restart"

load 5s
sleep 1
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
if [ -n "${KEEP_CRASH:-}" ]; then cp -a "$data" "$KEEP_CRASH"; fi
start crash "crash restart (SIGKILL)"
mem "RSS after crash restart"
kill -TERM "$pid"
wait "$pid" || true
pid=""

# Where the restore's CPU goes: the newest snapshot restored in-process
# under the CPU profiler.
"$work/restoreprof" -data-dir "$data" -cpuprofile "$out/restore-cpu-$LIVE.pb.gz" -memprofile "$out/restore-heap-$LIVE.pb.gz" | tee -a "$log"
go tool pprof -top -cum "$out/restore-cpu-$LIVE.pb.gz" 2>/dev/null | head -40 >"$out/restore-cpu-$LIVE.top"
go tool pprof -sample_index=inuse_space -top "$out/restore-heap-$LIVE.pb.gz" 2>/dev/null | head -30 >"$out/restore-heap-$LIVE.top"
if [ -n "${KEEP_CRASH:-}" ]; then
	# Where the crash restart's replay goes: the kept crash dir's log tail
	# replayed in-process under the CPU profiler.
	"$work/restoreprof" -replay -data-dir "$KEEP_CRASH" -cpuprofile "$out/replay-cpu-$LIVE.pb.gz" | tee -a "$log"
	go tool pprof -top -cum "$out/replay-cpu-$LIVE.pb.gz" 2>/dev/null | head -60 >"$out/replay-cpu-$LIVE.top"
fi
say "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
