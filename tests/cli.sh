#!/usr/bin/env bash
# cli.sh: the gdngen command line, as `make test` runs it:
#   bash tests/cli.sh build/gdngen
# Help and version, each refused configuration (exit 2, a message on stderr
# naming the problem, no file written), the route table (--list, --config,
# --route), and a normal run that writes the same bytes twice and exactly
# the committed generated/ (a stale generated/ folder fails here). One line
# per check, then a summary.
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

. "$repo/tests/checks.sh"

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

# ------------------------------------------------------------ route table
# The default config, named explicitly: the runs below are not in the repo.
routes=$repo/generator/default.routes
configs=$scratch/configs
mkdir -p "$configs"

# A config whose third line is $2 (two comment lines before it), so every
# message must name line 3.
bad_config() {
  printf '# a route config with one bad row\n\n%s\n' "$2" >"$configs/$1.routes"
}
bad_config unknown "fastest T=4096 N=10 Hq=8 Hk=8 Hv=8 init=1 final=1"
bad_config missing "register_replay T=4096 N=10 Hq=8 Hk=8 Hv=8 init=1"
bad_config n_above_t "register_replay T=16 N=17 Hq=8 Hk=8 Hv=8 init=1 final=1"
bad_config heads "register_replay T=4096 N=10 Hq=8 Hk=4 Hv=2 init=1 final=1"
bad_config unknown_field "register_replay T=4096 N=10 Hq=8 Hk=8 Hv=8 init=1 final=1 B=2"
bad_config twice "register_replay T=4096 N=10 T=4096 Hq=8 Hk=8 Hv=8 init=1 final=1"
bad_config flag "register_replay T=4096 N=10 Hq=8 Hk=8 Hv=8 init=yes final=1"
printf 'generic T=64 N=1 Hq=1 Hk=1 Hv=1 init=0 final=0\nregister_replay T=64 N=1 Hq=1 Hk=1 Hv=1 init=0 final=0\n' \
  >"$configs/conflict.routes"

refused "config: unknown schedule" \
  "unknown.routes:3: unknown schedule 'fastest' (known: generic, register_replay, predecessor_replay)" \
  --out out --config "$configs/unknown.routes"
refused "config: missing field" "missing.routes:3: missing field final" \
  --out out --config "$configs/missing.routes"
refused "config: N > T" "n_above_t.routes:3: N=17 > T=16" \
  --out out --config "$configs/n_above_t.routes"
refused "config: head relation" "heads.routes:3: heads Hq=8 Hk=4 Hv=2 are not MHA" \
  --out out --config "$configs/heads.routes"
refused "config: unknown field" "unknown_field.routes:3: unknown field 'B'" \
  --out out --config "$configs/unknown_field.routes"
refused "config: duplicate field" "twice.routes:3: field T given twice" \
  --out out --config "$configs/twice.routes"
refused "config: init not 0 or 1" "flag.routes:3: init=yes: the value is not an integer" \
  --out out --config "$configs/flag.routes"
refused "config: one key, two schedules" \
  "conflict.routes:2: this key is already routed to generic by conflict.routes:1" \
  --out out --config "$configs/conflict.routes"
refused "config: missing file" "cannot read route config $configs/none.routes" \
  --out out --config "$configs/none.routes"
refused "--route: bad head relation" "--route #2: heads Hq=6 Hk=4 Hv=4" --out out \
  --config "$routes" --route "generic T=64 N=1 Hq=4 Hk=4 Hv=4 init=0 final=0" \
  --route "generic T=64 N=1 Hq=6 Hk=4 Hv=4 init=0 final=0"
refused "--route: contradicts the config" "--route #1: this key is already routed to register_replay" \
  --out out --config "$routes" --route "generic T=4096 N=10 Hq=8 Hk=8 Hv=8 init=1 final=1"

# --list in an empty directory: exit 0, the table on stdout, no file.
list_in() {
  local dir=$1
  shift
  rm -rf "$dir" && mkdir -p "$dir/out"
  (cd "$dir" && "$gdngen" --templates "$repo/templates" --out out --list "$@" >list.txt)
}
# The rows of --list as "schedule T N Hq Hk Hv init final", one a line.
list_keys() { awk 'NR > 1 && $2 ~ /^[0-9]+$/ { print $1, $2, $3, $4, $5, $6, $7, $8 }' "$1"; }
wrote_nothing() { [ -z "$(cd "$1" && find . -mindepth 1 ! -name list.txt ! -path ./out)" ]; }

# The four keys of shared/reference/gdn.md, in the default config's order.
want_keys="register_replay 4096 10 8 8 8 yes yes
predecessor_replay 1024 1 8 8 16 yes yes
predecessor_replay 4096 1 16 16 16 no no
predecessor_replay 8192 20 8 8 16 yes yes"
if list_in "$scratch/list" --config "$routes" && wrote_nothing "$scratch/list"; then
  got_keys=$(list_keys "$scratch/list/list.txt")
  if [ "$got_keys" = "$want_keys" ] && head -1 "$scratch/list/list.txt" | grep -q '^schedule '; then
    pass "--list prints the four default keys, writes nothing"
  else
    fail "--list prints the four default keys" "got: $(cat "$scratch/list/list.txt")"
  fi
else
  fail "--list exits 0 and writes nothing" "exit $? or files written"
fi

# A --route row comes after the config's, in --list and in gdn_routes.h.
extra="predecessor_replay T=2048 N=2 Hq=8 Hk=8 Hv=16 init=1 final=0"
if list_in "$scratch/list" --config "$routes" --route "$extra" &&
  [ "$(list_keys "$scratch/list/list.txt" | tail -1)" = "predecessor_replay 2048 2 8 8 16 yes no" ]; then
  pass "--route adds a row to --list"
else
  fail "--route adds a row to --list" "got: $(cat "$scratch/list/list.txt" 2>/dev/null)"
fi
mkdir -p "$scratch/route_run/out"
if (cd "$scratch/route_run" && "$gdngen" --quiet --only gdn --out out --templates "$repo/templates" \
  --config "$routes" --route "$extra") &&
  grep -q '{.T = 2048, .N = 2, .Hq = 8, .Hk = 8, .Hv = 16, .init = 1, .final = 0,' \
    "$scratch/route_run/out/gdn_routes.h" &&
  grep -q '^#define GDN_ROUTE_ROWS 5$' "$scratch/route_run/out/gdn_routes.h"; then
  pass "--route adds a row to gdn_routes.h"
else
  fail "--route adds a row to gdn_routes.h" \
    "$(cat "$scratch/route_run/out/gdn_routes.h" 2>/dev/null || echo 'not written')"
fi

# --------------------------------------------------------------- a real run
# Run where the out dir is literally `generated`, as `make` runs it, so the
# paths written into build.ninja match the committed copy byte for byte.
run_into() {
  mkdir -p "$1/generated"
  (cd "$1" && "$gdngen" --quiet --out generated --templates "$repo/templates" --config "$routes")
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

if quiet_out=$(cd "$scratch/run2" && "$gdngen" --quiet --out generated --templates "$repo/templates" \
  --config "$routes") &&
  [ -z "$quiet_out" ]; then
  pass "--quiet prints nothing"
else
  fail "--quiet prints nothing" "printed: ${quiet_out:-} (exit $?)"
fi

# ------------------------------------------------------------ embed
# The build id names the sources: the same sources give the same id, one
# byte more in a source gives another, and a cubin's bytes do not count.
printf 'int x;\n' >"$scratch/a.cu"
printf 'int x; \n' >"$scratch/b.cu"
printf '\177ELF' >"$scratch/k.cubin"
printf '\177ELFX' >"$scratch/l.cubin"
build_id() { grep -o 'gdn_build_id\[\] = "[^"]*"' "$1" || true; }
if "$gdngen" embed "$scratch/e1.c" "$scratch/k.cubin" "$scratch/a.cu" &&
  "$gdngen" embed "$scratch/e2.c" "$scratch/l.cubin" "$scratch/a.cu" &&
  "$gdngen" embed "$scratch/e3.c" "$scratch/k.cubin" "$scratch/b.cu"; then
  id1=$(build_id "$scratch/e1.c") id2=$(build_id "$scratch/e2.c") id3=$(build_id "$scratch/e3.c")
  if [[ $id1 =~ \"gdngen\ [0-9.]+,\ kernels\ [0-9a-f]{16}\" ]] && [ "$id1" = "$id2" ] &&
    [ "$id1" != "$id3" ]; then
    pass "embed: the build id hashes the sources alone"
  else
    fail "embed: the build id hashes the sources alone" "ids: $id1 / $id2 / $id3"
  fi
else
  fail "embed: the build id hashes the sources alone" "gdngen embed failed"
fi

# ------------------------------------------------------------ resources
# The codegen guard on hand-written ptxas logs of one kernel: each
# serialising diagnostic fails it (a known code, and an unknown one whose
# message says wgmma is serialized), an informational one does not.
fake_log() { # CODE MESSAGE: a log of kernel 'k' with that diagnostic
  printf '%s\n' "ptxas info    : Compiling entry function 'k' for 'sm_90a'" \
    "ptxas info    : Function properties for k" \
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" \
    "ptxas info    : Used 40 registers, used 1 barriers" \
    "ptxas info    : (C$1) Potential Performance Loss: $2 in the function 'k'"
}
serial="wgmma.mma_async instructions are serialized due to a reason"
for c in "7512 fails:$serial" "7514 fails:$serial" "7599 fails:$serial" \
  "7519 passes:warpgroup.arrive instruction is injected"; do
  code=${c%% *} rest=${c#* } want=${rest%%:*} msg=${rest#*:}
  fake_log "$code" "$msg" >"$scratch/r$code.log"
  if "$gdngen" resources "$scratch/r$code.md" "$scratch/r$code.log" 2>"$scratch/r$code.err"; then
    got=passes
  else
    got=fails
  fi
  if [ "$got" = "$want" ] && grep -q "C$code" "$scratch/r$code.md"; then
    pass "resources: C$code $want the guard"
  else
    fail "resources: C$code $want the guard" "it $got; $(cat "$scratch/r$code.err")"
  fi
done

summary cli.sh
