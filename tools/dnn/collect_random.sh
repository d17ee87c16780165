#!/usr/bin/env bash
# Times every variant of generated random conv layers (`polysci bench conv --random`), the ranker's
# training and held-out data for shapes outside bench/layers (docs/cost-model.md, "Selection on
# generated shapes"). One file per (family, seed):
#   $DATA/random_<family>_s<seed>_t<T>.csv   --dist rows (every variant: time, working sets, shape statistics)
#   $DATA/random_<family>_s<seed>_summary.csv  --csv rows (chosen plan, default schedule, oneDNN, best and worst variant)
#   $DATA/machine.json                        `polysci info --json` of the machine that timed them
# Usage: tools/dnn/collect_random.sh FAMILY SEED COUNT      (FAMILY: general or few-channel)
# Environment: BUILD [build], DATA [data/dnn/local], THREADS [2], RANKER [default] (the plan the summary reports),
#   BENCH_ARGS [--variant-reps 2 --min-trial-ms 3 --reps 3 --vs onednn]
# Nothing else may run meanwhile: every variant is timed.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 3 ] || { echo "usage: $0 FAMILY SEED COUNT" >&2; exit 2; }
family=$1 seed=$2 count=$3
BUILD=${BUILD:-build}
DATA=${DATA:-data/dnn/local}
THREADS=${THREADS:-2}
RANKER=${RANKER:-default}
BENCH_ARGS=${BENCH_ARGS:---variant-reps 2 --min-trial-ms 3 --reps 3 --vs onednn}
cli=$BUILD/tools/polysci
if [ ! -x "$cli" ]; then
    [ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
    cmake --build "$BUILD" --target polysci_cli
fi
mkdir -p "$DATA"
"$cli" info --json > "$DATA/machine.json.part" && mv "$DATA/machine.json.part" "$DATA/machine.json"
out=$DATA/random_${family}_s${seed}_t${THREADS}.csv
sum=$DATA/random_${family}_s${seed}_summary.csv
# Written under temporary names first: an interrupted run leaves no half file the trainer would read.
# shellcheck disable=SC2086
"$cli" bench conv --random "$count" --seed "$seed" --family "$family" --threads "$THREADS" --ranker "$RANKER" \
    --exhaustive --dist "$out.part" --csv "$sum.part" $BENCH_ARGS
mv "$out.part" "$out"
mv "$sum.part" "$sum"
echo "done: $out $sum"
