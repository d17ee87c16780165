#!/usr/bin/env bash
# Two builds of polysci, A (old) and B (new), against oneDNN, in alternating
# processes: how engine changes are accepted or rejected. Timings of schedules
# inside one process (--candidates) can differ from the plans' own processes
# (where each plan's buffers land, which pages and cache sets they share, is a
# property of the process: a blocking that wins 15% as a candidate can win
# nothing as a binary), so a change is judged binary against binary.
#
# usage: bench/ab.sh OLD_POLYSCI NEW_POLYSCI ROUNDS OUTDIR -- BENCH_ARGS...
#   e.g. git worktree add /tmp/old HEAD~1 && (cd /tmp/old && bash scripts/build.sh)
#        bench/ab.sh /tmp/old/build/tools/polysci build/tools/polysci 3 /tmp/ab -- \
#            conv --layers resnet50 --only resnet_1 --N 2 --reps 11
# ROUNDS rounds of (old, new), each one `polysci bench ARGS --threads T --vs
# onednn --csv OUTDIR/{old,new}_I.csv`; prints each process's geomean ratio and,
# per layer, the ratios of every round side by side. THREADS (default 2).
set -uo pipefail

[ $# -ge 5 ] && [ "$5" = "--" ] || { sed -n '2,15p' "$0" >&2; exit 2; }
OLD=$1 NEW=$2 ROUNDS=$3 OUT=$4
shift 5
THREADS="${THREADS:-2}"
for p in "$OLD" "$NEW"; do [ -x "$p" ] || { echo "ab.sh: $p is not an executable" >&2; exit 2; }; done
case "$ROUNDS" in '' | *[!0-9]* | 0) echo "ab.sh: ROUNDS must be a positive integer" >&2; exit 2 ;; esac
mkdir -p "$OUT" || exit 1

status=0
for ((i = 1; i <= ROUNDS; i++)); do
  for side in old new; do
    bin=$OLD; [ $side = new ] && bin=$NEW
    if "$bin" bench "$@" --threads "$THREADS" --vs onednn --csv "$OUT/${side}_$i.csv" > "$OUT/${side}_$i.log" 2>&1; then
      printf '%s %d: %s\n' "$side" "$i" "$(grep -h 'geomean ratio' "$OUT/${side}_$i.log" | grep -o '[0-9.]*$')"
    else
      printf '%s %d: FAILED (see %s)\n' "$side" "$i" "$OUT/${side}_$i.log"; status=1
    fi
  done
done
[ $status = 0 ] || exit $status
/usr/bin/env python3 - "$OUT" "$ROUNDS" <<'EOF'
import csv, sys
out, rounds = sys.argv[1], int(sys.argv[2])
ratio = {}
names = []
for side in ("old", "new"):
    for i in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{out}/{side}_{i}.csv")):
            if row["name"] not in names:
                names.append(row["name"])
            ratio.setdefault((row["name"], side), []).append(row["ratio"])
print("ratio onednn_ms / polysci_ms per layer, rounds in order:")
for n in names:
    old = " ".join(ratio.get((n, "old"), []))
    new = " ".join(ratio.get((n, "new"), []))
    print(f"  {n:18s} old {old:40s} new {new}")
EOF
