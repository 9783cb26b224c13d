#!/usr/bin/env bash
# Interleaved, the firing anchors alone (BenchmarkFire, BenchmarkFireSparse),
# more rounds than run.sh gives them: before (e52431c) against after
# (beac5d4). Binaries in bin/ (see README.md).
cd "$(dirname "$0")"
R=${ROUNDS:-10}
echo "fire start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "fire round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/$b.test -test.run '^$' -test.bench 'BenchmarkFire$|BenchmarkFireSparse' -test.count 1 -test.benchmem >> fire-$b.txt 2>&1
  done
done
echo "fire end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
