#!/bin/bash
# The A/B of bench/tools/ab_build.sh, on the GPU machine: the GDN cases of
# each build, then its C benchmark, the builds taking turns twice so that
# drift shows.   bench/tools/ab_run.sh [ITERS [ROW]]
set -uo pipefail
iters=${1:-200} row=${2:-}
for d in build/ab/*/; do
  echo "== $(basename "$d"): $("$d/gpu_gdn" | tail -1)"
done
for pass in 1 2; do
  for d in build/ab/*/; do
    echo "== pass $pass: $(basename "$d")"
    "$d/gdn_bench" "$iters" $row
  done
done
