#!/bin/bash
# alt.sh ROUNDS M N K -- config lines from stdin: "ENV|SCHEDULE" ; prints per-config median of per-round medians
R=$1; M=$2; N=$3; K=$4; mapfile -t CFG
for ((r=0;r<R;r++)); do
  for ((i=0;i<${#CFG[@]};i++)); do
    j=$(( (i + r) % ${#CFG[@]} )); c=${CFG[$j]}; envs=${c%%|*}; sch=${c#*|}
    args=(); [ -n "$sch" ] && args=(--schedule "$sch")
    t=$(env $envs /work/main/build/tools/polysci run gemm --order row --M $M --N $N --K $K --reps 7 "${args[@]}" 2>&1 | awk '/^execute/{print $2}')
    echo "$j $t"
  done
done | sort -n | awk '{a[$1]=a[$1]" "$2} END{for(k in a) print k, a[k]}' | sort -n | while read j rest; do
  med=$(echo $rest | tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}')
  echo "$med  [${CFG[$j]}]  ($rest)"
done
