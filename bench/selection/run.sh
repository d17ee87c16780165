#!/usr/bin/env bash
# Selection on generated shapes (issue: plans that hold on shapes they were not tuned on):
# `polysci bench conv --random` layers of seeds no ranker was trained or tuned on, every variant
# timed, oneDNN beside them, once with the static default planner and once with the measured mode
# (top_k timing within a planning-time budget); then docs/perf/selection.md.
#
# usage: bash bench/selection/run.sh [--out DIR] [--top-k K] [--budget-ms MS] [--quick]
#   held-out sets (family:seed:count): $SETS [general:201:6 few-channel:203:8 general:202:6]
#   --quick: the first set with 3 layers (a smoke run)
# About 25 minutes on a 2-core machine; nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=docs/perf
TOPK=32
BUDGET=50
SETS=${SETS:-general:201:6 few-channel:203:8 general:202:6}
ARGS="--threads 2 --vs onednn --exhaustive --variant-reps 3 --min-trial-ms 5 --reps 5"
given="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift ;;
    --top-k) TOPK=$2; shift ;;
    --budget-ms) BUDGET=$2; shift ;;
    --quick) SETS=general:201:3; ARGS="--threads 2 --vs onednn --exhaustive --variant-reps 1 --min-trial-ms 2 --reps 3" ;;
    *) echo "usage: bash bench/selection/run.sh [--out DIR] [--top-k K] [--budget-ms MS] [--quick]" >&2; exit 2 ;;
  esac
  shift
done
bash scripts/build.sh >/dev/null
PS=build/tools/polysci
mkdir -p "$OUT/csv"
commit="$(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes')"
start=$(date +%s)
csvs=()
for s in $SETS; do
  IFS=: read -r family seed count <<<"$s"
  for mode in static measured; do
    extra=""
    [ "$mode" = measured ] && extra="--top-k $TOPK --budget-ms $BUDGET"
    out=$OUT/csv/selection_${family}_s${seed}_${mode}.csv
    # shellcheck disable=SC2086
    "$PS" bench conv --random "$count" --seed "$seed" --family "$family" $ARGS $extra --csv "$out.part" --quiet
    mv "$out.part" "$out"
    csvs+=("$mode:$family:$seed:$out")
  done
done
/usr/bin/python3 bench/selection/report.py --commit "$commit" --seconds $(( $(date +%s) - start )) \
  --command "bash bench/selection/run.sh${given:+ $given}" --top-k "$TOPK" --budget-ms "$BUDGET" --info "$("$PS" info)" \
  "${csvs[@]}" > "$OUT/selection.md"
echo "wrote $OUT/selection.md"
