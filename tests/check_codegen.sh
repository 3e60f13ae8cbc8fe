#!/usr/bin/env bash
# check_codegen.sh: the codegen guard, as `make check-codegen` runs it:
#   bash tests/check_codegen.sh [build/gdngen]
# (a) a fresh gdngen run equals the committed generated/ (RESOURCES.md
#     aside: ptxas writes that one, not the emit step);
# (b) every generated .cu compiles with the cuflags of generated/build.ninja
#     (ptxas -v), into a temporary folder: build/ is neither read nor written;
# (c) `gdngen resources` finds no spill, stack, local memory or serialized
#     wgmma (C7508, C7510-C7512, C7514, C7515, or any ptxas message that says
#     wgmma is serialized) in any kernel;
# (d) the table it writes equals the committed generated/RESOURCES.md;
# (e) the trace build of the generic pipeline (docs/trace.md: GDN_TRACE and
#     the sizes of runtime/gdn.h, as NVRTC compiles it) passes (c) too.
# One line per step, then "check-codegen: ok". Needs nvcc (NVCC overrides).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
arg=${1:-build/gdngen}
[ -x "$arg" ] || { echo "check_codegen.sh: $arg is not an executable (run make first)" >&2; exit 2; }
gdngen=$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")
nvcc=${NVCC:-nvcc}
cd "$repo"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
fail() { echo "check-codegen: FAIL: $1" >&2; exit 1; }

# ------------------------------------------------ (a) generated/ is fresh
# As tests/cli.sh runs it: the out dir is literally `generated`, so the
# paths inside build.ninja come out byte for byte.
mkdir -p "$tmp/regen/generated"
(cd "$tmp/regen" && "$gdngen" --quiet --out generated --templates "$repo/templates" \
    --config "$repo/generator/default.routes") ||
  fail "gdngen exited $? while regenerating"
if ! diff -r -x RESOURCES.md generated "$tmp/regen/generated" >"$tmp/stale.diff"; then
  head -40 "$tmp/stale.diff" >&2
  fail "generated/ is stale: run make and commit"
fi
echo "check-codegen: generated/ equals a fresh gdngen run"

# ------------------------------------------------ (b) compile with ptxas -v
cuflags=$(sed -n 's/^cuflags = //p' generated/build.ninja)
[ -n "$cuflags" ] || fail "no 'cuflags = ' line in generated/build.ninja"
mkdir -p "$tmp/cubin" "$tmp/ptxas"
sources=(generated/*.cu)
[ -e "${sources[0]}" ] || fail "no .cu files in generated/"
pids=()
for cu in "${sources[@]}"; do
  stem=$(basename "$cu" .cu)
  # shellcheck disable=SC2086 # cuflags is a list of flags
  "$nvcc" $cuflags -cubin -o "$tmp/cubin/$stem.cubin" "$cu" >"$tmp/ptxas/$stem.log" 2>&1 &
  pids+=($!)
done
for i in "${!sources[@]}"; do
  if ! wait "${pids[$i]}"; then
    cat "$tmp/ptxas/$(basename "${sources[$i]}" .cu).log" >&2
    fail "nvcc failed on ${sources[$i]}"
  fi
done
echo "check-codegen: compiled ${#sources[@]} .cu files with: nvcc $cuflags -cubin"

# ------------------------------------------------ (c) no spills, no stack
logs=()
for cu in "${sources[@]}"; do logs+=("$tmp/ptxas/$(basename "$cu" .cu).log"); done
if ! "$gdngen" resources "$tmp/RESOURCES.md" "${logs[@]}" 2>"$tmp/resources.err"; then
  cat "$tmp/resources.err" >&2
  if [ -f "$tmp/RESOURCES.md" ]; then
    sed -n '/^## Problems/,$p' "$tmp/RESOURCES.md" >&2
  fi
  fail "a kernel spills, uses stack or local memory, or has serialized wgmma (see above)"
fi
kernels=$(($(grep -c '^| ' "$tmp/RESOURCES.md") - 1)) # rows less the header
echo "check-codegen: $kernels kernels: no spills, stack, local memory or serialized wgmma"

# ------------------------------------------------ (d) RESOURCES.md is current
if [ ! -f generated/RESOURCES.md ]; then
  fail "generated/RESOURCES.md is missing: run make and commit the new generated/RESOURCES.md"
fi
if ! diff -u generated/RESOURCES.md "$tmp/RESOURCES.md" >"$tmp/resources.diff"; then
  cat "$tmp/resources.diff" >&2
  fail "register or resource use changed: commit the new generated/RESOURCES.md"
fi
echo "check-codegen: generated/RESOURCES.md equals the fresh table"

# ------------------------------------------------ (e) the trace build
tdefs=(-DGDN_TRACE)
for v in GDN_TRACE_CTAS GDN_TRACE_ROWS GDN_TRACE_UNITS GDN_TRACE_STEPS; do
  n=$(sed -n "s/^#define $v \([0-9]*\)$/\1/p" runtime/gdn.h)
  [ -n "$n" ] || fail "no '#define $v N' in runtime/gdn.h"
  tdefs+=("-D$v=$n")
done
# shellcheck disable=SC2086 # cuflags is a list of flags
"$nvcc" $cuflags "${tdefs[@]}" -cubin -o "$tmp/cubin/trace.cubin" generated/gdn_generic.cu \
  >"$tmp/ptxas/gdn_generic.log" 2>&1 || { cat "$tmp/ptxas/gdn_generic.log" >&2; fail "nvcc failed on the trace build"; }
if ! "$gdngen" resources "$tmp/TRACE.md" "$tmp/ptxas/gdn_generic.log" 2>"$tmp/resources.err"; then
  cat "$tmp/resources.err" >&2
  fail "the trace build spills, uses stack or local memory, or has serialized wgmma"
fi
echo "check-codegen: the trace build of gdn_generic.cu: no spills, stack, local memory or serialized wgmma"
echo "check-codegen: ok ($((SECONDS - start)) s)"
