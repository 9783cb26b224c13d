import sys, subprocess, re, collections
jobs = float(sys.argv[1])
tot = collections.Counter()
def unit(s):
    m = re.match(r'([\d.]+)(ms|s|us|µs|ns)', s)
    return float(m.group(1)) * {'s':1e6,'ms':1e3,'us':1,'µs':1,'ns':1e-3}[m.group(2)]
RULES = [
 ('GC (background mark, sweep)', ('runtime.gcBgMarkWorker','runtime.bgsweep','runtime.bgscavenge')),
 ('direct gets (the fire\'s read)', ('getDirectRequest','processDirectGet')),
 ('stream writes: store, history-1 removal, purge', ('processJetStreamMsg','(*stream).internalLoop')),
 ('watch deliveries: consumer scan + send', ('(*consumer).',)),
 ('client reads: parse, route publishes/acks', ('(*client).readLoop','processInboundClientMsg')),
 ('client writes: flush to sockets', ('(*client).writeLoop','flushOutbound')),
]
for p in sys.argv[2:]:
    out = subprocess.run(['go','tool','pprof','-traces',p],capture_output=True,text=True).stdout
    for block in out.split('-----------+-------------------------------------------------------')[1:]:
        lines = [l for l in block.strip('\n').split('\n') if l.strip()]
        while lines and not re.match(r'\s*[\d.]+(ms|s|us|µs|ns)\s', lines[0]): lines = lines[1:]
        if not lines: continue
        first = lines[0].split(); v = unit(first[0])
        frames = [first[1]] + [l.strip().split()[0] for l in lines[1:]]
        cat = 'Go runtime (scheduler, netpoll, timers), other'
        for name, pats in RULES:
            if any(pt in f for f in frames for pt in pats): cat = name; break
        tot[cat] += v
s = sum(tot.values())
for k,v in sorted(tot.items(), key=lambda kv:-kv[1]):
    print(f'{k:50s} {v/jobs:8.1f} µs/job  {100*v/s:5.1f}%')
print(f'{"total (profile)":50s} {s/jobs:8.1f} µs/job')
