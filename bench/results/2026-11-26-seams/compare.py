# Before against after, from the comparative harness's results.json files:
# for each workload and metric, the median over every repetition of both
# rounds of go-schedule's value divided by the runtime's in the same
# repetition, and the after/before ratio of those medians.
import json,glob,statistics as st
from collections import defaultdict
M={'add':['ns_add','ns_pair','bytes_task'],'heartbeat-reset':['ns_hb','cpu_ns_hb'],'heartbeat-canceladd':['ns_hb','cpu_ns_hb'],
   'heartbeat-earlier':['ns_hb','cpu_ns_hb'],'heartbeat-mixed':['ns_hb','cpu_ns_hb'],'fire':['cpu_ns_job','late_p99_ms'],
   'fire-dense':['cpu_ns_job','late_p99_ms'],'burst':['cpu_ns_job','first_late_ms'],'parallel':['ns_add'],'idle':['cpu_s'],
   'keyed-uint64':['ns_beat'],'keyed-string':['ns_beat'],'spike-cancel':['retained_bytes_task'],'spike-fire':['retained_bytes_task']}
def ratios(side):
    out=defaultdict(list); raw=defaultdict(list)
    for f in sorted(glob.glob(f'bench-{side}-*/results.json')):
        runs=json.load(open(f))['runs']
        by={(r['impl'],r['workload'],r['run']):r['metrics'] for r in runs if 'metrics' in r}
        for (impl,w,n),m in by.items():
            if impl=='runtime' or w not in M: continue
            base=by.get(('runtime',w,n))
            for k in M[w]:
                if k in m: raw[(w,impl,k)].append(m[k])
                if base and k in m and k in base and base[k]:
                    out[(w,impl,k)].append(m[k]/base[k])
    return out,raw
b,braw=ratios('before'); a,araw=ratios('after')
print(f"{'workload':20s} {'impl':12s} {'metric':20s} {'before':>8s} {'after':>8s} {'a/b':>6s}   raw before→after")
for key in sorted(set(a)|set(araw)):
    w,impl,k=key
    mb=st.median(b[key]) if b.get(key) else float('nan'); ma=st.median(a[key]) if a.get(key) else float('nan')
    rb=st.median(braw[key]) if braw.get(key) else float('nan'); ra=st.median(araw[key]) if araw.get(key) else float('nan')
    print(f"{w:20s} {impl:12s} {k:20s} {mb:8.3f} {ma:8.3f} {ma/mb if mb==mb and mb else float('nan'):6.2f}   {rb:.4g}→{ra:.4g} (n={len(braw.get(key,[]))}/{len(araw.get(key,[]))})")
