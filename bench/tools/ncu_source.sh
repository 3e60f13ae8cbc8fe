#!/bin/bash
# Where a kernel's warps stall, instruction by instruction: profiles one
# launch of a kernel on one benchmark row with ncu's source counters and
# writes the SASS listing with its stall samples as CSV.
#   bench/tools/ncu_source.sh KERNEL ROW OUTDIR
# KERNEL is gdn_prepare, gdn_scan or gdn_fused; ROW a substring of a row
# name of build/gdn_bench. Needs the GPU machine and a built build/gdn_bench.
# bench/tools/stall_report.py turns the listing into a table of where it waits.
set -euo pipefail
kernel=$1 row=$2 out=$3
mkdir -p "$out"
rep="$out/$kernel-$row"
ncu --clock-control none --kernel-name "$kernel" --launch-skip 2 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight \
  --section LaunchStats --section Occupancy -f -o "$rep" build/gdn_bench 3 "$row" >/dev/null
ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.sass.csv"
ncu -i "$rep.ncu-rep" --page details --csv >"$rep.details.csv"
