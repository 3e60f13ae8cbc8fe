#!/usr/bin/env bash
# Runs every GPU test of a build made by `make gpu-test` (here or elsewhere),
# one log per test in $1 (default build/gpu-logs), and the last lines of
# each on stdout. Exit status: 1 if any test failed.
# GPU_TEST_BIN: the folder of the test binaries (default build/tests; the
# A/B builds of bench/tools/ab_build.sh keep theirs in build/ab/<rev>, with
# libgdn.so beside them for the binding, and no probes, which do not depend
# on the GDN kernels).
set -uo pipefail
out=${1:-build/gpu-logs}
bin=${GPU_TEST_BIN:-build/tests}
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
if [ -z "${GPU_TEST_BIN:-}" ] || [ -x "$bin/gpu_probes" ]; then
  run probes "$bin/gpu_probes"
else
  echo "== probes: not in $bin, not run"
fi
run gdn "$bin/gpu_gdn"
run dispatch "$bin/gpu_dispatch"
run safety "$bin/gpu_safety"
lib=${GDNGEN_LIB:-}
[ -z "${GPU_TEST_BIN:-}" ] || lib=$bin/libgdn.so
GDNGEN_LIB=$lib PYTHONPATH=runtime/python${PYTHONPATH:+:$PYTHONPATH} \
  run binding python3 tests/gpu/test_binding.py
exit $rc
