#!/usr/bin/env python3
# The heartbeat demo's runs in heartbeat-before.txt and heartbeat-after.txt
# (extra.sh): per strategy, the process's CPU (user + sys) per heartbeat
# sent, after/before paired by round, and the medians of the detection
# lateness p50 and of the CPU per heartbeat on each side.
import re, statistics
d = {}
for side in ['before', 'after']:
    for blk in open(f'heartbeat-{side}.txt').read().split('== round')[1:]:
        st = re.search(r'strategy (\w+)', blk).group(1)
        hb = int(re.search(r'heartbeats\s+([\d,]+) in', blk).group(1).replace(',', ''))
        m = re.search(r'user ([\d.]+) s, sys ([\d.]+) s', blk)
        p = re.search(r'p50 ([\d.]+)(µs|ms)', blk)
        p50 = float(p.group(1)) * (1000 if p.group(2) == 'ms' else 1)
        ok = re.search(r'result\s+PASS', blk) is not None
        d.setdefault((side, st), []).append(((float(m.group(1)) + float(m.group(2))) / hb * 1e9, p50, ok))
for st in ['lazy', 'eager']:
    b, a = d[('before', st)], d[('after', st)]
    r = [x[0] / y[0] for x, y in zip(a, b)]
    print(f"{st}: runs {len(b)},{len(a)}, all PASS: {all(x[2] for x in a + b)}")
    print(f"  CPU ns/heartbeat, median: before {statistics.median(x[0] for x in b):.0f}, after {statistics.median(x[0] for x in a):.0f}")
    print(f"  after/before by round: {' '.join(f'{x:.2f}' for x in r)}; median {statistics.median(r):.3f}")
    print(f"  detection lateness p50 µs, median: before {statistics.median(x[1] for x in b):.1f}, after {statistics.median(x[1] for x in a):.1f}")
