#!/usr/bin/env bash
# What the input copy costs: a build with nocopy_timing.patch (PS_NOCOPY=1:
# every execution after a region's first reads that stale copy instead of
# copying) beside the same build copying, alternating processes, 3 rounds per N.
# usage: POLYSCI=patched-cli bash nocopy.sh OUTDIR   (compare the csv's ratio column)
set -u
P=${POLYSCI:?the CLI built with nocopy_timing.patch}
OUT=${1:?OUTDIR}; mkdir -p "$OUT"
L="$(dirname "$0")/copy_layers.txt"
for N in 1 2; do
  for i in 1 2 3; do
    env -u PS_NOCOPY "$P" bench conv --layers "$L" --N $N --threads 2 --reps 9 --plan-reps 1 --vs onednn --csv "$OUT/copy_N${N}_$i.csv" > /dev/null 2>&1
    PS_NOCOPY=1 "$P" bench conv --layers "$L" --N $N --threads 2 --reps 9 --plan-reps 1 --vs onednn --csv "$OUT/nocopy_N${N}_$i.csv" > /dev/null 2>&1
  done
done
for f in "$OUT"/*.csv; do printf '%s ' "$(basename "$f" .csv)"; awk -F, 'NR > 1 { printf "%s %s  ", $1, $6 }' "$f"; echo; done
