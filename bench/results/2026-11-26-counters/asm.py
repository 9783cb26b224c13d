"""Compares two `go build -gcflags=-S` listings function by function.

Each function's instructions are kept without their offsets, file names and
line numbers, so that moving code between files of a package, which changes
only those, compares equal.
"""
import re
import sys


def functions(path):
    funcs, cur = {}, None
    for line in open(path):
        m = re.match(r"^(\S+) STEXT", line)
        if m:
            cur = m.group(1)
            funcs[cur] = [re.sub(r"size=\d+ ", "", line)]
        elif cur and line.startswith("\t0x"):
            funcs[cur].append(re.sub(r"^\t0x[0-9a-f]+ \d+ \([^)]*\)\t", "", line))
        elif re.match(r"^\S", line):
            cur = None
    return funcs


a, b = functions(sys.argv[1]), functions(sys.argv[2])
only = sorted(set(a) ^ set(b))
differ = sorted(f for f in set(a) & set(b) if a[f] != b[f])
print(f"functions: {len(a)} before, {len(b)} after")
print(f"instructions: {sum(len(v) - 1 for v in a.values())} before, {sum(len(v) - 1 for v in b.values())} after")
print(f"in one listing only: {only or 'none'}")
print(f"compiled differently: {differ or 'none'}")
