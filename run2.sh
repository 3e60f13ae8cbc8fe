#!/bin/bash
set -u
L=/tmp/L; mkdir -p $L
AB_TIMEOUT=60 AB_TRACE=$L/trace bash bench/tools/ab_run.sh 200 > $L/ab.txt 2>&1
echo "ab rc $?" >> $L/ab.txt
mkdir -p build/abm; mv build/ab/main build/abm/
AB_RACE_CASES="t63 packed-30-random fused-tails-3" timeout 330 bash bench/tools/ab_check.sh $L/check > $L/check.txt 2>&1; echo "check rc $?" >> $L/check.txt
tar czf $OUT/logs.tgz -C /tmp L
