import importlib.util, os, statistics as st, sys
# Tables of the A/B runs: python3 summarize.py ab/A1 ab/B1 ... (run
# directories with a service.jsonl each; a directory whose name starts with
# A is main, with B the branch). The per-run and per-cell tables are
# ../edge-cost/summarize.py's; the ratio table has no one-client column
# (these runs have 64-client cells only).
_spec = importlib.util.spec_from_file_location(
    'edge_cost_summarize', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'edge-cost', 'summarize.py'))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
runs = sys.argv[1:]
cells, order = common.load(runs)
common.tables(cells, order, runs)

# Ratios to raw raft in the same run and TLS setting (the machine's load
# moves both; the ratio is what the bars use).
print()
print('| run | reserve mix 64: ledgerd ops/s ÷ raw raft | default mix 64: ledgerd ops/s ÷ raw raft | load |')
print('|' + '---|' * 4)
for r in runs:
    def g(system, mix, clients):
        return cells.get((system, '3 nodes', mix, clients), {}).get(r)
    rr64, lr64, ld64 = g('raw raft', 'reserve', 64), g('ledgerd', 'reserve', 64), g('ledgerd', 'default', 64)
    if not (rr64 and lr64 and ld64): continue
    print(f"| {r} | {lr64['ops']/rr64['ops']*100:.0f} % | {ld64['ops']/rr64['ops']*100:.0f} % | {(lr64['load']+rr64['load'])/2:.1f} |")

# Pairs: branch ÷ main of the agents' CPU per operation, run by run (a
# pair is A<i> and B<i>, run back to back).
print()
print('| cell | ' + ' | '.join(f'pair {os.path.basename(r)[1:]}' for r in runs if os.path.basename(r).startswith('A')) + ' | median | mean |')
print('|' + '---|' * (3 + sum(1 for r in runs if os.path.basename(r).startswith('A'))))
for k in order:
    if k[0] != 'ledgerd': continue
    ratios = []
    for r in runs:
        if not os.path.basename(r).startswith('A'): continue
        rb = os.path.join(os.path.dirname(r), 'B' + os.path.basename(r)[1:])
        A, B = cells[k].get(r), cells[k].get(rb)
        if A and B and A['cpu_srv']:
            ratios.append(B['cpu_srv'] / A['cpu_srv'])
    if ratios:
        print(f"| {k[2]} mix, {k[3]} clients, CPU µs/op agents, branch ÷ main | " + ' | '.join(f'{x:.3f}' for x in ratios) + f" | {st.median(ratios):.3f} | {st.mean(ratios):.3f} |")
