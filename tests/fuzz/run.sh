#!/usr/bin/env bash
# run.sh: the argument-rule fuzzer (tests/fuzz/fuzz_args.c, docs/safety.md).
#   1. builds it with clang's libFuzzer, ASan and UBSan into build/fuzz/;
#   2. replays every file of tests/fuzz/corpus/: the seeds and every crash
#      ever found, so a fixed bug stays fixed;
#   3. fuzzes for FUZZ_TIME seconds from a copy of that corpus in
#      build/fuzz/corpus (the repository is never written).
# Exits non-zero on a crash, a sanitizer report, an oracle disagreement, a
# leak or a 5-second hang; crash inputs land in build/fuzz/crashes/.
#
# Usage, from anywhere: bash tests/fuzz/run.sh   (`make fuzz`)
# Environment: CLANG (default clang, else clang-14), CUDA (/usr/local/cuda,
# for cuda.h's types only), FUZZ_TIME (60), FUZZ_COVERAGE=1 to print the
# line coverage of check.c and route.c reached by the grown corpus
# (needs llvm-profdata and llvm-cov).
set -euo pipefail
cd "$(dirname "$0")/../.."

CLANG=${CLANG:-$(command -v clang || command -v clang-14 || true)}
CUDA=${CUDA:-/usr/local/cuda}
FUZZ_TIME=${FUZZ_TIME:-60}
OUT=build/fuzz
SEEDS=tests/fuzz/corpus

if [ -z "$CLANG" ]; then
  echo "run.sh: no clang; install clang-14 and libclang-rt-14-dev" >&2
  exit 2
fi
# route.c reads the generated route table; gdngen writes it.
if [ ! -f generated/gdn_routes.h ] || [ ! -f generated/gdn_kernels.h ]; then
  make generate
fi

mkdir -p "$OUT"
SRC=(tests/fuzz/fuzz_args.c runtime/check.c runtime/route.c)
INC=(-Iruntime -Igenerated "-I$CUDA/include")
echo "== building $OUT/fuzz_args with $CLANG"
"$CLANG" -g -O1 -std=c11 -Wall -Wextra -Werror \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  "${INC[@]}" -o "$OUT/fuzz_args" "${SRC[@]}" -lm

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Regression inputs first: each file runs once; any failure stops here.
shopt -s nullglob
inputs=("$SEEDS"/*)
echo "== replaying ${#inputs[@]} inputs of $SEEDS"
if [ ${#inputs[@]} -gt 0 ]; then
  if ! "$OUT/fuzz_args" "${inputs[@]}" > "$OUT/replay.log" 2>&1; then
    cat "$OUT/replay.log"
    echo "run.sh: a regression input of $SEEDS fails (log above)" >&2
    echo "fuzz: 0 passed, 1 failed"
    exit 1
  fi
fi

rm -rf "$OUT/corpus" "$OUT/crashes"
mkdir -p "$OUT/corpus" "$OUT/crashes"
[ ${#inputs[@]} -eq 0 ] || cp "${inputs[@]}" "$OUT/corpus/"
echo "== fuzzing for ${FUZZ_TIME} s"
set +e
"$OUT/fuzz_args" -max_total_time="$FUZZ_TIME" -timeout=5 -max_len=256 -use_value_profile=1 \
  -print_final_stats=1 -artifact_prefix="$OUT/crashes/" "$OUT/corpus" > "$OUT/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^#[0-9]+.*(INITED|DONE)|^stat::|^Done' "$OUT/fuzz.log" || true
crashes=("$OUT/crashes"/*)
if [ $rc -ne 0 ] || [ ${#crashes[@]} -gt 0 ]; then
  tail -n 60 "$OUT/fuzz.log"
  echo "run.sh: the fuzzer failed (exit $rc); inputs:" >&2
  for c in "${crashes[@]}"; do
    echo "  $c  (replay: $OUT/fuzz_args $c; keep it: cp $c $SEEDS/)" >&2
  done
  echo "fuzz: ${#inputs[@]} passed, 1 failed"
  exit 1
fi

if [ "${FUZZ_COVERAGE:-0}" = 1 ]; then
  llvm_tool() { command -v "$1" || command -v "$1-14"; }
  echo "== line coverage of the grown corpus"
  "$CLANG" -O0 -std=c11 -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping \
    "${INC[@]}" -o "$OUT/fuzz_args_cov" "${SRC[@]}" -lm
  LLVM_PROFILE_FILE="$OUT/cov.profraw" "$OUT/fuzz_args_cov" -runs=0 "$OUT/corpus" \
    > "$OUT/cov.log" 2>&1
  "$(llvm_tool llvm-profdata)" merge -o "$OUT/cov.profdata" "$OUT/cov.profraw"
  "$(llvm_tool llvm-cov)" report "$OUT/fuzz_args_cov" -instr-profile="$OUT/cov.profdata" \
    runtime/check.c runtime/route.c
fi
echo "fuzz: $((${#inputs[@]} + 1)) passed, 0 failed"
