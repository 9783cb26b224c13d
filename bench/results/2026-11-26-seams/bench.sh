#!/usr/bin/env bash
# bench/ (the comparative harness), go-schedule's rows and the runtime's, before (0ae847c) and after (5d8d6c8), interleaved.
cd "$(dirname "$0")"
for r in 1 2; do
  if [ $r -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    echo "bench round $r $b $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> log
    ./bin/bench-$b -impl runtime,lazycancel,eagercancel -out bench-$b-$r > bench-$b-$r.txt 2> bench-$b-$r.err
  done
done
echo "bench end $(date -u +%FT%TZ)" >> log
