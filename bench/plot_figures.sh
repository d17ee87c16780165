#!/usr/bin/env bash
# Regenerates the figures docs/img/variants_<set>_<machine>.png from the
# exhaustive timings in data/dnn/<machine>/ (docs/data/README.md): per layer
# set and machine, bench/plot_variants.py over the set's --dist file, the
# machine's summary.csv (default schedule) and dnn_picks.csv (the DNN's first
# choice). Needs gnuplot (Debian gnuplot-nox).
#
# usage: bash bench/plot_figures.sh [OUTDIR]     (default docs/img)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img}
mkdir -p "$out"
for machine in vm xeon; do
  dir=data/dnn/$machine
  for set in resnet50 fastrcnn mobilenet alexnet overfeat vgga gemm; do
    dist=$dir/${set}_N2_t2.csv
    [ "$set" = gemm ] && dist=$dir/gemm_t2.csv
    python3 bench/plot_variants.py --dist "$dist" --summary "$dir/summary.csv" --picks "$dir/dnn_picks.csv" \
      --out "$out/variants_${set}_${machine}.png"
  done
done
