import re,sys,statistics as st
from collections import defaultdict
def load(p):
    runs=[];cur={}
    for line in open(p):
        if line.startswith('goos:') and cur: runs.append(cur);cur={}
        m=re.match(r'Benchmark(\S+?)/(?:(pending=1M)/)?(lazy|eager|runtime)-2\s+\d+\s+(.*)',line)
        if not m: continue
        name,_,impl,rest=m.groups()
        vals=dict((u,float(v)) for v,u in re.findall(r'([\d.]+) (\S+)',rest))
        cur[(name,impl)]=vals
    if cur: runs.append(cur)
    return runs
runs=load(sys.argv[1])
print(len(runs),'runs')
rows=[('Reset','ns/op'),('ScheduleOne','ns/op'),('ScheduleOneCancelTask','ns/op'),('CancelTask','ns/op'),('Fire','ns/task'),('FireSparse','cpu-ns/job'),('FireSparse','late-p99-µs'),('MemoryAfterHeartbeats','B/device'),('MemoryAfterHeartbeats','entries/live')]
for name,u in rows:
    med={}
    for impl in ('lazy','eager','runtime'):
        xs=[r[(name,impl)][u] for r in runs if (name,impl) in r and u in r[(name,impl)]]
        med[impl]=st.median(xs) if xs else None
    out=f'{name:24s} {u:14s} '+' '.join(f'{impl}={med[impl]:.4g}' if med[impl] is not None else f'{impl}=-' for impl in med)
    if med['runtime'] is not None:
        for impl in ('lazy','eager'):
            rs=[r[(name,impl)][u]/r[(name,'runtime')][u] for r in runs]
            out+=f'  {impl}/rt {st.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})'
    print(out)
