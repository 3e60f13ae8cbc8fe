#!/usr/bin/env bash
# Download the FLA peer (PyPI fla-core, pure python) as wheels into .whl/ at the
# repo root, for the GPU machine (python 3.12, x86_64, no network there).
#
#   bash bench/fetch_wheels.sh            # fla-core only (einops is in the GPU image)
#   WITH_EINOPS=1 bash bench/fetch_wheels.sh   # also einops
#   FLA_VERSION=0.5.2 bash bench/fetch_wheels.sh
#
# On the GPU machine:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
#       --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.whl"
FLA_VERSION="${FLA_VERSION:-0.6.0}"
EINOPS_VERSION="${EINOPS_VERSION:-0.8.1}"
mkdir -p "$dest"

# Keep exactly one version of each package (two stop the whole install there).
rm -f "$dest"/fla_core-*.whl
pkgs=("fla-core==$FLA_VERSION")
if [ "${WITH_EINOPS:-0}" = "1" ]; then
    rm -f "$dest"/einops-*.whl
    pkgs+=("einops==$EINOPS_VERSION")
fi

python3 -m pip download -q --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 --platform any \
    -d "$dest" "${pkgs[@]}"

echo "wheels in $dest:"
ls -l "$dest"/*.whl
for w in "$dest"/fla_core-*.whl; do
    echo "-- $(basename "$w") Requires-Dist:"
    python3 - "$w" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = [n for n in z.namelist() if n.endswith('.dist-info/METADATA')][0]
for line in z.read(meta).decode().splitlines():
    if line.startswith('Requires-Dist') and 'extra' not in line:
        print('   ', line)
PY
done
