#!/bin/sh
# ctest cli_bench_conv_random: `polysci bench conv --random COUNT --seed S [--family few-channel]`.
# The same seed draws the same layers, another seed others; every layer lies in the
# family (channels 3-2048, images 7-300 before padding, the six filter shapes, strides
# 1-2, same or valid padding, N 1-4, at most 4 GFLOP); --list's output reads back as a
# layers file; a small drawn set checks against the reference; misuse is refused.
set -eu
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" bench conv --random 300 --seed 11 --list > "$tmp/a.txt"
"$cli" bench conv --random 300 --seed 11 --list > "$tmp/b.txt"
"$cli" bench conv --random 300 --seed 12 --list > "$tmp/c.txt"
cmp "$tmp/a.txt" "$tmp/b.txt" || { echo "the same seed drew different layers"; exit 1; }
if cmp -s "$tmp/a.txt" "$tmp/c.txt"; then echo "seeds 11 and 12 drew the same layers"; exit 1; fi
awk '
  /^#/ { next }
  {
    n++; H = $2; W = $3; C = $4; K = $5; R = $6; S = $7; st = $8; ph = $9; pw = $10; N = $13
    f = R "x" S
    if (f != "1x1" && f != "3x3" && f != "5x5" && f != "7x7" && f != "1x7" && f != "7x1") bad = bad " filter " f
    if (C < 3 || C > 2048 || K < 3 || K > 2048) bad = bad " channels " C "," K
    if (H < R || H > 300 || W < S || W > 300) bad = bad " image " H "x" W
    if (st != 1 && st != 2) bad = bad " stride " st
    if (!((ph == 0 && pw == 0) || (ph == int((R - 1) / 2) && pw == int((S - 1) / 2)))) bad = bad " padding " ph "," pw
    if (N < 1 || N > 4) bad = bad " N " N
    oh = int((H + 2 * ph - R) / st) + 1; ow = int((W + 2 * pw - S) / st) + 1
    if (2 * N * K * C * oh * ow * R * S > 4e9) bad = bad " flops"
    if (C % 16) odd++
    if (bad != "") { print "out of the family: " $0 ":" bad; exit 1 }
  }
  END { if (n != 300) { print "expected 300 layers, got " n; exit 1 }
        if (odd < 30) { print "only " odd " of 300 layers have channels that are not multiples of 16"; exit 1 } }
' "$tmp/a.txt"
# the listed file reads back: its smallest layer with a three-digit index (a unique --only) runs and checks
small=$(awk '!/^#/ && $1 ~ /^r11_[0-9][0-9][0-9]$/ { f = $2 * $3 * $4 * $5 * $6 * $7 / ($8 * $8);
             if (min == "" || f < min) { min = f; name = $1 } } END { print name }' "$tmp/a.txt")
"$cli" bench conv --layers "$tmp/a.txt" --only "$small" --check-only --threads 1 --plan-reps 1 --N 1 |
  grep -q "1 of 1 layers checked OK" || { echo "$small from the listed file did not check OK"; exit 1; }
# seed 20's two layers are small: planned, run and checked against the reference
"$cli" bench conv --random 2 --seed 20 --check-only --threads 1 --plan-reps 1 | grep -q "2 of 2 layers checked OK"
# the few-channel family: 1-16 input channels, 16-96 outputs, filters up to 7 x 7, names f<seed>_<i>
"$cli" bench conv --random 200 --seed 5 --family few-channel --list > "$tmp/f.txt"
awk '
  /^#/ { next }
  {
    n++; C = $4; K = $5; R = $6; S = $7; st = $8
    if ($1 !~ /^f5_[0-9]+$/) bad = bad " name " $1
    if (C < 1 || C > 16 || K < 16 || K > 96) bad = bad " channels " C "," K
    if (R < 1 || R > 7 || S < 1 || S > 7) bad = bad " filter " R "x" S
    if (st != 1 && st != 2) bad = bad " stride " st
    if (R != S) rect++
    if (bad != "") { print "out of the few-channel family: " $0 ":" bad; exit 1 }
  }
  END { if (n != 200) { print "expected 200 layers, got " n; exit 1 }
        if (rect < 10) { print "only " rect " of 200 few-channel layers have a rectangular filter"; exit 1 } }
' "$tmp/f.txt"
for bad in "--random 0" "--random 2 --layers resnet50" "--random x" "--random 2 --family many"; do
  # shellcheck disable=SC2086
  if "$cli" bench conv $bad --list > /dev/null 2>&1; then echo "accepted: bench conv $bad"; exit 1; fi
done
if "$cli" bench gemm --random 2 --list > /dev/null 2>&1; then echo "bench gemm accepted --random"; exit 1; fi
echo "cli_bench_conv_random: ok"
