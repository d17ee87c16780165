#!/bin/bash
# PS_IDEAL unset (the library), 2 (control: the fold computed and discarded), 1 (operands folded into
# cache-resident windows), in alternating processes, two rounds, every conv set at N = 2 and N = 1.
B=${B:-/tmp/ideal/build/tools/polysci}
O=${O:-/tmp/ideal34}
for r in 1 2; do
for set in resnet50 fastrcnn mobilenet alexnet overfeat vgga; do
  for N in 2 1; do
    reps=7; [ $set = resnet50 ] && reps=11
    for v in 0 2 1; do
      if [ $v = 0 ]; then unset PS_IDEAL; else export PS_IDEAL=$v; fi
      $B bench conv --layers $set --N $N --vs onednn --reps $reps --plan-reps 1 --csv $O/${set}_N${N}_v${v}_r$r.csv > $O/${set}_N${N}_v${v}_r$r.log 2>&1 || echo "FAILED $set $N $v $r"
    done
  done
done
done
