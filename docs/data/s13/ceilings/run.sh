#!/bin/bash
# Per losing layer: the layer (polysci's default plan vs oneDNN, one process) and its main kernel's
# ceiling in the layer's memory pattern (polysci-brgemm-ceiling), alternating, three times.
cd "$(dirname "${BASH_SOURCE[0]}")/../../../.."   # the repository root
OUT=docs/data/s13/ceilings
C="build/bench/polysci-brgemm-ceiling --threads 2 --min-ms 20 --trials 9"
declare -A SET=([resnet_04]=resnet50 [mobilenet_02]=mobilenet [fastrcnn_19]=fastrcnn [alexnet_02]=alexnet)
declare -A CACHED=(
 [resnet_04]="--m 64 --n 28 --k 64 --batch 4 --ldb 256 --b-offset 64 --beta 0 --c-chunks 112"
 [mobilenet_02]="--m 64 --n 28 --k 32 --batch 1 --ldb 32 --beta 0 --c-chunks 448"
 [fastrcnn_19]="--m 64 --n 19 --k 64 --batch 8 --ldb 1024 --b-offset 64 --beta 1 --c-chunks 8"
 [alexnet_02]="--m 64 --n 27 --k 64 --batch 25 --ldb 64 --b-offset 64 --beta 0 --c-chunks 27")
declare -A PATTERN=(
 [resnet_04]="--b-chunks 112"
 [mobilenet_02]="--b-chunks 448"
 [fastrcnn_19]="--a-chunks 8"
 [alexnet_02]="--a-chunks 3")
for i in 1 2 3; do
  for L in resnet_04 mobilenet_02 fastrcnn_19 alexnet_02; do
    build/tools/polysci bench conv --layers ${SET[$L]} --only $L --N 2 --threads 2 --vs onednn --reps 11 --plan-reps 1 --csv $OUT/${L}_$i.csv > $OUT/${L}_$i.log 2>&1
    a=$($C ${CACHED[$L]} | awk '{print $(NF-1)}'); b=$($C ${CACHED[$L]} ${PATTERN[$L]} | awk '{print $(NF-1)}')
    r=$(tail -1 $OUT/${L}_$i.csv | awk -F, '{print $7, $8, $6}')
    echo "$L round $i: polysci/oneDNN GFLOP/s, ratio: $r; kernel cached $a, in pattern $b" | tee -a $OUT/summary.txt
  done
done
