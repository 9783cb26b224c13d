#!/usr/bin/env bash
# Interleaved, the owner alone on a heap of 1,000,000: BenchmarkOwner/fix
# (postponed entries put back as they come near the top) and Owner/look (a
# pass whose earliest entry is live and not due). before-owner.test is
# e52431c with this branch's owner_bench_test.go, which adds the two
# benchmarks and changes nothing else; after-owner.test is the branch.
cd "$(dirname "$0")"
R=${ROUNDS:-6}
echo "owner start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "owner round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/$b-owner.test -test.run '^$' -test.bench 'Owner/(fix|look)' -test.benchtime 1000000x -test.count 1 -test.benchmem >> owner-fix-$b.txt 2>&1
  done
done
echo "owner end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
