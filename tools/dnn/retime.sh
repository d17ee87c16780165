#!/usr/bin/env bash
# Low-noise selection study: how well the rankers' first choices do against a low-noise re-timing.
#
# An exhaustive run times ~480 variants per layer with 3 short trials each: its "fastest variant" is the
# luckiest of hundreds of noisy medians, so every pick efficiency computed from it is biased low. This
# re-times only the front runners, in interleaved trials inside one process:
#   1. candidates: per layer, the fastest variants of the exhaustive run(s), Eq. 1's first choice and the
#      DNN's four first choices, for the held-out models of split seeds $SPLITS and for the shipped model
#      (tools/dnn/train.py --candidates; the shipped weights are retrained to a scratch file, bitwise the
#      same as lib/ranking/dnn_weights.c when the data is the one they were trained on);
#   2. timing, $RUNS times (one process per set and run: what differs between processes, e.g. where each
#      plan's buffers land, varies too): `polysci bench conv --candidates` per layer set: the DNN's plan,
#      the default schedule, every candidate and oneDNN in alternating trials
#      ($OUT/run<r>/<set>_N<N>_t<T>.csv, $OUT/run<r>/summary.csv);
#   3. reports: tools/dnn/train.py --holdout-frac 0.3 --split-seed S --retimed (every run; a schedule's
#      times are averaged) for each split seed ($OUT/holdout_report_S.md).
# Nothing else may run meanwhile (candidates ~10 minutes, each timing run ~8 on 2 cores).
#
# Environment (defaults in brackets):
#   BUILD [build]                  build directory with tools/polysci (configured if missing)
#   DATA [data/dnn/vm]             the exhaustive run (<set>_N<N>_t<T>.csv files)
#   REPLICATE (required)           a second exhaustive run of the same layers, e.g. collected with
#                                  `DATA=data/dnn/local_replicate GEMM=0 bash tools/dnn/retrain.sh`
#                                  (scored against, and its fastest re-timed)
#   EXTRA ["$OUT/first_layers"]    more exhaustive files whose fastest variants are re-timed too
#   OUT [data/dnn/local_retime]    where the candidates, timings and reports go
#   N [2], THREADS [2], SETS [resnet50 fastrcnn mobilenet alexnet overfeat vgga]
#   SPLITS [1 2 3], TOP [6]        split seeds; fastest variants per layer and run
#   RUNS [2]                       timing runs
#   BENCH_ARGS [--reps 11 --min-trial-ms 20 --plan-reps 1]
#   SKIP_TIMING [0]                1: only step 3, on the timings already in $OUT
#   PYTHON [/usr/bin/python3]      a python3 with numpy (Debian python3-numpy)
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build}
DATA=${DATA:-data/dnn/vm}
REPLICATE=${REPLICATE:?retime.sh: set REPLICATE to a second exhaustive run of the layers (see the header)}
OUT=${OUT:-data/dnn/local_retime}
EXTRA=${EXTRA:-$OUT/first_layers}
N=${N:-2}
THREADS=${THREADS:-2}
SETS=${SETS:-resnet50 fastrcnn mobilenet alexnet overfeat vgga}
SPLITS=${SPLITS:-1 2 3}
TOP=${TOP:-6}
RUNS=${RUNS:-2}
BENCH_ARGS=${BENCH_ARGS:---reps 11 --min-trial-ms 20 --plan-reps 1}
SKIP_TIMING=${SKIP_TIMING:-0}
PYTHON=${PYTHON:-/usr/bin/python3}
cli=$BUILD/tools/polysci

if [ ! -x "$cli" ]; then
    [ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
    cmake --build "$BUILD" --target polysci_cli
fi
mkdir -p "$OUT"
mapfile -t data < <(LC_ALL=C ls "$DATA"/*_t"$THREADS".csv)
mapfile -t replicate < <(LC_ALL=C ls "$REPLICATE"/*_t"$THREADS".csv)
extra=()
[ -d "$EXTRA" ] && mapfile -t extra < <(LC_ALL=C ls "$EXTRA"/*_t"$THREADS".csv)
[ "${#data[@]}" -gt 0 ] && [ "${#replicate[@]}" -gt 0 ] || { echo "retime.sh: no data in $DATA or $REPLICATE" >&2; exit 1; }

if [ "$SKIP_TIMING" != 1 ]; then
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    echo "== candidates"
    for s in $SPLITS; do
        "$PYTHON" tools/dnn/train.py --holdout-frac 0.3 --split-seed "$s" --candidates-top "$TOP" \
            --candidates "$scratch/split$s.csv" "${data[@]}" --replicate "${replicate[@]}" "${extra[@]}" >/dev/null
    done
    "$PYTHON" tools/dnn/train.py --candidates-top "$TOP" --candidates "$scratch/shipped.csv" \
        --out "$scratch/weights.c" --vectors "$scratch/vectors.txt" "${data[@]}" \
        --replicate "${replicate[@]}" "${extra[@]}" >/dev/null
    if ! cmp -s <(grep -v '^ \*' "$scratch/weights.c") <(grep -v '^ \*' lib/ranking/dnn_weights.c); then
        echo "retime.sh: note: a model trained on $DATA differs from the shipped weights;" \
             "the re-timed 'shipped' picks are that model's" >&2
    fi
    { echo "name,schedule,why"; for f in "$scratch"/split*.csv "$scratch/shipped.csv"; do
          tail -n +2 "$f"; done; } > "$OUT/candidates.csv"

    for r in $(seq 1 "$RUNS"); do
        mkdir -p "$OUT/run$r"
        summaries=()
        for set in $SETS; do
            out=$OUT/run$r/${set}_N${N}_t${THREADS}.csv
            echo "== timing $out"
            # shellcheck disable=SC2086
            "$cli" bench conv --layers "$set" --N "$N" --threads "$THREADS" --ranker dnn --vs onednn \
                --candidates "$OUT/candidates.csv" --dist "$out.part" --csv "$scratch/$set.csv" $BENCH_ARGS
            mv "$out.part" "$out"
            summaries+=("$scratch/$set.csv")
        done
        { head -1 "${summaries[0]}"; for f in "${summaries[@]}"; do tail -n +2 "$f"; done; } > "$OUT/run$r/summary.csv"
    done
fi

mapfile -t retimed < <(LC_ALL=C ls "$OUT"/run*/*_N"$N"_t"$THREADS".csv)
for s in $SPLITS; do
    echo "== report, split seed $s"
    "$PYTHON" tools/dnn/train.py --holdout-frac 0.3 --split-seed "$s" --report "$OUT/holdout_report_$s.md" \
        "${data[@]}" --replicate "${replicate[@]}" --retimed "${retimed[@]}" >/dev/null
done
echo "done: $OUT/candidates.csv, $OUT/run*/*_N${N}_t${THREADS}.csv, $OUT/run*/summary.csv, $OUT/holdout_report_*.md"
