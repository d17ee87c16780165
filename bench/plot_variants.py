#!/usr/bin/env python3
"""Per-layer performance distribution of every variant (PolyScientist Figs. 8-26) as a PNG.

usage: plot_variants.py --dist DIST.csv [--summary BENCH.csv] [--picks PICKS.csv] --out OUT.png [--title T]

DIST.csv     `polysci bench ... --exhaustive --dist` rows (one per variant)
BENCH.csv    the same run's `--csv` (default schedule's time: a dashed line)
PICKS.csv    name,schedule of another ranker's choice per layer (e.g. the DNN
             tournament's, written by tools/dnn/train.py --picks)

One panel per layer: the variants' GFLOP/s sorted from fastest to slowest, the
cost model's first choice (rank_by_cost = 1) and the optional second ranker's
choice marked on the curve. Needs gnuplot (Debian gnuplot-nox).
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dist", required=True)
    ap.add_argument("--summary")
    ap.add_argument("--picks")
    ap.add_argument("--picks-label", default="DNN pick")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    layers = OrderedDict()
    for r in csv.DictReader(open(a.dist)):
        layers.setdefault(r["name"], []).append(r)
    if not layers:
        sys.exit("plot_variants: no rows in %s" % a.dist)
    default_gf = {}
    if a.summary:
        for r in csv.DictReader(open(a.summary)):
            if r.get("default_ms"):
                # GFLOP/s of the default schedule = flops / time; flops from any dist row of the layer.
                rows = layers.get(r["name"])
                if rows:
                    flops = float(rows[0]["gflops"]) * float(rows[0]["ms"]) * 1e6
                    default_gf[r["name"]] = flops / (float(r["default_ms"]) * 1e6)
    picks = {}
    if a.picks:
        for r in csv.DictReader(open(a.picks)):
            picks[r["name"]] = r["schedule"]

    tmp = tempfile.mkdtemp(prefix="ps_plot_")
    n = len(layers)
    cols = min(5, n)
    rows = math.ceil(n / cols)
    script = [
        "set terminal pngcairo size %d,%d font 'sans,9'" % (330 * cols, 240 * rows + 40),
        "set output '%s'" % a.out,
        "set multiplot layout %d,%d title '%s'" % (rows, cols, a.title.replace("'", "")),
        "set termoption noenhanced",
        "set key bottom left font 'sans,7' samplen 1",
        "set xtics font 'sans,7'",
        "set autoscale xfix",
        "set ylabel 'GFLOP/s'",
        "set xlabel 'variants, fastest first'",
        "set yrange [0:*]",
    ]
    for li, (name, rs) in enumerate(layers.items()):
        order = sorted(range(len(rs)), key=lambda i: -float(rs[i]["gflops"]))
        pos = {i: k for k, i in enumerate(order)}
        path = os.path.join(tmp, "%d.dat" % li)
        with open(path, "w") as f:
            for k, i in enumerate(order):
                f.write("%d %s\n" % (k + 1, rs[i]["gflops"]))
        cost_i = next(i for i, r in enumerate(rs) if r["rank_by_cost"] == "1")
        mk = os.path.join(tmp, "%d.cost" % li)
        with open(mk, "w") as f:
            f.write("%d %s\n" % (pos[cost_i] + 1, rs[cost_i]["gflops"]))
        plots = ["'%s' using 1:2 with lines lw 2 lc rgb '#777777' title '%d variants'" % (path, len(rs)),
                 "'%s' using 1:2 with points pt 7 ps 1.2 lc rgb '#d62728' title 'cost model'" % mk]
        if name in picks:
            pick_i = next((i for i, r in enumerate(rs) if r["schedule"] == picks[name]), None)
            if pick_i is not None:
                mp = os.path.join(tmp, "%d.pick" % li)
                with open(mp, "w") as f:
                    f.write("%d %s\n" % (pos[pick_i] + 1, rs[pick_i]["gflops"]))
                plots.append("'%s' using 1:2 with points pt 5 ps 1.0 lc rgb '#1f77b4' title '%s'" % (mp, a.picks_label))
        if name in default_gf:
            plots.append("%.3f with lines dt 2 lw 1.5 lc rgb '#2ca02c' title 'default schedule'" % default_gf[name])
        script.append("set title '%s'" % name)
        script.append("plot " + ", ".join(plots))
    script.append("unset multiplot")
    gp = os.path.join(tmp, "plot.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["gnuplot", gp], check=True)
    print(a.out)


if __name__ == "__main__":
    main()
