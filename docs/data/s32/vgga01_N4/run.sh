#!/bin/bash
# usage: run.sh N ROUNDS STAGGERS...
N=$1; R=$2; shift 2
for ((i=1;i<=R;i++)); do for s in "$@"; do
  PS_COPY_STAGGER=$s /tmp/ps_stagger bench conv --layers /tmp/stag/vgga01.txt --N $N --reps 9 --plan-reps 1 --threads 2 --vs onednn --csv /tmp/stag/N${N}_s${s}_$i.csv > /tmp/stag/N${N}_s${s}_$i.log 2>&1
  awk -F, -v s=$s -v i=$i 'NR>1{printf "round %d stagger %5d: polysci %.3f onednn %.3f ratio %.3f\n", i, s, $4, $5, $6}' /tmp/stag/N${N}_s${s}_$i.csv
done; done
