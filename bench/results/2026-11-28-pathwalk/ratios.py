#!/usr/bin/env python3
# Per-run ratios of go-schedule's rows to the runtime's row of the same
# benchmark and size, in the same binary run (each -test.count 1 run is
# one round), so that machine load that slows both sides cancels out.
# Prints, per row, the median ratio before and after, and after/before.
import re, statistics, sys
def runs(path):
    out, cur = [], None
    for line in open(path):
        if line.startswith('goos:'):
            cur = {}; out.append(cur)
        m = re.match(r'(Benchmark\S+)-\d+\s+\d+\s+([\d.]+) ns/op', line)
        if m and cur is not None:
            cur[m.group(1)] = float(m.group(2))
    return out
def ratios(path):
    rs = {}
    for run in runs(path):
        for name, v in run.items():
            if name.endswith('/runtime'):
                continue
            base = re.sub(r'/(lazy|eager)$', '/runtime', name)
            if base in run:
                rs.setdefault(name, []).append(v / run[base])
    return rs
b, a = ratios(sys.argv[1]), ratios(sys.argv[2])
print(f"{'row':48} {'before/runtime':>15} {'after/runtime':>15} {'after/before':>13}  n")
for name in sorted(b):
    if name not in a: continue
    mb, ma = statistics.median(b[name]), statistics.median(a[name])
    print(f"{name:48} {mb:15.3f} {ma:15.3f} {ma/mb:13.3f}  {len(b[name])},{len(a[name])}")
