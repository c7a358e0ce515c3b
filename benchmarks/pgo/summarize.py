"""Side-by-side summary of agents-ab.sh runs.

    python3 summarize.py RUNS.jsonl [BASE_ARM]

Labels are "arm-pair". For every client count it prints each arm's
median committed reservations/s, servers' CPU per operation and committed
p99 over all its runs, and for each arm beside BASE_ARM (default "off")
the median of the per-pair ratios (runs with the same pair number ran
one after the other).
"""
import json, sys, statistics as st

rows = [json.loads(l) for l in open(sys.argv[1])]
base = sys.argv[2] if len(sys.argv) > 2 else "off"
runs = {}
for r in rows:
    arm, pair = r["label"].rsplit("-", 1)
    runs.setdefault(r["clients"], {}).setdefault(arm, {})[pair] = r
keys = [("committed_per_second", "committed/s", "%.0f"), ("cpu_servers_us_per_op", "servers CPU us/op", "%.0f"),
        ("committed_p99_ms", "p99 ms", "%.1f")]
for c in sorted(runs):
    print(f"clients {c}")
    for arm in sorted(runs[c]):
        rs = runs[c][arm]
        line = "  %-4s n=%d" % (arm, len(rs))
        for k, name, fmt in keys:
            line += f"  {name} " + fmt % st.median(r[k] for r in rs.values())
        if arm != base and base in runs[c]:
            b = runs[c][base]
            pairs = sorted(set(b) & set(rs))
            for k, name, _ in keys[:2]:
                rat = sorted(rs[p][k] / b[p][k] for p in pairs)
                line += f"  | {name} /{base}: median {st.median(rat):.3f} ({rat[0]:.2f}-{rat[-1]:.2f}, {len(rat)} pairs)"
        print(line)
