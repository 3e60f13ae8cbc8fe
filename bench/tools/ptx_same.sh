#!/bin/bash
# Whether two revisions' GDN kernels are the same programs: compiles
# generated/gdn_generic.cu of each (git revisions, or WORK for the file
# in the checkout) to PTX with the flags of generated/build.ninja, and
# prints bench/tools/ptx_same.py's table, entry by entry. With --sass, to
# cubins instead, and prints bench/tools/sass_same.py's table of their
# machine code, function by function: whether two programs that differ
# compile to the same loads, fences, waits and products.
#   bench/tools/ptx_same.sh [--sass] REV_A [REV_B]   (REV_B defaults to WORK)
# Needs nvcc (NVCC overrides, as in tests/check_codegen.sh), not a GPU;
# --sass also cuobjdump (CUOBJDUMP overrides; else where
# bench/tools/sass_tools.sh finds it, which fetches one where the toolkit
# has none). Exit status as the table's tool.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
sass=0
[ "${1:-}" != --sass ] || { sass=1; shift; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bench/tools/ptx_same.sh [--sass] REV_A [REV_B]" >&2
  exit 2
fi
flags=$(sed -n 's/^cuflags = //p' generated/build.ninja)
[ -n "$flags" ] || { echo "ptx_same.sh: no cuflags in generated/build.ninja" >&2; exit 2; }
cuobjdump=${CUOBJDUMP:-}
if [ $sass = 1 ] && [ -z "$cuobjdump" ]; then
  tools=$(bash bench/tools/sass_tools.sh --no-fetch) ||
    { echo "ptx_same.sh: no cuobjdump (bench/tools/sass_tools.sh fetches one)" >&2; exit 2; }
  cuobjdump=$tools/cuobjdump
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nvcc=${NVCC:-nvcc}
revs=("$1" "${2:-WORK}") sides=(A B)
for side in 0 1; do
  rev=${revs[$side]}
  if [ "$rev" = WORK ]; then
    cp generated/gdn_generic.cu "$tmp/$side.cu"
  elif ! git show "$rev:generated/gdn_generic.cu" >"$tmp/$side.cu" 2>/dev/null; then
    echo "ptx_same.sh: no generated/gdn_generic.cu at '$rev'" >&2
    exit 2
  fi
  echo "${sides[$side]}: $rev" >&2
  # shellcheck disable=SC2086 # the flags are words
  if [ $sass = 0 ]; then
    "$nvcc" $flags -Xptxas -w -ptx -o "$tmp/$side.ptx" "$tmp/$side.cu" >"$tmp/$side.log" 2>&1 ||
      { cat "$tmp/$side.log" >&2; exit 2; }
  elif ! "$nvcc" $flags -Xptxas -w -cubin -o "$tmp/$side.cubin" "$tmp/$side.cu" >"$tmp/$side.log" 2>&1 ||
    ! "$cuobjdump" -sass "$tmp/$side.cubin" >"$tmp/$side.sass" 2>>"$tmp/$side.log"; then
    cat "$tmp/$side.log" >&2
    exit 2
  fi
done
if [ $sass = 0 ]; then
  python3 bench/tools/ptx_same.py "$tmp/0.ptx" "$tmp/1.ptx"
else
  python3 bench/tools/sass_same.py "$tmp/0.sass" "$tmp/1.sass"
fi
