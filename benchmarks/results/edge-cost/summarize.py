import json, os, sys, statistics as st
# Tables of the A/B runs: python3 summarize.py ab/A1 ab/B1 ... (run
# directories with a service.jsonl each; a run whose directory name starts
# with A is main, with B the branch).

def load(runs):
    """The cells of the runs' service.jsonl files, keyed by (system,
    label, mix, clients), and the keys in first-seen order."""
    cells = {}
    order = []
    for r in runs:
        for l in open(os.path.join(r, 'service.jsonl')):
            d = json.loads(l)
            key = (d['system'], d['label'], d['mix'] or 'default', d['clients'])
            if key not in order: order.append(key)
            p50 = {o['op']: o['p50_ms'] for o in d['ops'] if o['ok'] + o['rejected'] > 0}
            cells.setdefault(key, {})[r] = dict(
                ops=d['ops_per_second'], com=d['committed_per_second'],
                cpu_srv=d.get('cpu_servers_us_per_op', 0), cpu_all=d.get('cpu_own_us_per_op', 0) + d.get('cpu_servers_us_per_op', 0),
                p50=p50.get('reserve', 0), load=(d['loadavg_start'] + d['loadavg_end']) / 2)
    return cells, order


def tables(cells, order, runs):
    """Every run's cells, then main's and the branch's means per cell."""
    hdr = '| system | mix | clients | run | ops/s | committed/s | reserve p50 ms | CPU µs/op agents | CPU µs/op all | load |'
    print(hdr); print('|' + '---|' * 10)
    for k in order:
        for r in runs:
            c = cells[k].get(r)
            if not c: continue
            print(f"| {k[0]}, {k[1]} | {k[2]} | {k[3]} | {r} | {c['ops']:,.0f} | {c['com']:,.0f} | {c['p50']:.2f} | {c['cpu_srv']:.0f} | {c['cpu_all']:.0f} | {c['load']:.1f} |")
    # A vs B means
    print()
    print('| system | mix | clients | ops/s main → branch | CPU µs/op agents main → branch (Δ) | CPU µs/op all (Δ) | reserve p50 ms main → branch |')
    print('|' + '---|' * 7)
    for k in order:
        A = [cells[k][r] for r in runs if os.path.basename(r).startswith('A') and r in cells[k]]
        B = [cells[k][r] for r in runs if os.path.basename(r).startswith('B') and r in cells[k]]
        if not A or not B: continue
        m = lambda xs, f: st.mean(x[f] for x in xs)
        def d(f):
            a, b = m(A, f), m(B, f)
            return f"{a:,.0f} → {b:,.0f} ({(b-a)/a*100:+.0f} %)" if a else "—"
        print(f"| {k[0]}, {k[1]} | {k[2]} | {k[3]} | {d('ops')} | {d('cpu_srv') if m(A,'cpu_srv') else '—'} | {d('cpu_all')} | {m(A,'p50'):.2f} → {m(B,'p50'):.2f} |")


def ratios(cells, runs):
    """Ledgerd's throughput and one-client p50 against raw Raft's, per run."""
    # Ratios to raw raft in the same run and TLS setting (the machine's load
    # moves both; the ratio is what the bars use).
    print()
    print('| run | TLS | reserve mix 64: ledgerd ops/s ÷ raw raft | default mix 64: ledgerd ops/s ÷ raw raft | 1 client: reserve p50 ledgerd ÷ raw raft | load |')
    print('|' + '---|' * 6)
    for r in runs:
        for tls, suf in (('on', ''), ('off', ', no TLS')):
            def g(system, mix, clients):
                return cells.get((system, '3 nodes' + suf, mix, clients), {}).get(r)
            rr64, rr1 = g('raw raft', 'reserve', 64), g('raw raft', 'reserve', 1)
            lr64, ld64, lr1 = g('ledgerd', 'reserve', 64), g('ledgerd', 'default', 64), g('ledgerd', 'reserve', 1)
            if not (rr64 and lr64 and ld64 and rr1 and lr1): continue
            print(f"| {r} | {tls} | {lr64['ops']/rr64['ops']*100:.0f} % | {ld64['ops']/rr64['ops']*100:.0f} % | {lr1['p50']:.2f} ÷ {rr1['p50']:.2f} = {lr1['p50']/rr1['p50']:.2f}× | {(lr64['load']+rr64['load'])/2:.1f} |")


if __name__ == '__main__':
    runs = sys.argv[1:]
    cells, order = load(runs)
    tables(cells, order, runs)
    ratios(cells, runs)
