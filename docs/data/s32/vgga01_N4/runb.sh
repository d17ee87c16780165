#!/bin/bash
# usage: runb.sh N ROUNDS LAYERFILE BIN...
N=$1; R=$2; L=$3; shift 3
for ((i=1;i<=R;i++)); do for b in "$@"; do
  $b bench conv --layers $L --N $N --reps 9 --plan-reps 1 --threads 2 --vs onednn --csv /tmp/stag/b.csv > /dev/null 2>&1
  awk -F, -v s=$(basename $b) -v i=$i 'NR>1{printf "round %d stagger %s %s: polysci %.3f onednn %.3f ratio %.3f\n", i, s, $1, $4, $5, $6}' /tmp/stag/b.csv
done; done
