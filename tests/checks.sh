# checks.sh: the one-line-per-check reporting of the shell tests (cli.sh,
# install.sh), sourced by them: `pass NAME`, `fail NAME WHY`, and
# `summary TEST` to print the counts and return 1 if any check failed.
passed=0
failed=0
pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
summary() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
