#!/usr/bin/env bash
# compute-sanitizer's four tools over the small GPU cases (tails, several
# chunks, packed batches with a 1-token sequence, GQA, GVA, optional inputs)
# and a short stress run. Logs in $1 (default build/sanitize-logs); the
# test binaries from GPU_TEST_BIN (default build/tests), as in run_all.sh.
set -uo pipefail
out=${1:-build/sanitize-logs}
bin=${GPU_TEST_BIN:-build/tests}
mkdir -p "$out"
rc=0
# Each filter matches one small case of tests/gpu/gdn_cases.c exactly.
cases=${SANITIZE_CASES:-t63 t65 t129 gqa-16-4-4 gva-4-4-16 alpha-absent final-without-initial}
tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
for tool in $tools; do
  for c in $cases; do
    log="$out/$tool-$c.log"
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$bin/gpu_gdn" 0x5eed "$c" >"$log" 2>&1
    r=$?
    echo "$tool $c: exit $r, $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)"
    [ $r -eq 0 ] || rc=1
  done
  log="$out/$tool-safety.log"
  compute-sanitizer --tool "$tool" --error-exitcode 3 "$bin/gpu_safety" 0x5afe 100 256 >"$log" 2>&1
  r=$?
  echo "$tool safety (100 calls): exit $r, $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)"
  [ $r -eq 0 ] || rc=1
done
exit $rc
