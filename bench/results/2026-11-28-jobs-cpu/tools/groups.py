import sys, subprocess, re, collections
# usage: groups.py JOBS profiles...   prints µs per job by group
jobs = float(sys.argv[1])
tot = collections.Counter()
def unit(s):
    m = re.match(r'([\d.]+)(ms|s|us|µs|ns)', s)
    v = float(m.group(1)); u = m.group(2)
    return v * {'s':1e6,'ms':1e3,'us':1,'µs':1,'ns':1e-3}[u]
CATS = [
 ('nats-server', lambda f: 'nats-server' in f),
 ('JSON (encoding/json)', lambda f: f.startswith('encoding/json.')),
 ('NATS client (nats.go)', lambda f: 'nats-io/nats' in f or 'nats%2ego' in f),
 ('jobs (worker code)', lambda f: f.startswith('github.com/go-schedule/schedule/jobs.')),
 ('go-schedule + ants', lambda f: f.startswith('github.com/go-schedule/schedule.') or 'panjf2000/ants' in f),
]
for p in sys.argv[2:]:
    out = subprocess.run(['go','tool','pprof','-traces',p],capture_output=True,text=True).stdout
    for block in out.split('-----------+-------------------------------------------------------')[1:]:
        lines = [l for l in block.strip('\n').split('\n') if l.strip()]
        if not lines: continue
        while lines and not re.match(r'\s*[\d.]+(ms|s|us|µs|ns)\s', lines[0]): lines = lines[1:]
        if not lines: continue
        first = lines[0].split()
        v = unit(first[0])
        frames = [first[1]] + [l.strip().split()[0] for l in lines[1:]]
        cat = None
        if any(f in ('runtime.gcBgMarkWorker','runtime.bgsweep','runtime.bgscavenge') for f in frames):
            cat = 'GC (background mark, sweep)'
        elif any('jsonl' in f or f.startswith('main.') for f in frames):
            cat = 'jobworker event lines (stdout)'
        else:
            for f in frames:  # leaf first
                for name, pred in CATS:
                    if pred(f): cat = name; break
                if cat: break
        if cat is None:
            cat = 'Go runtime (scheduler, netpoll, timers)'
        tot[cat] += v
        if any(f in ('runtime.mallocgc','runtime.gcAssistAlloc') for f in frames) and cat != 'GC (background mark, sweep)':
            tot['  (of which allocation: mallocgc, assists)'] += v
s = sum(v for k,v in tot.items() if not k.startswith('  '))
for k,v in sorted(tot.items(), key=lambda kv:-kv[1]):
    print(f'{k:45s} {v/jobs:8.1f} µs/job  {100*v/s:5.1f}%')
print(f'{"total":45s} {s/jobs:8.1f} µs/job')
