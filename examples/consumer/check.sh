#!/usr/bin/env bash
# Builds and runs examples/consumer/ against an installed polysci:
#
#   bash examples/consumer/check.sh PREFIX        (after: cmake --install build --prefix PREFIX)
#
# It installs nothing. In a temporary directory it
#   1. configures the consumer with find_package(polysci) (CMAKE_PREFIX_PATH=PREFIX)
#      and builds + runs it against polysci::polysci and polysci::polysci_static;
#   2. configures it with pkg_check_modules (PKG_CONFIG_PATH=PREFIX/.../pkgconfig),
#      shared (--libs) and static (--static --libs);
#   3. compiles it by hand with `pkg-config --cflags --libs polysci` and
#      `pkg-config --static --libs polysci`.
# Each program must pass its own checks; the shared ones must load
# libpolysci.so from PREFIX and the static ones must not need libpolysci.so.
# Exit status 0 when everything passed.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 PREFIX   (an install prefix of polysci)" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}

pc=$(find "$prefix" -path '*/pkgconfig/polysci.pc' -print -quit)
[ -n "$pc" ] || { echo "check.sh: no pkgconfig/polysci.pc under $prefix" >&2; exit 1; }
pcdir=$(dirname "$pc")
libdir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir polysci)
if [ ! -e "$libdir/libpolysci.so" ] || [ ! -e "$libdir/libpolysci.a" ]; then
  echo "check.sh: libpolysci.so/.a not in $libdir (pkg-config libdir of $pc)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/polysci-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0

# run NAME EXE shared|static: runs EXE and checks which polysci it uses.
run() {
  local name=$1 exe=$2 kind=$3 log="$work/$1.log"
  local rc=0
  "$exe" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $name: exit status $rc"; sed 's/^/    /' "$log"; fails=$((fails + 1)); return
  fi
  local needs; needs=$(readelf -d "$exe" | grep -c 'NEEDED.*libpolysci\.so' || true)
  if [ "$kind" = shared ]; then
    local so; so=$(ldd "$exe" | awk '/libpolysci\.so/ {print $3}')
    if [ "$needs" -eq 0 ] || [ "$(readlink -f "$so")" != "$(readlink -f "$libdir/libpolysci.so")" ]; then
      echo "FAIL $name: uses '${so:-no libpolysci.so}', not $libdir/libpolysci.so"; fails=$((fails + 1)); return
    fi
  elif [ "$needs" -ne 0 ]; then
    echo "FAIL $name: linked against libpolysci.so, expected libpolysci.a"; fails=$((fails + 1)); return
  fi
  echo "ok   $name ($kind, $(grep -c ': OK$' "$log") checks passed)"
}

# build NAME CMD...: runs a build step quietly, shows its output on failure.
build() {
  local name=$1; shift
  if ! "$@" >"$work/$name.build.log" 2>&1; then
    echo "FAIL $name: build step failed: $*"; sed 's/^/    /' "$work/$name.build.log" | tail -40
    fails=$((fails + 1)); return 1
  fi
}

echo "polysci consumer check against $prefix"

# 1. find_package(polysci)
if build cmake-package-configure cmake -S "$here" -B "$work/pkg" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF &&
   build cmake-package-build cmake --build "$work/pkg" -j2; then
  if ! grep -q "^-- polysci .* from $prefix/" "$work/cmake-package-configure.build.log"; then
    echo "FAIL find_package: did not take polysci from $prefix:"
    grep '^-- polysci' "$work/cmake-package-configure.build.log" | sed 's/^/    /'
    fails=$((fails + 1))
  fi
  run find_package:polysci::polysci "$work/pkg/consumer_shared" shared
  run find_package:polysci::polysci_static "$work/pkg/consumer_static" static
fi

# 2. pkg_check_modules
if build cmake-pkg-config-configure env PKG_CONFIG_PATH="$pcdir" cmake -S "$here" -B "$work/pc" \
       -DCMAKE_BUILD_TYPE=Release -DCONSUMER_USE_PKG_CONFIG=ON &&
   build cmake-pkg-config-build cmake --build "$work/pc" -j2; then
  run pkg_check_modules:shared "$work/pc/consumer_shared" shared
  run pkg_check_modules:static "$work/pc/consumer_static" static
fi

# 3. the compiler alone, flags from pkg-config
export PKG_CONFIG_PATH="$pcdir"
cflags=$(pkg-config --cflags polysci)
libs=$(pkg-config --libs polysci)
static_libs=$(pkg-config --static --libs polysci)
# libpolysci.so and libpolysci.a share a name: ask GNU ld for the archive.
static_libs=$(printf '%s\n' "$static_libs" | sed 's/\(^\| \)-lpolysci\( \|$\)/\1-l:libpolysci.a\2/')
# shellcheck disable=SC2086  # word splitting of the flags is intended
if build cc-shared $CC -std=c11 -O2 $cflags "$here/main.c" -o "$work/cc_shared" $libs -Wl,-rpath,"$libdir" -lm; then
  run "pkg-config --libs" "$work/cc_shared" shared
fi
# shellcheck disable=SC2086
if build cc-static $CC -std=c11 -O2 $cflags "$here/main.c" -o "$work/cc_static" $static_libs -lm; then
  run "pkg-config --static --libs" "$work/cc_static" static
fi

if [ "$fails" -ne 0 ]; then
  echo "polysci consumer check: $fails failure(s)"
  exit 1
fi
echo "polysci consumer check: all passed"
