#!/bin/bash
# One GPU-machine session of an A/B, within one call of at most 600 s: the
# GPU tests of this checkout's build, then the A/B itself (ab_run.sh runs
# each build's GDN cases first, then its C benchmark in two passes, then
# its timelines under OUTDIR/trace if its gdn_bench has --trace), the table,
# and last, with what time is left, each A/B build's dispatch, safety and
# binding tests and racecheck (ab_check.sh). Logs under OUTDIR; a summary
# on stdout. Build here first: `make gpu-test` and bench/tools/ab_build.sh.
#   bench/tools/ab_device.sh OUTDIR [ITERS]
# AB_RACE_CASES narrows racecheck (default in ab_check.sh); with more than
# three or four builds, give ab_check.sh a call of its own. With AB_PACK=FILE
# (outside OUTDIR) the logs end packed into FILE (.tgz) and OUTDIR is
# removed, for a machine that returns a folder's files only up to some
# count (the timelines alone are three a build).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [ITERS]" >&2; exit 2; }
out=$1 iters=${2:-200}
mkdir -p "$out"
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
echo "== tests of this build"
timeout 150 bash tests/gpu/run_all.sh "$out/tests" | tee "$out/tests.txt"
echo "== A/B, $iters iterations (t=$SECONDS s)"
AB_TRACE="$out/trace" timeout 300 bash bench/tools/ab_run.sh "$iters" >"$out/ab.txt" 2>&1
grep -E "^== (.*: gdn cases|trace)" "$out/ab.txt"
python3 bench/tools/ab_table.py "$out/ab.txt" | tee "$out/ab-table.md"
left=$((560 - SECONDS))
if [ "$left" -gt 30 ]; then
  echo "== tests of each A/B build, $left s left"
  timeout "$left" bash bench/tools/ab_check.sh "$out/ab-check" | tee "$out/ab-check.txt"
else
  echo "== no time left for bench/tools/ab_check.sh: run it in a call of its own"
fi
if [ -n "${AB_PACK:-}" ]; then
  tar -czf "$AB_PACK" -C "$out" . && rm -rf "$out" && echo "== logs packed into $AB_PACK"
fi
