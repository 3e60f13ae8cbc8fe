#!/bin/bash
set -u
L=/tmp/L; mkdir -p $L
AB_TIMEOUT=60 AB_TRACE=$L/trace bash bench/tools/ab_run.sh 200 > $L/ab.txt 2>&1
echo "ab rc $?" >> $L/ab.txt
mkdir -p build/abx; mv build/ab/main build/ab/wip-prep5 build/ab/wip-lanes-prep5 build/abx/
AB_RACE_CASES="packed-30-random packed-200-random" timeout 200 bash bench/tools/ab_check.sh $L/check > $L/check.txt 2>&1; echo "check rc $?" >> $L/check.txt
tar czf $OUT/logs.tgz -C /tmp L
