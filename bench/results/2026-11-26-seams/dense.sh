#!/usr/bin/env bash
# fire-dense alone, before against after, 4 interleaved rounds of 3 repetitions each.
cd "$(dirname "$0")"
for r in $(seq ${FROM:-1} ${TO:-4}); do
  if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "dense round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/bench-$b -impl runtime,lazycancel,eagercancel -workload fire-dense -out dense-$b-$r > dense-$b-$r.txt 2> dense-$b-$r.err
  done
done
echo "dense end $(date -u +%FT%TZ)" >> log
