#!/bin/bash
# The scale phase of jobload (1,000,000 pending jobs, 3 workers), the jobs
# module before (A) and after (B) the change, interleaved, two rounds each.
# A and B are checkouts of the two commits; jobload is built from B's
# jobs/cmd/jobload (go build -o jobload .).
for r in 1 2; do
  for v in A B; do
    echo "== round $r $v $(uptime)" >> log.txt
    ./jobload -jobs "$v/jobs" -systems jobs -phases scale -out "out-$v-$r" > "scale-$v-$r.txt" 2> "progress-$v-$r.txt"
    grep -E "worker memory|engine store|quiet: engine msgs in" "scale-$v-$r.txt" >> log.txt
  done
done
