#!/usr/bin/env bash
# The CancelTask rows again, interleaved, before (77792df) against the
# final commit (e9af85c, the rebuild's keep function inlined), 6 rounds.
cd "$(dirname "$0")"
P='BenchmarkCancelTask$/pending=1M|BenchmarkScheduleOneCancelTask$/pending=1M'
echo "cancel start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) -eq 1 ]; then order="before final"; else order="final before"; fi
  for b in $order; do
    echo "cancel round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/$b.test -test.run '^$' -test.bench "$P" -test.count 1 -test.benchmem >> cancel-$b.txt 2>&1
  done
done
echo "cancel end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
