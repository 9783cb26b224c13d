import json,glob,statistics as st
from collections import defaultdict
for side in ('before','after'):
    d=defaultdict(list); p99=defaultdict(list)
    for f in sorted(glob.glob(f'dense-{side}-*/results.json')):
        for r in json.load(open(f))['runs']:
            if 'metrics' in r: d[r['impl']].append(r['metrics']['cpu_ns_job']); p99[r['impl']].append(r['metrics']['late_p99_ms'])
    print(side, {i:(len(v), round(st.median(v)), round(min(v)), round(max(v))) for i,v in d.items()}, 'p99', {i:round(st.median(v),2) for i,v in p99.items()})

# Mann-Whitney U, normal approximation, two-sided.
import math
def mw(a,b):
    allv=sorted([(x,0) for x in a]+[(x,1) for x in b])
    ranks={};i=0
    while i<len(allv):
        j=i
        while j<len(allv) and allv[j][0]==allv[i][0]: j+=1
        for k in range(i,j): ranks[k]=(i+j+1)/2
        i=j
    ra=sum(ranks[k] for k,(x,s) in enumerate(allv) if s==0)
    n1,n2=len(a),len(b); u=ra-n1*(n1+1)/2; mu=n1*n2/2; sd=math.sqrt(n1*n2*(n1+n2+1)/12)
    z=(u-mu)/sd; return 2*(1-0.5*(1+math.erf(abs(z)/math.sqrt(2))))
def vals(side,impl,k):
    out=[]
    for f in sorted(glob.glob(f'dense-{side}-*/results.json')):
        for r in json.load(open(f))['runs']:
            if 'metrics' in r and r['impl']==impl: out.append(r['metrics'][k])
    return out
for impl in ('lazycancel','eagercancel','runtime'):
    for k in ('cpu_ns_job','late_p99_ms'):
        print(impl,k,'p=%.2f'%mw(vals('before',impl,k),vals('after',impl,k)))
