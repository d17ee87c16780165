#!/usr/bin/env bash
# The variant space's bound against oneDNN: could any schedule polysci
# generates for a layer set meet the parity goal on this machine?
# Phase 1 times every variant of every layer (--exhaustive); phase 2 re-times
# each layer's TOPK fastest beside the chosen plan and oneDNN in alternating
# trials, ROUNDS processes (the exhaustive minimum alone is biased low).
# Writes into OUTDIR: exh.csv/exh_dist.csv/exh.log (phase 1), top.csv (the
# candidates), p2_I.csv/p2_I.log (phase 2), table.md (bench/space_bound.py).
#
# usage: bench/space_bound.sh conv|gemm LAYERS OUTDIR [N [ROUNDS [TOPK]]]
#        (N: conv batch size, default 2; ROUNDS default 3; TOPK default 3)
# Environment overrides: POLYSCI (the CLI), THREADS (default 2), REPS
# (phase-2 alternating trials, default 11).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIND=${1:?usage: bench/space_bound.sh conv|gemm LAYERS OUTDIR [N [ROUNDS [TOPK]]]}
LAYERS=${2:?layers file or name}
OUT=${3:?output folder}
N=${4:-2}
ROUNDS=${5:-3}
TOPK=${6:-3}
P="${POLYSCI:-$ROOT/build/tools/polysci}"
THREADS="${THREADS:-2}"
REPS="${REPS:-11}"
case "$KIND" in
  conv) batch=(--N "$N") ;;
  gemm) batch=() ;;
  *) echo "space_bound.sh: kind must be conv or gemm, not '$KIND'" >&2; exit 2 ;;
esac
[ -x "$P" ] || { echo "space_bound.sh: $P not built (bash scripts/build.sh)" >&2; exit 1; }
mkdir -p "$OUT"

"$P" bench "$KIND" --layers "$LAYERS" "${batch[@]}" --threads "$THREADS" --exhaustive \
    --variant-reps 3 --min-trial-ms 5 --reps 3 --plan-reps 1 \
    --dist "$OUT/exh_dist.csv" --csv "$OUT/exh.csv" > "$OUT/exh.log" 2>&1
python3 "$ROOT/bench/space_bound.py" top "$OUT/exh_dist.csv" "$TOPK" "$OUT/top.csv"
rounds=()
for i in $(seq 1 "$ROUNDS"); do
  "$P" bench "$KIND" --layers "$LAYERS" "${batch[@]}" --threads "$THREADS" --vs onednn --reps "$REPS" \
      --plan-reps 1 --candidates "$OUT/top.csv" --csv "$OUT/p2_$i.csv" > "$OUT/p2_$i.log" 2>&1
  rounds+=("$OUT/p2_$i.csv")
done
python3 "$ROOT/bench/space_bound.py" table "${rounds[@]}" | tee "$OUT/table.md"
