#!/usr/bin/env bash
# Retrains the PolyScientist-DNN ranker for this machine (docs/cost-model.md, "DNN ranker"):
#   1. collect: `polysci bench --exhaustive --dist` times every variant of every layer of the conv
#      layer sets in bench/layers (and the GEMMs) with its Alg. 2 working sets, into
#      $DATA/<set>_N<N>_t<T>.csv and $DATA/gemm_t<T>.csv (per-layer summaries: $DATA/summary.csv);
#   2. evaluate: train on 70% of the layers, rank the other 30% ($DATA/holdout_report.md);
#   3. train on every layer: lib/ranking/dnn_weights.c, tests/data/dnn_vectors.txt and the
#      model's first choice per layer ($DATA/dnn_picks.csv, for bench/plot_variants.py);
#   4. rebuild and run test_dnn (C inference vs the trainer's).
# Collecting times every variant: half an hour for the conv sets on 2 cores, hours with the largest GEMMs. Run it on a quiet machine.
#
# Environment (defaults in brackets):
#   BUILD [build]            build directory with tools/polysci (configured if missing)
#   DATA [data/dnn/local]    one folder per machine (the repository has data/dnn/vm and data/dnn/xeon)
#   N [2], THREADS [2]       conv batch and threads of the timed runs
#   SETS [resnet50 fastrcnn mobilenet alexnet overfeat vgga]   conv layer sets (bench/layers names)
#   GEMM [1]                 0: no GEMM data
#   SKIP_COLLECT [0]         1: train on the $DATA/*_t$THREADS.csv already there
#   BENCH_ARGS [--variant-reps 3 --min-trial-ms 5 --reps 3]    passed to polysci bench
#   SEED [1], SPLIT_SEED [1] training seed and held-out split seed
#   PYTHON [/usr/bin/python3]   a python3 with numpy (Debian python3-numpy)
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build}
DATA=${DATA:-data/dnn/local}
N=${N:-2}
THREADS=${THREADS:-2}
SETS=${SETS:-resnet50 fastrcnn mobilenet alexnet overfeat vgga}
GEMM=${GEMM:-1}
SKIP_COLLECT=${SKIP_COLLECT:-0}
BENCH_ARGS=${BENCH_ARGS:---variant-reps 3 --min-trial-ms 5 --reps 3}
SEED=${SEED:-1}
SPLIT_SEED=${SPLIT_SEED:-1}
PYTHON=${PYTHON:-/usr/bin/python3}
cli=$BUILD/tools/polysci

if [ ! -x "$cli" ]; then
    [ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
    cmake --build "$BUILD" --target polysci_cli
fi
mkdir -p "$DATA"

if [ "$SKIP_COLLECT" != 1 ]; then
    summaries=$(mktemp -d)
    trap 'rm -rf "$summaries"' EXIT
    # Each file is written under a temporary name first: an interrupted run leaves no half file
    # that the trainer would take for a whole layer set.
    for set in $SETS; do
        out=$DATA/${set}_N${N}_t${THREADS}.csv
        echo "== collecting $out"
        # shellcheck disable=SC2086
        "$cli" bench conv --layers "$set" --N "$N" --threads "$THREADS" --ranker cost --exhaustive \
            --dist "$out.part" $BENCH_ARGS --csv "$summaries/$set.csv"
        mv "$out.part" "$out"
    done
    if [ "$GEMM" = 1 ]; then
        out=$DATA/gemm_t${THREADS}.csv
        echo "== collecting $out"
        # shellcheck disable=SC2086
        "$cli" bench gemm --layers gemm --threads "$THREADS" --ranker cost --exhaustive \
            --dist "$out.part" $BENCH_ARGS --csv "$summaries/gemm.csv"
        mv "$out.part" "$out"
    fi
    # One summary file (the default schedule's time per layer, for plots and tables).
    first=1
    for f in "$summaries"/*.csv; do
        if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
    done > "$DATA/summary.csv"
fi

# The file list in a fixed order: it is recorded in the weights' header.
mapfile -t data < <(LC_ALL=C ls "$DATA"/*_t"$THREADS".csv)
[ "${#data[@]}" -gt 0 ] || { echo "retrain.sh: no $DATA/*_t$THREADS.csv" >&2; exit 1; }

echo "== evaluating (70% of the layers for training, 30% held out)"
"$PYTHON" tools/dnn/train.py --seed "$SEED" --holdout-frac 0.3 --split-seed "$SPLIT_SEED" \
    --report "$DATA/holdout_report.md" "${data[@]}"

echo "== training on every layer"
"$PYTHON" tools/dnn/train.py --seed "$SEED" --picks "$DATA/dnn_picks.csv" "${data[@]}"

echo "== rebuilding"
cmake --build "$BUILD"
if [ -f "$BUILD/CTestTestfile.cmake" ]; then
    (cd "$BUILD" && ctest -R '^test_dnn$' --output-on-failure)
fi
echo "done: lib/ranking/dnn_weights.c, tests/data/dnn_vectors.txt, $DATA/holdout_report.md"
