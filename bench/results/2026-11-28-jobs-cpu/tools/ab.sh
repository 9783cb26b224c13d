#!/bin/bash
# ab.sh TAG ORDER... : runs the stream phase once per letter, in the order given: A the jobs module before (6819d58),
# K at 985bbd4, B or C the module checked out here, Q asynq + Redis; OUT, JOBS* stand for local directories
R=OUT; TAG=$1; shift
cd JOBS/cmd/jobload
n=0
for s in "$@"; do
  n=$((n+1))
  SYS=jobs
  if [ $s = A ]; then J=JOBS_BEFORE; elif [ $s = K ]; then J=JOBS_KEEP; else J=JOBS; fi
  if [ $s = Q ]; then SYS=asynq; fi
  echo "== run $n: $s, loadavg before: $(cat /proc/loadavg)" >> $R/$TAG.log
  go run . -jobs $J -systems $SYS -phases stream -rate ${RATE:-2000} -stream ${DUR:-20s} -out $R/$TAG-$n-$s > $R/$TAG-$n-$s.out 2> $R/$TAG-$n-$s.err
  echo "exit $? loadavg after: $(cat /proc/loadavg)" >> $R/$TAG.log
  grep -E "lateness p50|lateness p99|CPU per|engine's|msgs per|started / due|started again" $R/$TAG-$n-$s.out >> $R/$TAG.log
done
