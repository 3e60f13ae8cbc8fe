#!/bin/bash
# The GPU tests of every build that bench/tools/ab_build.sh left in build/ab,
# on the GPU machine, before any of them is measured or merged:
# tests/gpu/run_all.sh (GDN cases, dispatch, safety, the binding on that
# build's libgdn.so) and tests/gpu/sanitize.sh with racecheck on small
# cases, each on the build's own binaries. Logs in LOGDIR/<build> (default
# build/ab-logs). The probes do not depend on the build's GDN kernels:
# tests/gpu/run_all.sh of this checkout runs them.
#   bench/tools/ab_check.sh [LOGDIR]
set -uo pipefail
out=${1:-build/ab-logs}
rc=0
for d in build/ab/*/; do
  b=$(basename "$d")
  echo "=== $b"
  GPU_TEST_BIN=${d%/} bash tests/gpu/run_all.sh "$out/$b" || rc=1
  GPU_TEST_BIN=${d%/} SANITIZE_TOOLS=racecheck \
    SANITIZE_CASES=${AB_RACE_CASES:-t63 t129 fused-tails-3} \
    bash tests/gpu/sanitize.sh "$out/$b/sanitize" || rc=1
done
exit $rc
