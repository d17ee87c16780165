#!/usr/bin/env python3
"""Markdown tables from `polysci bench ... --csv` output (and --dist CSVs).

usage: csv_to_markdown.py bench.csv            per-layer table + geomeans
       csv_to_markdown.py --dist dist.csv      selection quality per layer
       csv_to_markdown.py --selection SUMMARY.csv DIST.csv...
                                               selection quality per layer set: default schedule, Eq. 1
                                               top-1/top-16, and the best any working-set-only ranker can do
Only the standard library: runs on any machine the benchmark ran on."""
import csv
import math
import sys
from collections import defaultdict


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def bench_table(path):
    rows = list(csv.DictReader(open(path)))
    cols = ["name", "polysci_ms", "polysci_gflops", "onednn_ms", "onednn_gflops", "ratio", "default_ms",
            "plan_ms", "plan_warm_ms"]
    have = [c for c in cols if any(r.get(c) for r in rows)]
    print("| " + " | ".join(have) + " |")
    print("|" + "---|" * len(have))
    for r in rows:
        print("| " + " | ".join(r.get(c, "") for c in have) + " |")
    print()
    if all(r.get("ratio") for r in rows):
        ratios = [float(r["ratio"]) for r in rows]
        print(f"geomean ratio onednn_ms/polysci_ms: **{geomean(ratios):.3f}** "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(rows)} layers)")
    if all(r.get("default_ms") for r in rows):
        print(f"geomean default_ms/polysci_ms: {geomean([float(r['default_ms']) / float(r['polysci_ms']) for r in rows]):.3f}")
    if all(r.get("onednn_ms") and r.get("default_ms") for r in rows):
        print(f"geomean onednn_ms/default_ms: {geomean([float(r['onednn_ms']) / float(r['default_ms']) for r in rows]):.3f}")
    if all(r.get("plan_ms") for r in rows):
        p = sorted(float(r["plan_ms"]) for r in rows)
        w = sorted(float(r["plan_warm_ms"]) for r in rows if r.get("plan_warm_ms"))
        print(f"plan creation: cold median {p[len(p) // 2]:.3f} ms (max {p[-1]:.3f}); "
              f"warm median {w[len(w) // 2] * 1e3:.1f} us" if w else "")


def spearman(a, b):
    n = len(a)
    if n < 3:
        return float("nan")
    ra = {i: k for k, i in enumerate(sorted(range(n), key=lambda i: a[i]))}
    rb = {i: k for k, i in enumerate(sorted(range(n), key=lambda i: b[i]))}
    return 1 - 6 * sum((ra[i] - rb[i]) ** 2 for i in range(n)) / (n * (n * n - 1))


def dist_table(path):
    by = defaultdict(list)
    for r in csv.DictReader(open(path)):
        by[r["name"]].append(r)
    print("| layer | variants | best GF/s | rank-1 GF/s | worst GF/s | best/rank-1 | best/top-4 | best/top-16 | Spearman(cost, time) |")
    print("|---|---|---|---|---|---|---|---|---|")
    eff = defaultdict(list)
    for name, rs in by.items():
        ms = [float(r["ms"]) for r in rs]
        rank = [int(r["rank_by_cost"]) for r in rs]
        gf = [float(r["gflops"]) for r in rs]
        best = min(ms)
        top = {k: min(m for m, rk in zip(ms, rank) if rk <= k) for k in (1, 4, 16)}
        for k in top:
            eff[k].append(best / top[k])
        r1 = gf[rank.index(1)]
        print(f"| {name} | {len(rs)} | {max(gf):.0f} | {r1:.0f} | {min(gf):.0f} | {best / top[1]:.2f} | "
              f"{best / top[4]:.2f} | {best / top[16]:.2f} | {spearman(rank, ms):+.2f} |")
    print()
    print(f"geomean pick efficiency (best/chosen): top-1 **{geomean(eff[1]):.3f}**, top-4 {geomean(eff[4]):.3f}, "
          f"top-16 {geomean(eff[16]):.3f}")


def selection_table(summary_path, dist_paths):
    """Per layer set (the dist file name's prefix): how close each way of
    choosing gets to the fastest variant. `ws-only bound`: the best group of
    variants with identical Alg. 2 working sets, taking its median member - no
    ranker that sees only working sets (Eq. 1, the DNN) can tell the members
    of a group apart."""
    default_ms = {r["name"]: float(r["default_ms"]) for r in csv.DictReader(open(summary_path)) if r.get("default_ms")}
    print("| layer set | layers | variants per layer | default schedule | Eq. 1 top-1 | Eq. 1 top-16 (timed) "
          "| ws-only bound | worst variant |")
    print("|---|---|---|---|---|---|---|---|")
    allv = defaultdict(list)
    for path in dist_paths:
        by = defaultdict(list)
        for r in csv.DictReader(open(path)):
            by[r["name"]].append(r)
        v = defaultdict(list)
        for name, rs in by.items():
            ms = [float(r["ms"]) for r in rs]
            rank = [int(r["rank_by_cost"]) for r in rs]
            best = min(ms)
            groups = defaultdict(list)
            for r, t in zip(rs, ms):
                groups[tuple(r[c] for c in ("ws_l1", "ws_l2", "ws_l3", "ws_mem"))].append(t)
            v["n"].append(len(rs))
            if name in default_ms:
                v["default"].append(best / default_ms[name])
            v["top1"].append(best / ms[rank.index(1)])
            v["top16"].append(best / min(t for t, k in zip(ms, rank) if k <= 16))
            v["bound"].append(max(best / sorted(g)[len(g) // 2] for g in groups.values()))
            v["worst"].append(best / max(ms))
        for k, x in v.items():
            allv[k] += x
        name = path.rsplit("/", 1)[-1].split("_")[0]
        print(f"| {name} | {len(by)} | {min(v['n'])}-{max(v['n'])} | {geomean(v['default']):.3f} | "
              f"{geomean(v['top1']):.3f} | {geomean(v['top16']):.3f} | {geomean(v['bound']):.3f} | "
              f"{geomean(v['worst']):.3f} |")
    print(f"| **all** | {len(allv['n'])} | {min(allv['n'])}-{max(allv['n'])} | **{geomean(allv['default']):.3f}** | "
          f"**{geomean(allv['top1']):.3f}** | {geomean(allv['top16']):.3f} | **{geomean(allv['bound']):.3f}** | "
          f"{geomean(allv['worst']):.3f} |")
    print()
    print("Entries: geomean over the set's layers of best_ms / ms of the choice (1 = the fastest variant).")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--selection":
        selection_table(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] == "--dist":
        dist_table(sys.argv[2])
    elif len(sys.argv) == 2:
        bench_table(sys.argv[1])
    else:
        sys.exit(__doc__)
