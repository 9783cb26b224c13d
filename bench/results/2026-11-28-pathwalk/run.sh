#!/usr/bin/env bash
# Interleaved in-package benchmarks for the single-visit path walk: before
# (e52431c, main) against after (this branch). The anchors are those of
# 2026-11-28-model/pathwalk.sh. Binaries are built beforehand into bin/
# (see README.md).
cd "$(dirname "$0")"
P='BenchmarkReset$/pending=1M|BenchmarkScheduleOne$/pending=1M|BenchmarkScheduleOneCancelTask$/pending=1M|BenchmarkCancelTask$/pending=1M|BenchmarkMemoryAfterHeartbeats|BenchmarkFire$|BenchmarkFireSparse'
R=${ROUNDS:-6}
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/$b.test -test.run '^$' -test.bench "$P" -test.count 1 -test.benchmem >> $b.txt 2>&1
  done
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
