#!/bin/bash
# The GPU tests of every build that bench/tools/ab_build.sh left in build/ab,
# on the GPU machine, before any of them is measured or merged: the GDN
# cases, dispatch, safety, the Python binding (on that build's libgdn.so)
# and racecheck on small cases, one log per test in LOGDIR (default
# build/ab-logs), a summary line per test on stdout. The probes do not
# depend on the build's GDN kernels: tests/gpu/run_all.sh runs them.
#   bench/tools/ab_check.sh [LOGDIR]
set -uo pipefail
out=${1:-build/ab-logs}
cases=${AB_RACE_CASES:-t63 t129 fused-tails-3}
rc=0
for d in build/ab/*/; do
  b=$(basename "$d")
  mkdir -p "$out/$b"
  check() { # name, command...
    local name=$1
    shift
    timeout 300 "$@" >"$out/$b/$name.log" 2>&1
    local r=$?
    echo "$b $name: exit $r, $(grep -E 'passed|SUMMARY' "$out/$b/$name.log" | tail -1)"
    [ $r -eq 0 ] || rc=1
  }
  check gdn "$d/gpu_gdn"
  check dispatch "$d/gpu_dispatch"
  check safety "$d/gpu_safety"
  GDNGEN_LIB="$d/libgdn.so" PYTHONPATH=runtime/python${PYTHONPATH:+:$PYTHONPATH} \
    check binding python3 tests/gpu/test_binding.py
  for c in $cases; do
    check "racecheck-$c" compute-sanitizer --tool racecheck --error-exitcode 3 "$d/gpu_gdn" 0x5eed "$c"
  done
done
exit $rc
