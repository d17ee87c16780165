#!/usr/bin/env bash
# ResNet-50 conv layers: polysci vs oneDNN, N=2, 2 threads (defaults).
# Builds bench targets if needed (incremental), writes the CSV to $CSV and
# prints the summary + markdown table + CSV on stdout (per-layer progress
# rows and the build log go to stderr).
#
# Environment overrides: BUILD_DIR, LAYERS, N, THREADS, TRIALS, MIN_TRIAL_MS, CSV.
# Extra arguments are passed to polysci-bench-layers (e.g. --no-nhwc, --only resnet_1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-bench}"
LAYERS="${LAYERS:-$ROOT/../shared/layers/resnet50.txt}"
N="${N:-2}"
THREADS="${THREADS:-2}"
TRIALS="${TRIALS:-15}"
MIN_TRIAL_MS="${MIN_TRIAL_MS:-20}"
CSV="${CSV:-$BUILD_DIR/resnet50_N${N}_t${THREADS}.csv}"
BIN="$BUILD_DIR/bench/polysci-bench-layers"

{
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target polysci-bench-layers
} 1>&2

if [ ! -x "$BIN" ]; then
  echo "run_resnet50.sh: $BIN was not built (oneDNN missing? see the cmake output)" >&2
  exit 1
fi

echo "<!-- $(date -u +%Y-%m-%dT%H:%MZ) $(uname -n); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(nproc) cpus; load: $(cut -d' ' -f1-3 /proc/loadavg) -->"
rc=0
"$BIN" --quiet --markdown --csv "$CSV" -n "$N" -t "$THREADS" -r "$TRIALS" -m "$MIN_TRIAL_MS" \
  "$@" "$LAYERS" || rc=$?
if [ -f "$CSV" ]; then
  echo
  echo '```csv'
  cat "$CSV"
  echo '```'
  echo "CSV written to $CSV" >&2
fi
exit "$rc"
