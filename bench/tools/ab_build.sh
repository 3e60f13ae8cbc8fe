#!/bin/bash
# Builds the C benchmark and the GDN GPU cases of several revisions side by
# side, for an A/B in one device run:
#   bench/tools/ab_build.sh REV...      (run here, from the repository root)
# leaves build/ab/<name>/{gdn_bench,gpu_gdn,gpu_dispatch,gpu_safety,libgdn.so,
# gdn_generic.cubin} for each REV (name: the REV with '/' as '-'), built in
# a temporary worktree with its own build folder, so the checkout here is
# untouched.
# A REV of the form BASE+FILE.diff is BASE with that diff applied (a
# change kept under bench/results/ after its branch is gone); its name is
# the diff's file name without .diff. BASE+A.diff+B.diff applies A, then
# B (a probe kept as its increment on another), and is named after B.
# On the GPU machine (with `build` carried):
#   bench/tools/ab_check.sh [LOGDIR]      (each build's GPU tests, racecheck)
#   bench/tools/ab_run.sh [ITERS [ROW]]   (each build's cases and benchmark)
# and back here: python3 bench/tools/ab_table.py AB_RUN_OUTPUT (one table,
# ratios to the first build).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 REV..." >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
mkdir -p "$root/build/ab"
for rev in "$@"; do
  base=${rev%%+*} diffs=() name=${rev//\//-}
  if [ "$base" != "$rev" ]; then
    IFS=+ read -ra diffs <<<"${rev#*+}"
    name=$(basename "${diffs[-1]}" .diff)
  fi
  wt=$(mktemp -d)
  git -C "$root" worktree add --detach -q "$wt" "$base"
  echo "== $rev ($(git -C "$wt" log --oneline -1))"
  for diff in "${diffs[@]}"; do
    [[ $diff = /* ]] || diff=$root/$diff # a diff made elsewhere, by sed, say
    if ! git -C "$wt" apply "$diff"; then
      echo "$diff does not apply to $base with the diffs before it" >&2
      git -C "$root" worktree remove --force "$wt"
      exit 1
    fi
  done
  if make -C "$wt" -s gpu-test >"$wt.log" 2>&1; then
    # (a diff's build is its generator's output, whatever generated/ it carried)
    [ ${#diffs[@]} -gt 0 ] || [ -z "$(git -C "$wt" status --porcelain generated)" ] ||
      echo "note: $rev's generated/ is not what its generator makes"
    mkdir -p "$root/build/ab/$name"
    cp "$wt/build/gdn_bench" "$wt/build/tests/gpu_gdn" "$wt/build/tests/gpu_dispatch" \
      "$wt/build/tests/gpu_safety" "$wt/build/libgdn.so" "$wt/build/kernels/gdn_generic.cubin" \
      "$root/build/ab/$name/"
  else
    tail -20 "$wt.log"
    echo "build of $rev failed" >&2
  fi
  git -C "$root" worktree remove --force "$wt"
  rm -f "$wt.log"
done
ls "$root/build/ab"
# Each build's machine code against main's, where both cubins and a
# cuobjdump are here (bench/tools/sass_tools.sh without --no-fetch fetches
# one): a probe whose
# kernels are main's instruction for instruction asks nothing of a GPU.
ref=$root/build/ab/main/gdn_generic.cubin
if tools=$(bash "$root/bench/tools/sass_tools.sh" --no-fetch) && [ -f "$ref" ]; then
  dump=$tools/cuobjdump
  sass=$(mktemp -d)
  "$dump" -sass "$ref" >"$sass/main.sass"
  for d in "$root"/build/ab/*/; do
    b=$(basename "$d")
    if [ "$b" = main ] || [ ! -f "$d/gdn_generic.cubin" ]; then continue; fi
    echo "== $b against main, SASS:"
    "$dump" -sass "$d/gdn_generic.cubin" >"$sass/$b.sass"
    python3 "$root/bench/tools/sass_same.py" "$sass/main.sass" "$sass/$b.sass" |
      grep -v ' | same | ' || true
  done
  rm -rf "$sass"
fi
