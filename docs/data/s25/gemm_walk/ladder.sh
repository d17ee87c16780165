#!/bin/bash
# Session 25: what the 2048^3 plan's kernel (64x48x64, batch 4) loses to each part of its walk's memory
# pattern, one factor at a time, against dnnl_sgemm and polysci on whole GEMMs in the same minutes.
# usage: bash ladder.sh ROUNDS BUILD_DIR OUT_DIR   (run from the repository root)
set -eu
ROUNDS=${1:-3}; BUILD=${2:-build}; OUT=${3:-/tmp/s25_ladder}
mkdir -p "$OUT"
CEIL="$BUILD/bench/polysci-brgemm-ceiling --m 64 --n 48 --k 64 --batch 4 --threads 2 --trials 5"
printf "g512 512 512 512\ngemm_square_2048 2048 2048 2048\n" > "$OUT/shapes.txt"
configs=(
  "base|"
  "B 1 MiB from L2|--b-chunks 22"
  "C 22 blocks in L2, ldc 64|--c-chunks 22"
  "C 22 blocks in L2, ldc 2048|--c-chunks 22 --ldc 2048"
  "C 22 blocks in L2, ldc 2064|--c-chunks 22 --ldc 2064"
  "C from memory, ldc 2048|--c-chunks 22 --c-rows 32 --ldc 2048"
  "C from memory, ldc 2064|--c-chunks 22 --c-rows 32 --ldc 2064"
  "walk: B from L2, C from memory, ldc 2048|--b-chunks 22 --c-chunks 22 --c-rows 32 --ldc 2048"
  "walk: B from L2, C from memory, ldc 2064|--b-chunks 22 --c-chunks 22 --c-rows 32 --ldc 2064"
)
for r in $(seq 1 "$ROUNDS"); do
  for c in "${configs[@]}"; do
    name=${c%%|*}; opts=${c#*|}
    g=$($CEIL $opts | sed 's/.*: \([0-9.]*\) GFLOP\/s/\1/')
    echo "round $r | $name | $g" | tee -a "$OUT/ceiling.txt"
  done
  "$BUILD/tools/polysci" bench gemm --layers "$OUT/shapes.txt" --threads 2 --vs onednn --reps 7 --csv "$OUT/gemm_r$r.csv" > "$OUT/gemm_r$r.log" 2>&1
  tail -n +2 "$OUT/gemm_r$r.csv" | awk -F, -v r="$r" '{printf "round %s | %s polysci %s GF/s, dnnl_sgemm %s GF/s, ratio %s\n", r, $1, $7, $8, $6}' | tee -a "$OUT/ceiling.txt"
done
