#!/usr/bin/env bash
# install.sh: libgdn as a user gets it, as `make test` runs it:
#   bash tests/install.sh [MAKE]
# `make install` into a scratch DESTDIR; the files it writes; the symbols
# libgdn.so exports (exactly gdn.h's GDN_API functions, each documented in
# docs/api.md); the pkg-config file; the C example built against the
# installed tree, shared and static, and gdn.h compiled as C++; the Python
# binding finding the installed library; `make uninstall` leaving no file.
# The example is also built as its README builds it from the checkout.
# Nothing here runs a kernel: linking needs only the toolkit's libcuda stub.
set -euo pipefail

make_cmd=${1:-make}
repo=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA:-/usr/local/cuda}
cd "$repo"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dest=$scratch/dest
prefix=/opt/gdngen
root=$dest$prefix

. "$repo/tests/checks.sh"

# ------------------------------------------------------------ make install
if $make_cmd -s install DESTDIR="$dest" PREFIX="$prefix" >"$scratch/install.log" 2>&1; then
  pass "make install DESTDIR=... PREFIX=$prefix"
else
  fail "make install" "$(tail -5 "$scratch/install.log")"
  summary install
  exit 1
fi

expected="include/gdn.h
lib/gdngen/python/gdngen/__init__.py
lib/gdngen/python/gdngen/_install.py
lib/libgdn.a
lib/libgdn.so
lib/pkgconfig/gdngen.pc"
got=$(cd "$root" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
if [ "$got" = "$expected" ]; then
  pass "the six installed files, and nothing else"
else
  fail "installed files" "$(diff <(echo "$expected") <(echo "$got") | tr '\n' ' ')"
fi

# ------------------------------------------------------------ exports
api=$(sed -n 's/^GDN_API .*\b\(gdn_[a-z0-9_]*\)(.*/\1/p' runtime/gdn.h | LC_ALL=C sort)
exported=$(nm -D --defined-only "$root/lib/libgdn.so" | awk '{print $3}' | LC_ALL=C sort)
if [ -n "$api" ] && [ "$api" = "$exported" ]; then
  pass "libgdn.so exports exactly gdn.h's $(echo "$api" | wc -l) GDN_API functions"
else
  fail "exports" "$(diff <(echo "$api") <(echo "$exported") | tr '\n' ' ')"
fi
undocumented=""
for f in $api; do grep -q "\b$f\b" docs/api.md || undocumented="$undocumented $f"; done
if [ -z "$undocumented" ]; then
  pass "every exported function is in docs/api.md"
else
  fail "docs/api.md" "not documented:$undocumented"
fi

# ------------------------------------------------------------ pkg-config
export PKG_CONFIG_PATH=$root/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
version=$(build/gdngen --version | cut -d' ' -f2) # make install built it
if [ "$(pkg-config --modversion gdngen)" = "$version" ]; then
  pass "pkg-config --modversion gdngen: $version"
else
  fail "pkg-config --modversion" "$(pkg-config --modversion gdngen 2>&1)"
fi
libs=$(pkg-config --libs gdngen | sed "s/ *$//")
if [ "$libs" = "-L$root/lib -lgdn" ]; then
  pass "pkg-config --libs gdngen: $libs"
else
  fail "pkg-config --libs" "$libs"
fi
if pkg-config --static --libs gdngen | grep -q -- "-lcuda"; then
  pass "pkg-config --static --libs names the driver library"
else
  fail "pkg-config --static --libs" "$(pkg-config --static --libs gdngen)"
fi

# ------------------------------------------------------------ the C example
cflags="-std=c11 -O2 -Wall -Wextra -Werror $(pkg-config --cflags gdngen) -I$cuda/include"
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
exe=$scratch/prefill_checkout # as docs/examples/README.md builds it from the checkout
if cc -std=c11 -O2 -Iruntime -I"$cuda/include" docs/examples/prefill.c build/libgdn.a \
     -L"$cuda/lib64/stubs" -lcuda -lpthread -lm -o "$exe" 2>"$scratch/cc.log"; then
  pass "prefill.c links build/libgdn.a as its README says"
else
  fail "prefill.c from the checkout" "$(head -5 "$scratch/cc.log")"
fi
exe=$scratch/prefill_shared
# shellcheck disable=SC2086
if cc $cflags docs/examples/prefill.c $libs -L"$cuda/lib64/stubs" -lcuda -lm \
     -Wl,-rpath,"$root/lib" -o "$exe" 2>"$scratch/cc.log"; then
  if needed "$exe" | grep -q "libgdn.so " && needed "$exe" | grep -q "libcuda.so.1"; then
    pass "prefill.c links against the installed libgdn.so (needs: $(needed "$exe"))"
  else
    fail "prefill.c, shared" "needs: $(needed "$exe")"
  fi
else
  fail "prefill.c, shared" "$(head -5 "$scratch/cc.log")"
fi
exe=$scratch/prefill_static
# shellcheck disable=SC2086
if cc $cflags docs/examples/prefill.c "$root/lib/libgdn.a" -Wl,--as-needed \
     $(pkg-config --static --libs gdngen) -o "$exe" 2>"$scratch/cc.log"; then
  if needed "$exe" | grep -q "libgdn"; then
    fail "prefill.c, static" "still needs libgdn: $(needed "$exe")"
  else
    pass "prefill.c links the installed libgdn.a (needs: $(needed "$exe"))"
  fi
else
  fail "prefill.c, static" "$(head -5 "$scratch/cc.log")"
fi
if echo '#include <gdn.h>
int main(void) { gdn_prefill_args a = gdn_prefill_args_default(); return a.head_dim != 128; }' |
   c++ -x c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$root/include" - 2>"$scratch/cxx.log"; then
  pass "the installed gdn.h compiles as C++"
else
  fail "gdn.h as C++" "$(head -5 "$scratch/cxx.log")"
fi

# ------------------------------------------------------------ Python
pydir=$root/lib/gdngen/python
lib=$(cd "$scratch" && env -u GDNGEN_LIB PYTHONPATH="$pydir" python3 -c \
      'import gdngen; print(gdngen._lib_path())')
if [ "$lib" = "$prefix/lib/libgdn.so" ]; then
  pass "the installed binding loads $lib"
else
  fail "the installed binding" "loads '$lib', not $prefix/lib/libgdn.so"
fi
lib=$(cd "$scratch" && GDNGEN_LIB=/elsewhere/libgdn.so PYTHONPATH="$pydir" python3 -c \
      'import gdngen; print(gdngen._lib_path())')
if [ "$lib" = "/elsewhere/libgdn.so" ]; then
  pass "\$GDNGEN_LIB still comes first"
else
  fail "\$GDNGEN_LIB" "the binding loads '$lib'"
fi
lib=$(cd "$scratch" && env -u GDNGEN_LIB PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$repo/runtime/python" python3 -c \
      'import gdngen; print(gdngen._lib_path())')
if [ "$lib" = "$repo/build/libgdn.so" ]; then
  pass "the checkout's binding loads its own build/libgdn.so"
else
  fail "the checkout's binding" "loads '$lib'"
fi
if python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
     docs/examples/prefill.py "$scratch/prefill.pyc" 2>"$scratch/py.log"; then
  pass "docs/examples/prefill.py compiles"
else
  fail "prefill.py" "$(head -5 "$scratch/py.log")"
fi

# ------------------------------------------------------------ make uninstall
(cd "$scratch" && PYTHONPATH="$pydir" python3 -c 'import gdngen') # leaves __pycache__
if $make_cmd -s uninstall DESTDIR="$dest" PREFIX="$prefix" >"$scratch/uninstall.log" 2>&1; then
  left=$(find "$root" -type f | sed "s|^$root/||" | tr '\n' ' ')
  if [ -z "$left" ] && [ ! -e "$root/lib/gdngen" ]; then
    pass "make uninstall leaves no file of gdngen"
  else
    fail "make uninstall" "left: $left $(ls -d "$root/lib/gdngen" 2>/dev/null)"
  fi
else
  fail "make uninstall" "$(tail -5 "$scratch/uninstall.log")"
fi

summary install
