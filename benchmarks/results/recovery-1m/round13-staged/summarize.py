import re,sys,glob,statistics as st
rows=[]
for f in sys.argv[1:]:
    s=open(f).read()
    name=f.split('/')[-1].replace('.log','')
    out={'run':name}
    for label,key in [('first start','first'),('graceful restart','graceful'),('crash restart','crash')]:
        m=re.search(label+r'[^:]*: ready ([0-9.]+) s after exec, ([0-9.]+) s CPU',s)
        if m: out[key]=float(m.group(1)); out[key+'_cpu']=float(m.group(2))
    rs=re.findall(r'took=([0-9.]+)(m?s) .*?before_calls=([0-9.]+)(m?s) stage_calls="\[([^ ]+) ([^\]]+)\]"(?: collect_between=([0-9.]+)(m?s))? after_calls=([0-9.]+)(m?s)',s)
    def sec(v,u): return float(v)/(1000 if u=='ms' else 1)
    def sec2(x):
        m=re.match(r'([0-9.]+)(ms|s)',x); return sec(m.group(1),m.group(2))
    out['restores']=[sec(r[0],r[1]) for r in rs]
    out['call1']=[sec2(r[4]) for r in rs]; out['call2']=[sec2(r[5]) for r in rs]
    out['replayed']=re.findall(r'replayed_or_received=(\d+)',s)
    out['hwm']=re.findall(r'RSS after (?:restore|crash restart): VmHWM: (\d+)',s)
    out['loadpeak']=re.findall(r'peak since reset: (\d+)',s)
    out['commit']=re.findall(r'committed reservations (\d+)/s',s)
    rows.append(out)
for o in rows:
    print(o['run'], 'first %.2f graceful %.2f crash %.2f'%(o.get('first',0),o.get('graceful',0),o.get('crash',0)),
      'cpu %.2f/%.2f/%.2f'%(o.get('first_cpu',0),o.get('graceful_cpu',0),o.get('crash_cpu',0)),
      'restore', ' '.join('%.2f'%x for x in o['restores']), 'call1',' '.join('%.2f'%x for x in o['call1']),'call2',' '.join('%.2f'%x for x in o['call2']),
      'replayed',','.join(o['replayed']),'hwm',','.join(o['hwm']),'peak',','.join(o['loadpeak']),'commit/s',','.join(o['commit']))
