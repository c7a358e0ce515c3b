# Snapshot durations under load in fresh scripts/bench-recovery.sh runs:
# for each file of the agents' "snapshot by log volume taken" lines
# (fresh/<run>-snapshots.log, grepped from the run's agent logs), the
# count and the "took" of those snapshots.
import re, sys, statistics as st
for f in sys.argv[1:]:
    took = [float(v) / (1000 if u == 'ms' else 1)
            for v, u in re.findall(r'snapshot by log volume taken.*?took=([0-9.]+)(m?s)', open(f).read())]
    if took:
        name = f.split('/')[-1].replace('-snapshots.log', '')
        print(f'{name}: {len(took)} snapshots by volume, took median {st.median(took):.2f} s, range {min(took):.2f}-{max(took):.2f} s')
