import re,glob,statistics,os,sys
def parse(d):
    out={}
    for f in sorted(glob.glob(d+'/[AB]-*.txt')):
        side,idx=os.path.basename(f)[:-4].split('-')
        txt=open(f).read()
        cells=re.findall(r'coalesced client: (\d+) clients.*?mix (\w+),.*?\ntotal (\d+) ops/s, committed reservations (\d+)/s \(p99 ([\d.]+) ms\), acceptance ([\d.]+)%\nCPU per operation: (\d+) us',txt,re.S)
        for c,mix,ops,com,p99,acc,cpu in cells:
            out.setdefault((mix,int(c)),{}).setdefault(side,{})[int(idx)]=(int(com),int(ops),float(p99),int(cpu),float(acc))
    return out
d=sys.argv[1]
res=parse(d)
print("| mix | clients | A committed/s (each pair) | B committed/s | B/A per pair | median A → B | CPU µs/op median A → B | committed p99 ms median A → B | acceptance |")
print("|---|---:|---|---|---|---|---|---|---|")
for k in sorted(res):
    A,B=res[k].get('A',{}),res[k].get('B',{})
    pairs=sorted(set(A)&set(B))
    if not pairs: continue
    ratios=[B[i][0]/A[i][0] for i in pairs]
    med=lambda s,j: statistics.median([s[i][j] for i in pairs])
    accs=[s[i][4] for s in (A,B) for i in pairs]
    print(f"| {k[0]} | {k[1]} | {', '.join(str(A[i][0]) for i in pairs)} | {', '.join(str(B[i][0]) for i in pairs)} | {', '.join(f'{r:.2f}' for r in ratios)} | {med(A,0):.0f} → {med(B,0):.0f} ({med(B,0)/med(A,0):.2f}) | {med(A,3):.0f} → {med(B,3):.0f} | {med(A,2):.1f} → {med(B,2):.1f} | {min(accs):.1f}–{max(accs):.1f} % |")
