#!/usr/bin/env python3
# ratios.py for another metric of the benchmark lines: per-run ratios of
# go-schedule's rows to the runtime's row of the same benchmark in the same
# run, for the metric named by its unit (e.g. cpu-ns/job), and the median
# over the runs, before and after.
#   python3 metric_ratios.py before.txt after.txt cpu-ns/job
import re, statistics, sys
unit = sys.argv[3]
def runs(path):
    out, cur = [], None
    for line in open(path):
        if line.startswith('goos:'):
            cur = {}; out.append(cur)
        m = re.match(r'(Benchmark\S+)-\d+\s+\d+\s+(.*)$', line)
        if m and cur is not None:
            v = re.search(r'([\d.]+) ' + re.escape(unit) + r'(\s|$)', m.group(2))
            if v:
                cur[m.group(1)] = float(v.group(1))
    return out
def ratios(path):
    rs = {}
    for run in runs(path):
        for name, v in run.items():
            if name.endswith('/runtime'):
                continue
            base = re.sub(r'/(lazy|eager)$', '/runtime', name)
            if base in run and run[base] > 0:
                rs.setdefault(name, []).append(v / run[base])
    return rs
b, a = ratios(sys.argv[1]), ratios(sys.argv[2])
print(f"{unit}: {'row':40} {'before/runtime':>15} {'after/runtime':>15} {'after/before':>13}  n")
for name in sorted(b):
    if name not in a: continue
    mb, ma = statistics.median(b[name]), statistics.median(a[name])
    print(f"{name:48} {mb:15.3f} {ma:15.3f} {ma/mb:13.3f}  {len(b[name])},{len(a[name])}")
