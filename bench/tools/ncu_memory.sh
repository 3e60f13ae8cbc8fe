#!/bin/bash
# What each kernel of the benchmark rows moves through DRAM: profiles one
# call of each row (two launches after the first 20: a two-grid row's
# prepare and scan, or two calls of a one-grid row) with ncu, and prints
# bench/tools/ncu_memory.py's table of them.
#   bench/tools/ncu_memory.sh OUTDIR [ROW...]
# ROW: a substring of one row name of gdn_bench (default: one for each of
# the six rows). GDN_BENCH: the benchmark (default build/gdn_bench). Needs
# the GPU machine. ncu runs with the GPU's own clocks and caches left as
# they are (no flush between launches, as in back-to-back calls), and
# replays each launch for its metrics, so its durations are not the
# benchmark's and its kernels run without overlap.
set -uo pipefail
out=${1:?usage: ncu_memory.sh OUTDIR [ROW...]}
shift
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(single-t512 single-t1024-h8-mha single-t1024-h8-hv16
  single-t4096-h16 packed-n10 packed-n20)
bench=${GDN_BENCH:-build/gdn_bench}
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics=$metrics,lts__t_sector_hit_rate.pct
mkdir -p "$out"
files=()
for r in "${rows[@]}"; do
  ncu --clock-control none --cache-control none --kernel-name regex:gdn_ \
    --launch-skip 20 --launch-count 2 --section SpeedOfLight --metrics "$metrics" \
    --csv --page details "$bench" 1 "$r" >"$out/$r.csv" 2>"$out/$r.err" ||
    echo "ncu_memory.sh: ncu failed on $r (see $out/$r.err)" >&2
  files+=("$out/$r.csv")
done
python3 "$(dirname "$0")/ncu_memory.py" "${files[@]}"
