#!/bin/bash
# Session 24: alternating processes of several polysci binaries (timing-only builds of the patches here).
# altbin.sh ROUNDS M N K BIN... : alternating processes of `run gemm --order ${ORDER:-row}`, median of per-process medians
R=$1; M=$2; N=$3; K=$4; shift 4; B=("$@")
for ((r=0;r<R;r++)); do
  for ((i=0;i<${#B[@]};i++)); do
    j=$(( (i + r) % ${#B[@]} ))
    t=$(${B[$j]} run gemm --order ${ORDER:-row} --M $M --N $N --K $K --reps 7 $EXTRA 2>&1 | awk '/^execute/{print $2}')
    echo "$j $t"
  done
done | sort -n | awk '{a[$1]=a[$1]" "$2} END{for(k in a) print k, a[k]}' | sort -n | while read j rest; do
  med=$(echo $rest | tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}')
  echo "$med  [${B[$j]}]  ($rest)"
done
