#!/usr/bin/env python3
"""Summarize bench-recovery runs of snapshot_log_bytes settings:
one row per run, then the median per setting."""
import re, sys, os, statistics, glob
d = sys.argv[1]
order = [l.split()[-1] for l in open(os.path.join(d, 'order.log')) if not l.strip().endswith(('done', 'prefill'))]
rows = []
for run in order:
    out = open(os.path.join(d, run + '.out')).read()
    loads = re.findall(r'committed reservations (\d+)/s \(p99 ([0-9.]+) ms\)', out)
    crash = float(re.search(r'crash restart \(SIGKILL\): ready ([0-9.]+) s', out).group(1))
    grace = float(re.search(r'graceful restart: ready ([0-9.]+) s', out).group(1))
    hwm = int(re.search(r'RSS after \S+ of load: VmHWM: (\d+) MiB', out).group(1))
    alog = lambda n: open(glob.glob(os.path.join(d, run, 'agent-*-%s.log' % n))[0]).read()
    first, cl = alog('first'), alog('crash')
    # snapshots started while the first start's 10 s load ran: all but the shutdown one
    snaps = first.count('starting snapshot') - first.count('shutdown snapshot taken')
    rep = int(re.search(r'replayed_or_received=(\d+)', cl.split('node ready')[1]).group(1))
    m = re.search(r'since_start=([0-9.]+)s applied=\d+ snapshot_restored=\d+ replayed_or_received=\d+', cl)
    rest = re.search(r'"restored snapshot".*? took=([0-9.]+)s', cl)
    rows.append(dict(run=run, side=run.rsplit('-', 1)[0], c1=int(loads[0][0]), p1=float(loads[0][1]),
                     c2=int(loads[1][0]), p2=float(loads[1][1]), snaps=snaps, grace=grace, crash=crash,
                     rep=rep, restore=float(rest.group(1)), hwm=hwm))
print('| run | load 10 s: committed/s | p99 ms | snapshots in it | load 5 s: committed/s | p99 ms | graceful restart s | crash restart s | restore s | entries replayed | VmHWM after load MiB |')
print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
for r in rows:
    print('| {run} | {c1} | {p1} | {snaps} | {c2} | {p2} | {grace:.2f} | {crash:.2f} | {restore:.2f} | {rep} | {hwm} |'.format(**r))
print()
print('| setting | runs | median load 10 s committed/s | median p99 ms | median crash restart s | max crash restart s | median graceful s |')
print('|---|---:|---:|---:|---:|---:|---:|')
sides = []
for r in rows:
    if r['side'] not in sides:
        sides.append(r['side'])
for s in sides:
    rs = [r for r in rows if r['side'] == s]
    med = lambda k: statistics.median(r[k] for r in rs)
    print('| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f |' % (s, len(rs), med('c1'), med('p1'), med('crash'), max(r['crash'] for r in rs), med('grace')))
