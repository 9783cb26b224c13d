#!/usr/bin/env bash
# Interleaved in-package benchmarks: before (77792df) against after (61162f0).
cd "$(dirname "$0")"
P='BenchmarkReset$/pending=1M|BenchmarkScheduleOne$/pending=1M|BenchmarkScheduleOneCancelTask$/pending=1M|BenchmarkCancelTask$/pending=1M|BenchmarkMemoryAfterHeartbeats|BenchmarkFire$|BenchmarkFireSparse'
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/$b.test -test.run '^$' -test.bench "$P" -test.count 1 -test.benchmem >> $b.txt 2>&1
  done
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
