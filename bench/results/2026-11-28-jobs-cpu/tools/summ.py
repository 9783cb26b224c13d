import re, sys, statistics, collections
# summ.py LOG... : one line per run: label, rate, CPU/job, engine µs, workers µs, msgs/job, p50, p99, loadavg before
names = {'A':'before (6819d58)','K':'keep (985bbd4)','B':'keep (985bbd4)','C':'after (2b0cbf1)','Q':'asynq + Redis'}
rows=[]
for log in sys.argv[1:]:
    txt=open(log).read()
    for blk in txt.split('== ')[1:]:
        m=re.match(r'(?:run (\d+): |prof )([A-Z])', blk)
        lab=m.group(2)
        la=re.search(r'loadavg before: ([\d.]+ [\d.]+ [\d.]+)', blk).group(1)
        cpu=float(re.search(r'CPU per started job, workers \+ engine\s+([\d.]+)', blk).group(1))
        eng=float(re.search(r"of which the engine's\s+(\d+)%", blk).group(1))
        msgs=float(re.search(r'engine msgs per job\s+([\d.]+)', blk).group(1))
        p99=re.search(r'lateness p99\s+(\S+)', blk).group(1)
        rate=re.search(r'stream: ([\d,]+)/s', blk); rate = rate.group(1) if rate else '2,000'
        rows.append((log.split('/')[-1].replace('.log',''), lab, rate, cpu, eng, msgs, p99, la))
print(f"{'set':6} {'code':18} {'rate':>6} {'CPU/job':>8} {'engine':>7} {'workers':>8} {'msgs/job':>8} {'p99':>7}  loadavg before")
for s,l,r,c,e,m,p,la in rows:
    print(f"{s:6} {names[l]:18} {r:>6} {c:8.1f} {c*e/100:7.1f} {c*(1-e/100):8.1f} {m:8.1f} {p:>7}  {la}")
by=collections.defaultdict(list)
for s,l,r,c,e,m,p,la in rows: by[(names[l],r)].append((c,c*e/100,c*(1-e/100)))
print()
print(f"{'code':18} {'rate':>6} {'runs':>4} {'median CPU/job':>15} {'engine':>7} {'workers':>8}")
for (n,r),v in sorted(by.items(), key=lambda kv:(kv[0][1],kv[0][0])):
    print(f"{n:18} {r:>6} {len(v):4} {statistics.median(x[0] for x in v):15.1f} {statistics.median(x[1] for x in v):7.1f} {statistics.median(x[2] for x in v):8.1f}")
