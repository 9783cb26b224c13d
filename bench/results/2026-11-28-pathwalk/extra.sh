#!/usr/bin/env bash
# Interleaved, before (e52431c) against after: the owner alone popping due
# tasks (BenchmarkOwner/fire, 1M pending), and the heartbeat demo, whose
# postponed deadlines the owner fixes as they come near the top (the
# Reset-heavy path: pop and push back where it used to fix the top in
# place), with the process's CPU from /usr/bin/time. Binaries in bin/
# (see README.md).
cd "$(dirname "$0")"
R=${ROUNDS:-4}
echo "extra start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "extra round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/$b.test -test.run '^$' -test.bench 'Owner/fire' -test.benchtime 1000000x -test.count 1 -test.benchmem >> owner-$b.txt 2>&1
    for st in lazy eager; do
      echo "== round $r strategy $st" >> heartbeat-$b.txt
      # The report on standard output, then the time line (progress on
      # standard error is dropped).
      /usr/bin/time -a -o heartbeat-$b.txt -f 'time: user %U s, sys %S s, elapsed %e s, max rss %M KB' \
        ./bin/heartbeat-$b -devices 100000 -duration 10s -strategy $st >> heartbeat-$b.txt 2>/dev/null
    done
  done
done
echo "extra end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
