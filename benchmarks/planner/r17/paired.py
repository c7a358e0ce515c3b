"""Paired ratios of two alternated benchmark logs.

Each log holds rounds that start with a "# " line (the loop writes one per
run), then `go test -bench` output with a cpu-ns/op column. Round i of the
base log and round i of another ran one after the other, so their ratio is
free of the machine's drift between rounds; this prints, per benchmark, the
median of those ratios, their range and how many rounds the other was faster.

    python3 paired.py BASE.txt OTHER.txt [OTHER2.txt ...]
"""
import sys,re,statistics as st
def load(f):
    runs=[];cur=None
    for l in open(f):
        if l.startswith('# '): cur={}; runs.append(cur)
        m=re.match(r'^Benchmark(\S+)-2\s.*?([0-9.]+) cpu-ns/op',l)
        if m and cur is not None: cur[m.group(1)]=float(m.group(2))
    return runs
base=load(sys.argv[1])
for f in sys.argv[2:]:
    other=load(f)
    print(f)
    for k in base[0]:
        r=[o[k]/b[k] for b,o in zip(base,other) if k in b and k in o]
        r.sort()
        wins=sum(1 for x in r if x<1)
        print(f"  {k:45s} median ratio {st.median(r):.3f}  range {r[0]:.2f}-{r[-1]:.2f}  faster in {wins}/{len(r)}")
