#!/usr/bin/env bash
# Interleaved in-package benchmarks: before (bc0b72f, 40-byte slots, with
# bench_with_test.go copied in) against after (24-byte slots and argument
# columns). Binaries built beforehand into bin/ with go test -c.
cd "$(dirname "$0")"
P='BenchmarkReset$/pending=1M|BenchmarkScheduleOne$/pending=1M|BenchmarkScheduleOneWith$/pending=1M|BenchmarkScheduleOneCancelTask$/pending=1M|BenchmarkCancelTask$/pending=1M|BenchmarkMemoryPerTask|BenchmarkFire$|BenchmarkFireWith$|BenchmarkFireSparse'
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
