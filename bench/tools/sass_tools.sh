#!/bin/bash
# cuobjdump and nvdisasm for a machine whose CUDA toolkit lacks them (they
# read SASS: bench/tools/wgmma_gaps.py, bench/tools/sass_same.py,
# bench/tools/ptx_same.sh --sass). Downloads NVIDIA's wheels of the two from
# PyPI into .sass/ at the repository root (ignored by git) and prints the
# folder that holds them; a second run finds them there and downloads
# nothing.
#   export PATH="$(bash bench/tools/sass_tools.sh):$PATH"
# Needs python3 with pip and a route to PyPI, not a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/.sass/bin
if [ -x "$bin/cuobjdump" ] && [ -x "$bin/nvdisasm" ]; then
  echo "$bin"
  exit 0
fi
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
