#!/usr/bin/env bash
# Builds polysci, then runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure
# Python binding (numpy) and the PyTorch example, against the library just built.
# Debian's interpreter: the one python3-numpy/python3-torch belong to.
POLYSCI_LIBRARY="$PWD/build/lib/libpolysci.so" /usr/bin/python3 -m pytest -q -p no:cacheprovider bindings/python
# The DNN trainer's held-out evaluation on small synthetic data (numpy only).
/usr/bin/python3 -m pytest -q -p no:cacheprovider tools/dnn
# Install into a scratch prefix and build + run examples/consumer/ against it
# (find_package(polysci) and pkg-config, shared and static).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install build --prefix "$tmp" >/dev/null
bash examples/consumer/check.sh "$tmp"
# The installed CLI finds the layer sets in its own prefix (share/polysci/layers).
demo=$("$tmp/bin/polysci" demo --layers googlenet --reps 1)
grep -q "demo: $tmp/share/polysci/layers/googlenet.txt$" <<<"$demo" ||
  { echo "test.sh: the installed polysci does not read $tmp/share/polysci/layers" >&2; exit 1; }
# The whole ctest suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included): its own build in build-asan/ (CMakePresets.json).
bash scripts/sanitize.sh
