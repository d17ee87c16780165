#!/usr/bin/env bash
# One round of the parity study: the default plans vs oneDNN on every conv
# set of bench/layers at N=2 and N=1, then the GEMM shapes vs dnnl_sgemm;
# 2 threads; one process per set and batch size, one after the other. Writes SET_N2.csv, SET_N1.csv,
# gemm.csv and their logs into OUTDIR and prints each geomean.
#
# usage: bench/run_round.sh OUTDIR      (after scripts/build.sh; ~4.5 min on 2 cores)
# Environment overrides: POLYSCI (the CLI), LAYERS_DIR, THREADS.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: bench/run_round.sh OUTDIR}"
P="${POLYSCI:-$ROOT/build/tools/polysci}"
LAYERS_DIR="${LAYERS_DIR:-$ROOT/bench/layers}"
THREADS="${THREADS:-2}"
mkdir -p "$OUT"
[ -x "$P" ] || { echo "run_round.sh: $P not built (bash scripts/build.sh)" >&2; exit 1; }

status=0
run() { # name, then the bench arguments
  local name=$1; shift
  if "$P" bench "$@" --threads "$THREADS" --vs onednn --csv "$OUT/$name.csv" > "$OUT/$name.log" 2>&1; then
    printf '%-14s %s\n' "$name" "$(grep -h 'geomean ratio' "$OUT/$name.log" | grep -o '[0-9.]*$')"
  else
    printf '%-14s FAILED (see %s)\n' "$name" "$OUT/$name.log"; status=1
  fi
}
for set in resnet50 fastrcnn mobilenet alexnet overfeat vgga; do
  reps2=5; reps1=5
  [ "$set" = resnet50 ] && reps2=11 && reps1=7
  run "${set}_N2" conv --layers "$LAYERS_DIR/$set.txt" --N 2 --reps $reps2 --plan-reps 1
  run "${set}_N1" conv --layers "$LAYERS_DIR/$set.txt" --N 1 --reps $reps1 --plan-reps 1
done
run gemm gemm --layers "$LAYERS_DIR/gemm.txt" --reps 5
exit $status
