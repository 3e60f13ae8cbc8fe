#!/bin/bash
# The A/B of bench/tools/ab_build.sh, on the GPU machine: the GDN cases of
# each build, then its C benchmark, the builds taking turns (twice unless
# AB_PASSES says; in reverse order on even passes) so that drift shows.
#   bench/tools/ab_run.sh [ITERS [ROW[,ROW...]]]
# ROW picks rows by gdn_bench's filter (a part of a row's name); with a
# list, gdn_bench runs once a row, in the list's order, in every pass.
# With AB_TRACE=DIR, each build whose gdn_bench has --trace (docs/trace.md)
# then writes its timelines to DIR/<build>.csv and their report to
# DIR/<build>.md (the trace kernels are compiled by NVRTC there).
# Every binary runs under a limit of AB_TIMEOUT seconds (default 120): a
# build whose kernel hangs costs that much and is reported, and the other
# builds still run. AB_DIR: the builds (default build/ab). AB_PASSES: how
# many times the builds take turns (default 2; more to settle a small
# difference). With AB_SAME=DIR, each build's gdn_bench first writes its
# outputs on the rows' inputs to DIR/<build>.bin (--dump), and each is
# compared byte for byte with main's (or, without a build named main, the
# first build's): for a change that keeps every sum's order, the outputs
# must be the same. AB_BENCH_ARGS: options for the timing passes' gdn_bench
# (`--reader`: each captured call followed by a copy of o). AB_CASES=0:
# no build's GDN cases (a timing probe, or builds whose outputs AB_SAME
# compares with a build whose cases have passed).
set -uo pipefail
iters=${1:-200} row=${2:-}
rows=("")
[ -z "$row" ] || IFS=, read -ra rows <<<"$row"
dir=${AB_DIR:-build/ab} limit=${AB_TIMEOUT:-120} passes=${AB_PASSES:-2}
# run CMD...: CMD under the limit; a line saying so if it was stopped.
run() {
  timeout "$limit" "$@"
  local r=$?
  [ $r -ne 124 ] || echo "stopped: $(basename "$1") ran past $limit s (a hang?)"
  return $r
}
# Each build's GDN cases: the tally, and any case that failed by name.
if [ "${AB_CASES:-1}" != 0 ]; then
  for d in "$dir"/*/; do
    cases=$(run "$d/gpu_gdn")
    echo "== $(basename "$d"): $(tail -1 <<<"$cases")"
    grep '^FAIL ' <<<"$cases" | sed "s/^/== $(basename "$d"): /"
  done
fi
# dump DIR BUILD: the build's outputs on each row of the list, in order,
# appended to DIR/BUILD.bin (one gdn_bench a row); status 1, and no
# BUILD.bin, unless every row's were written.
dump() {
  local out=$1 b=$2 r
  rm -f "$out/$b.bin" # an older run's dump must not stand in for this one
  : >"$out/$b.txt"
  for r in "${rows[@]}"; do
    if ! run "$dir/$b/gdn_bench" --dump "$out/$b.part" 1 ${r:+"$r"} >>"$out/$b.txt" 2>&1 ||
      [ ! -s "$out/$b.part" ]; then
      rm -f "$out/$b.part" "$out/$b.bin"
      return 1
    fi
    cat "$out/$b.part" >>"$out/$b.bin"
  done
  rm -f "$out/$b.part"
}
if [ -n "${AB_SAME:-}" ]; then
  mkdir -p "$AB_SAME"
  # Every build dumps before any is compared: main need not sort first.
  wrote=()
  for d in "$dir"/*/; do
    b=$(basename "$d")
    if dump "$AB_SAME" "$b"; then
      wrote+=("$b")
    else
      echo "== same: $b wrote no outputs ($(tail -1 "$AB_SAME/$b.txt"))"
    fi
  done
  ref=
  [ -d "$dir/main" ] && ref=main
  [ -n "$ref" ] || ref=${wrote[0]:-}
  if [ -n "$ref" ] && [ ! -s "$AB_SAME/$ref.bin" ]; then
    echo "== same: nothing compared: $ref wrote no outputs"
  elif [ -n "$ref" ]; then
    echo "== same: $ref is the reference"
    for b in "${wrote[@]}"; do
      [ "$b" != "$ref" ] || continue
      if cmp -s "$AB_SAME/$ref.bin" "$AB_SAME/$b.bin"; then
        echo "== same: $b's outputs are $ref's, byte for byte"
      else
        echo "== same: $b's outputs differ from $ref's ($(cmp "$AB_SAME/$ref.bin" "$AB_SAME/$b.bin" 2>&1 | head -1 | sed 's/^.*: //'))"
      fi
    done
  fi
fi
# Odd passes run the builds in name order, even passes in reverse, so that
# no build always runs first, or last, in its pass.
builds=("$dir"/*/)
n=${#builds[@]}
for pass in $(seq 1 "$passes"); do
  for ((i = 0; i < n; i++)); do
    d=${builds[pass % 2 ? i : n - 1 - i]}
    echo "== pass $pass: $(basename "$d")"
    for r in "${rows[@]}"; do
      # shellcheck disable=SC2086 # AB_BENCH_ARGS is a list of options
      run "$d/gdn_bench" ${AB_BENCH_ARGS:-} "$iters" ${r:+"$r"}
    done
  done
done
if [ -n "${AB_TRACE:-}" ]; then
  mkdir -p "$AB_TRACE"
  for d in "$dir"/*/; do
    for r in "${rows[@]}"; do
      b=$(basename "$d")
      # with a list of rows, one timeline a row: DIR/<build>-<row>.*
      [ ${#rows[@]} -eq 1 ] || b=$b-$r
      if run "$d/gdn_bench" --trace "$AB_TRACE/$b.csv" 20 ${r:+"$r"} >"$AB_TRACE/$b.bench.txt" 2>&1 &&
        [ -s "$AB_TRACE/$b.csv" ]; then
        python3 bench/tools/trace_report.py "$AB_TRACE/$b.csv" >"$AB_TRACE/$b.md"
        echo "== trace: $b"
      else
        echo "== trace: $b has no trace build ($(tail -1 "$AB_TRACE/$b.bench.txt"))"
      fi
    done
  done
fi
