#!/bin/bash
# Timing-only: PS_IDEAL=1 folds every call's operands into small per-thread windows
# (the same calls, all operands L1/L2-resident); PS_IDEAL=2 computes the fold and discards it.
B=/tmp/ideal/build/tools/polysci
O=/tmp/idealrun
for set in "resnet50 2" "alexnet 1" "resnet50 1"; do
  set -- $set
  for r in 1 2; do
    for v in 1 2; do
      PS_IDEAL=$v $B bench conv --layers $1 --N $2 --vs onednn --reps 7 --plan-reps 1 --csv $O/${1}_N$2_v${v}_r$r.csv > $O/${1}_N$2_v${v}_r$r.log 2>&1
    done
  done
done
