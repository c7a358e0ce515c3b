#!/usr/bin/env bash
# Alternated service runs of two trees:
#   ab.sh MAIN_TREE BRANCH_TREE OUTDIR PAIRS [FIRST]
# (FIRST: number of the first pair, to add pairs to an earlier run)
# Pair i runs A (main) then B (branch) when i is odd, B then A when even,
# each as the 64-client cells of scripts/bench-service.sh with TLS on; the
# load average goes into OUTDIR/order.log at each start and end.
set -euo pipefail
a=$1 b=$2 out=$(mkdir -p "$3" && cd "$3" && pwd) pairs=${4:-3} first=${5:-1}
run() { # run SIDE TREE N
	echo "start $1$3 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/order.log"
	(cd "$2" && SKIP='etcd postgres postgres-standby recovery ledgerd-unary ledgerd-nodes' DURATION=5s CLIENTS=64 \
		TLS=on PORT_OFFSET=${PORT_OFFSET:-6100} OUT="$out/$1$3" scripts/bench-service.sh >"$out/$1$3.out" 2>&1) ||
		echo "FAILED $1$3 (its .out says why; its pair is left out)" >>"$out/order.log"
	echo "end $1$3 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/order.log"
}
for i in $(seq "$first" $((first + pairs - 1))); do
	if ((i % 2)); then run A "$a" "$i"; run B "$b" "$i"; else run B "$b" "$i"; run A "$a" "$i"; fi
done
