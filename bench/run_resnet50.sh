#!/usr/bin/env bash
# ResNet-50 conv layers: polysci vs oneDNN (its blocked `any` and plain-NHWC
# primitives), N=2, 2 threads (defaults). Builds the CLI if needed
# (incremental), writes the CSV to $CSV and prints the summary and the
# markdown table, then the CSV, on stdout (per-layer rows and the build log go
# to stderr).
#
# Environment overrides: BUILD_DIR, LAYERS (a bench/layers name or a path), N,
# THREADS, TRIALS, MIN_TRIAL_MS, ONEDNN_MODE (any, nhwc or both), CSV.
# Extra arguments go to `polysci bench conv` (e.g. --only resnet_1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
LAYERS="${LAYERS:-resnet50}"
N="${N:-2}"
THREADS="${THREADS:-2}"
TRIALS="${TRIALS:-15}"
MIN_TRIAL_MS="${MIN_TRIAL_MS:-20}"
ONEDNN_MODE="${ONEDNN_MODE:-both}"
CSV="${CSV:-$BUILD_DIR/resnet50_N${N}_t${THREADS}.csv}"
BIN="$BUILD_DIR/tools/polysci"

{
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target polysci_cli
} 1>&2

echo "<!-- $(date -u +%Y-%m-%dT%H:%MZ) $(uname -n); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(nproc) cpus; load: $(cut -d' ' -f1-3 /proc/loadavg) -->"
rc=0
"$BIN" bench conv --layers "$LAYERS" --N "$N" --threads "$THREADS" --reps "$TRIALS" --min-trial-ms "$MIN_TRIAL_MS" \
  --vs onednn --onednn-mode "$ONEDNN_MODE" --quiet --markdown --csv "$CSV" "$@" || rc=$?
if [ -f "$CSV" ]; then
  echo
  echo '```csv'
  cat "$CSV"
  echo '```'
  echo "CSV written to $CSV" >&2
fi
exit "$rc"
