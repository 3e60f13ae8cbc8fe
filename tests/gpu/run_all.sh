#!/usr/bin/env bash
# Runs every GPU test of a build made by `make gpu-test` (here or elsewhere),
# one log per test in $1 (default build/gpu-logs), and the last lines of
# each on stdout. Exit status: 1 if any test failed.
set -uo pipefail
out=${1:-build/gpu-logs}
mkdir -p "$out"
rc=0
run() {
  local name=$1
  shift
  echo "== $name: $*"
  "$@" >"$out/$name.log" 2>&1
  local r=$?
  grep -E "^FAIL" "$out/$name.log" | head -20
  tail -n 1 "$out/$name.log"
  [ $r -eq 0 ] || { echo "   exit status $r"; rc=1; }
}
run probes build/tests/gpu_probes
run gdn build/tests/gpu_gdn
run dispatch build/tests/gpu_dispatch
run safety build/tests/gpu_safety
PYTHONPATH=runtime/python${PYTHONPATH:+:$PYTHONPATH} run binding python3 tests/gpu/test_binding.py
exit $rc
