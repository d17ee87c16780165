#!/bin/bash
# usage: cand.sh DIR  (DIR has layers.txt cand.csv); 3 processes per N in {1,2}
D=$1; shift
for r in 1 2 3; do for n in 1 2; do
${POLYSCI:-build/tools/polysci} bench conv --layers $D/layers.txt --N $n --threads 2 --vs onednn --reps 30 --plan-reps 1 --candidates $D/cand.csv --dist $D/d${n}_${r}.csv --csv $D/r${n}_${r}.csv > $D/r${n}_${r}.log 2>&1
done; done
python3 docs/data/s28/compare.py $D
