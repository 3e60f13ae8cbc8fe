#!/usr/bin/env bash
# cli.sh: the gdngen command line, as `make test` runs it:
#   bash tests/cli.sh build/gdngen
# Help and version, each refused configuration (exit 2, a message on stderr
# naming the problem, no file written), and a normal run that writes the
# same bytes twice and exactly the committed generated/ (a stale generated/
# folder fails here). One line per check, then a summary.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: bash tests/cli.sh PATH/TO/gdngen" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
gdngen=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$gdngen" ] || { echo "cli.sh: $1 is not an executable" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

passed=0
failed=0
pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# ------------------------------------------------------------ help, version
help_out=$scratch/help.txt
if "$gdngen" --help >"$help_out" 2>&1; then
  pass "--help exits 0"
else
  fail "--help exits 0" "exit $?"
fi

# Every option of main.c's option_table must be documented by --help.
options=$(sed -n '/option_table\[\] = {/,/^};/p' "$repo/generator/main.c" |
  grep -o '{"--[a-z-]*"' | tr -d '{"' || true)
if [ "$(echo "$options" | grep -c -- '^--')" -lt 5 ]; then
  fail "option_table read from main.c" "found only: $options"
fi
for opt in $options; do
  if grep -q -- "$opt" "$help_out"; then
    pass "--help mentions $opt"
  else
    fail "--help mentions $opt" "not in: $(cat "$help_out")"
  fi
done

if version=$("$gdngen" --version 2>&1) && [[ "$version" == gdngen\ [0-9]* ]]; then
  pass "--version exits 0 ($version)"
else
  fail "--version exits 0" "got '$version'"
fi

# --------------------------------------------------------------- refusals
# Each runs in an empty directory with an empty out dir: gdngen must exit 2,
# say on stderr what is wrong, and leave both empty (the default --out is
# relative, so nothing may appear beside out/ either).
refused() {
  local what=$1 word=$2
  shift 2
  local dir=$scratch/refused
  rm -rf "$dir" && mkdir -p "$dir/out"
  local rc=0
  (cd "$dir" && "$gdngen" --templates "$repo/templates" "$@" >stdout.txt 2>stderr.txt) || rc=$?
  local err files
  err=$(cat "$dir/stderr.txt")
  files=$(cd "$dir" && find . -mindepth 1 ! -name stdout.txt ! -name stderr.txt ! -path ./out)
  if [ "$rc" -ne 2 ]; then
    fail "$what" "exit $rc, want 2 (stderr: $err)"
  elif [[ "$err" != *"$word"* ]]; then
    fail "$what" "stderr does not mention '$word': $err"
  elif [ -n "$files" ]; then
    fail "$what" "wrote files: $files"
  else
    pass "$what refused: $err"
  fi
}

refused "unknown option" "unknown option '--bogus'" --out out --bogus
refused "--target sm_90" "target sm_90 is not supported" --out out --target sm_90
refused "--target sm_80" "target sm_80 is not supported" --out out --target sm_80
refused "--target nonsense" "unknown target 'nonsense'" --out out --target nonsense
refused "--dtype f32" "dtype 'f32' is not supported" --out out --dtype f32
refused "--head-dim 64" "head dimension 64 is not supported" --out out --head-dim 64
refused "--head-dim abc" "--head-dim wants an integer, not 'abc'" --out out --head-dim abc
refused "--head-dim 4294967424" "--head-dim wants an integer, not '4294967424'" --out out --head-dim 4294967424
refused "--only bogus" "--only wants 'probes' or 'gdn', not 'bogus'" --out out --only bogus
refused "missing value" "--out needs a value" --out

# --------------------------------------------------------------- a real run
# Run where the out dir is literally `generated`, as `make` runs it, so the
# paths written into build.ninja match the committed copy byte for byte.
run_into() {
  mkdir -p "$1/generated"
  (cd "$1" && "$gdngen" --quiet --out generated --templates "$repo/templates")
}

if run_into "$scratch/run1" && run_into "$scratch/run2"; then
  pass "normal run exits 0 (twice)"
else
  fail "normal run exits 0 (twice)" "exit $?"
fi
if [ -n "$(ls -A "$scratch/run1/generated")" ]; then
  pass "normal run writes files ($(find "$scratch/run1/generated" -type f -printf '%f\n' | sort | tr '\n' ' '))"
else
  fail "normal run writes files" "generated/ is empty"
fi
if diff -r "$scratch/run1/generated" "$scratch/run2/generated" >"$scratch/diff12"; then
  pass "two runs write identical output"
else
  fail "two runs write identical output" "$(head -20 "$scratch/diff12")"
fi
if diff -r -x RESOURCES.md "$repo/generated" "$scratch/run1/generated" >"$scratch/diffrepo"; then
  pass "output equals the committed generated/"
else
  fail "output equals the committed generated/" \
    "stale generated/: run make and commit it; $(head -20 "$scratch/diffrepo")"
fi

# Running again into the same folder leaves unchanged files alone (same
# inode: not rewritten), so ninja rebuilds nothing.
inodes() { find "$scratch/run1/generated" -printf '%i %f\n' | sort; }
before=$(inodes)
if run_into "$scratch/run1" && [ "$(inodes)" = "$before" ]; then
  pass "a rerun leaves unchanged files untouched"
else
  fail "a rerun leaves unchanged files untouched" "files were rewritten or added"
fi

if quiet_out=$(cd "$scratch/run2" && "$gdngen" --quiet --out generated --templates "$repo/templates") &&
  [ -z "$quiet_out" ]; then
  pass "--quiet prints nothing"
else
  fail "--quiet prints nothing" "printed: ${quiet_out:-} (exit $?)"
fi

echo "cli.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
