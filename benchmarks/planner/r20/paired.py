import re,sys,statistics as st
def load(f):
    d={}
    for l in open(f):
        m=re.match(r'(Benchmark\S+)-2\s.*?([\d.]+) ns/op',l)
        c=re.search(r'([\d.]+) cpu-ns/op',l)
        if m: d.setdefault(m.group(1),[]).append(float(c.group(1)) if c else float(m.group(2)))
    return d
b,n=load(sys.argv[1]),load(sys.argv[2])
for k in b:
    r=[y/x for x,y in zip(b[k],n[k])]
    print('%-45s base med %7.1f new med %7.1f  paired median ratio %.3f  new faster %d/%d'%(k,st.median(b[k]),st.median(n[k]),st.median(r),sum(1 for x in r if x<1),len(r)))
