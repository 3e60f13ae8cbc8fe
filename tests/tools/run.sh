#!/usr/bin/env bash
# The benchmark tools that turn GPU runs into tables, on small inputs whose
# figures were worked out by hand (tests/tools/*.expected):
#   trace.csv: two scan CTAs of three chunks and three prepare units (chunk
#     steps 2.5 and 1.0 us, then 1.1 and 1.0; waits 2.1 and 0.2 us; ...;
#     the units' stages 0.1 and 0.3 us, then 0.2 and 0.2, ...; the third
#     unit, without stages, starts as the first ends: two at once, not three);
#     with --chunks, chunk by chunk: data at 2.80, 3.85, 5.10 us, waits 0.80
#     (max 1.50), 0.05, 0.30, steps 1.80 and 1.00, the output 0.35, 0.35,
#     0.20 us behind the chain, the units of slots 0-2 ending at 2.0, 3.5, 2.4;
#     with --ranks 2, both CTAs of r as one rank: entry 0.00-0.20, start
#     1.00-2.00, first data 2.60-3.00, chain end 8.00-9.00, output end
#     8.50-10.00; p's one CTA has no entry stamp; with --rounds 2, units 0
#     and 1 as one round (the third has no stages): medians 2.50 us a unit,
#     stages 0.20, 0.20, 0.40, 0.15, 0.10, 0.30, 0.25, 0.35, 0.35, 0.20;
#     with --sms 2, the units' hold 0.2 SM-us (entries 0.0 and 0.2), the
#     scan CTAs 9.8 + 8.5 = 18.3 (entry to chain start 0.8 + 2.0, to first
#     data 2.0 + 0.6, the rest 12.9), 18.5 in all: 9.25 us of 2 SMs against
#     a last output at 10.00 us (92.5 %, printed 92), 7.95 without the
#     waits; p's CTA, without an entry stamp, gives no table;
#   ab.txt: two builds, two passes, the second build missing a row once;
#   ab-builds/: two fake A/B builds, one of which never returns: ab_run.sh
#     stops each of its binaries at the limit, says so, and runs the other;
#   ab-same/: five fake builds whose outputs are main's (one of them named
#     to sort before main), one byte off, or none: ab_run.sh with AB_SAME
#     names each case, and the failed GDN case of the build one byte off;
#   ab-stale/: main writes no outputs beside a dump an older run left, and
#     x-same writes main's old bytes: nothing is compared;
#   ab-rows/: three fake builds whose benchmark prints, and dumps, the row
#     it is asked for, y's dump of r2 differing: ab_run.sh with the rows
#     r1,r2 and AB_CASES=0 runs no GDN case, times each row in turn, and
#     compares the rows' dumps joined;
#   stall.csv: an ncu SASS listing of 8 instructions and 100 samples: an
#     mbarrier wait (40, its try_wait two rows up), a wgmma wait (30), a
#     named barrier (10); with --lines 3-5 the wait is still named from its
#     try_wait outside the range, and shares are of the range's 75;
#   sass.txt: three functions in cuobjdump's and nvdisasm's forms: k1 with
#     two wgmma groups (1 and 2 instructions between their HGMMAs) and two
#     waits (3 instructions to the next HGMMA, and none after the last),
#     k2 without wgmma, k3 with a group that no gsb0 closes;
#   ncu/: ncu's CSV of three rows, with its notes and the benchmark's table
#     around it: packed-n10's two launches, listed out of order (prepare 3 MB
#     in 2 us, 1.50 TB/s; scan 4 MB in 10 us, 0.40 TB/s), t4096-h16 with
#     three metrics missing, t512 with no launch;
#   ptx/: two PTX files of four entries, k1 the same in both, k2 differing
#     in its fifth line, k3 only in the first and k4 (no .visible) only in
#     the second: ptx_same.py names each and exits 1; a file against its
#     copy exits 0, a missing file 2;
#   sass-same/: two cuobjdump listings: k1 the same but for a padding NOP,
#     k2 the same instructions with other registers, predicates and
#     targets, in another order, k3 with a register zeroed by another
#     opcode and one more poll read, k4 only in the first and k5 only in
#     the second: sass_same.py names each and exits 1; a listing against
#     itself exits 0, a missing one 2;
# and the harness's own selftest of its reporting path (no torch needed).
# Exit status 1 on any difference.
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
check() {
  local name=$1 want=$2
  shift 2
  if diff -u "$want" <("$@" 2>&1) >/dev/null; then
    echo "PASS $name"
  else
    diff -u "$want" <("$@" 2>&1) | head -20
    echo "FAIL $name"
    rc=1
  fi
}
check "trace_report.py: per-row spreads" tests/tools/trace.expected \
  python3 bench/tools/trace_report.py tests/tools/trace.csv
check "trace_report.py --chunks: chunk by chunk" tests/tools/trace-chunks.expected \
  python3 bench/tools/trace_report.py tests/tools/trace.csv --chunks
check "trace_report.py --ranks: rank by rank" tests/tools/trace-ranks.expected \
  python3 bench/tools/trace_report.py tests/tools/trace.csv --ranks 2
check "trace_report.py --rounds: units round by round" tests/tools/trace-rounds.expected \
  python3 bench/tools/trace_report.py tests/tools/trace.csv --rounds 2
check "trace_report.py --sms: the SMs' time" tests/tools/trace-sms.expected \
  python3 bench/tools/trace_report.py tests/tools/trace.csv --sms 2
check "ab_table.py: lowest of the passes, ratio to the first build" tests/tools/ab.expected \
  python3 bench/tools/ab_table.py tests/tools/ab.txt
check "stall_report.py: waits named, shares of all samples" tests/tools/stall.expected \
  python3 bench/tools/stall_report.py tests/tools/stall.csv
check "stall_report.py --lines: a range, rows numbered as in the listing" tests/tools/stall-lines.expected \
  python3 bench/tools/stall_report.py tests/tools/stall.csv --lines 3-5 --top 2
check "wgmma_gaps.py: gaps between HGMMAs, waits to the next one" tests/tools/sass.expected \
  python3 bench/tools/wgmma_gaps.py tests/tools/sass.txt
check "wgmma_gaps.py --cycles: stall cycles from the control words, the loop" \
  tests/tools/sass-cycles.expected python3 bench/tools/wgmma_gaps.py tests/tools/sass-cycles.txt --cycles
check "ncu_memory.py: DRAM bytes and rate a launch, what is missing named" \
  tests/tools/ncu-memory.expected python3 bench/tools/ncu_memory.py tests/tools/ncu/packed-n10.csv \
  tests/tools/ncu/t4096-h16.csv tests/tools/ncu/t512.csv
check "ptx_same.py: kernels the same, differing, or in one file alone" tests/tools/ptx-same.expected \
  sh -c 'for b in b a-copy none; do python3 bench/tools/ptx_same.py tests/tools/ptx/a.ptx tests/tools/ptx/$b.ptx; echo "exit $?"; done'
check "sass_same.py: functions the same, reordered, differing, or in one listing alone" \
  tests/tools/sass-same.expected \
  sh -c 'for b in b a none; do python3 bench/tools/sass_same.py tests/tools/sass-same/a.sass tests/tools/sass-same/$b.sass; echo "exit $?"; done'
check "ab_run.sh: a build that hangs is stopped and reported" tests/tools/ab-run.expected \
  env AB_DIR=tests/tools/ab-builds AB_TIMEOUT=1 bash bench/tools/ab_run.sh 5
check "ab_run.sh AB_BENCH_ARGS: the timing passes' options reach gdn_bench" \
  tests/tools/ab-run-reader.expected \
  env AB_DIR=tests/tools/ab-builds AB_TIMEOUT=1 AB_PASSES=1 AB_BENCH_ARGS=--reader \
  bash bench/tools/ab_run.sh 5
same=$(mktemp -d)
check "ab_run.sh AB_SAME: outputs compared byte for byte with main's" tests/tools/ab-same.expected \
  env AB_DIR=tests/tools/ab-same AB_PASSES=0 AB_SAME="$same" bash bench/tools/ab_run.sh 5
rm -rf "$same"
same=$(mktemp -d)
printf abc >"$same/main.bin" # an older run's dump, which main's failure must not revive
check "ab_run.sh AB_SAME: a reference that fails compares nothing" tests/tools/ab-stale.expected \
  env AB_DIR=tests/tools/ab-stale AB_PASSES=0 AB_SAME="$same" bash bench/tools/ab_run.sh 5
rm -rf "$same"
same=$(mktemp -d)
check "ab_run.sh ROW,ROW and AB_CASES=0: rows timed and dumped in turn, no cases" \
  tests/tools/ab-rows.expected \
  env AB_DIR=tests/tools/ab-rows AB_CASES=0 AB_PASSES=1 AB_SAME="$same" bash bench/tools/ab_run.sh 5 r1,r2
rm -rf "$same"
last=$(python3 bench/harness.py --selftest 2>&1 | tail -1)
case "$last" in
  *" passed, 0 failed") echo "PASS harness.py --selftest: the reporting path on fake records ($last)" ;;
  *) echo "FAIL harness.py --selftest: $last"; rc=1 ;;
esac
exit $rc
