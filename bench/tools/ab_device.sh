#!/bin/bash
# One GPU-machine session of an A/B, in the order that makes its results
# usable: the GPU tests of this checkout's build, every A/B build's tests
# and racecheck, then the A/B itself. Logs under OUTDIR; a summary on
# stdout. Build here first: `make gpu-test` and bench/tools/ab_build.sh.
#   bench/tools/ab_device.sh OUTDIR [ITERS]
# racecheck makes ab_check the long step (tens of seconds a case and
# build): with many builds or a short time limit per command, set
# AB_RACE_CASES to fewer cases or run the steps in separate calls.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [ITERS]" >&2; exit 2; }
out=$1 iters=${2:-200}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
echo "== tests of this build"
timeout 300 bash tests/gpu/run_all.sh "$out/tests" | tee "$out/tests.txt"
echo "== tests of each A/B build"
timeout 900 bash bench/tools/ab_check.sh "$out/ab-check" | tee "$out/ab-check.txt"
echo "== A/B, $iters iterations"
timeout 600 bash bench/tools/ab_run.sh "$iters" >"$out/ab.txt" 2>&1
python3 bench/tools/ab_table.py "$out/ab.txt" | tee "$out/ab-table.md"
