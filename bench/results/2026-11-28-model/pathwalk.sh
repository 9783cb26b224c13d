#!/usr/bin/env bash
# Interleaved in-package benchmarks for the path walk change: before (4bb7543,
# main) against after (the owner pulling requests from the inbox).
cd "$(dirname "$0")"
P='BenchmarkReset$/pending=1M|BenchmarkScheduleOne$/pending=1M|BenchmarkScheduleOneCancelTask$/pending=1M|BenchmarkCancelTask$/pending=1M|BenchmarkMemoryAfterHeartbeats|BenchmarkFire$|BenchmarkFireSparse'
R=${ROUNDS:-6}
echo "pathwalk start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "pathwalk round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/pathwalk-$b.test -test.run '^$' -test.bench "$P" -test.count 1 -test.benchmem >> pathwalk-$b.txt 2>&1
  done
done
echo "pathwalk end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
