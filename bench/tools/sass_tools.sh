#!/bin/bash
# Where cuobjdump and nvdisasm are (they read SASS: bench/tools/wgmma_gaps.py,
# bench/tools/sass_same.py, bench/tools/ptx_same.sh --sass): prints the
# folder that holds them, the toolkit's if the PATH has them, else .sass/bin
# at the repository root (ignored by git), into which it first downloads
# NVIDIA's wheels of the two from PyPI, unless --no-fetch (then exit status
# 1 and nothing printed where neither has them).
#   export PATH="$(bash bench/tools/sass_tools.sh):$PATH"
# Fetching needs python3 with pip and a route to PyPI, not a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/.sass/bin
if found=$(command -v cuobjdump) && command -v nvdisasm >/dev/null; then
  dirname "$found"
  exit 0
fi
if [ -x "$bin/cuobjdump" ] && [ -x "$bin/nvdisasm" ]; then
  echo "$bin"
  exit 0
fi
[ "${1:-}" != --no-fetch ] || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" \
  nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >&2
mkdir -p "$bin"
for whl in "$tmp"/*.whl; do
  python3 -m zipfile -e "$whl" "$tmp/x"
done
for tool in cuobjdump nvdisasm; do
  found=$(find "$tmp/x" -path "*/bin/$tool" -type f | head -1)
  [ -n "$found" ] || { echo "sass_tools.sh: no $tool in the wheels" >&2; exit 1; }
  install -m 755 "$found" "$bin/$tool"
done
echo "$bin"
