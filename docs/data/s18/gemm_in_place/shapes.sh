#!/bin/sh
# Old (27389d2) and new binary, alternating processes, plan's default schedule:
# GEMMs whose A is read in place (session 18). OLD/NEW: the two polysci binaries.
for round in 1 2 3; do
for s in "256 256 2048 row 2" "256 256 2048 row 1" "128 768 4096 row 2" "256 192 4096 row 2" \
         "1024 192 2048 col 2" "128 288 4096 row 2" "256 1024 1024 row 2" "256 512 2048 row 1"; do
  set -- $s
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    printf '%s %s %s: ' "$round" "$s" "$b"
    "$bin" run gemm --M $1 --N $2 --K $3 --order $4 --threads $5 --reps 21 | grep -E "^schedule|execute" | tr -s ' ' | tr '\n' ' '
    echo
  done
done
done
