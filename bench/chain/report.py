#!/usr/bin/env python3
"""docs/perf/chains.md (and chains.png) from `polysci bench chain --csv` files
and bench/chain/torch_eager.py's CSV: per block the medians over rounds of
oneDNN (layer by layer, post-ops; and with its fused 1x1 + depthwise
convolution), polysci without fusion, polysci's DP plan and PyTorch eager,
the ratios, and geomeans per set and batch size.

usage: report.py --chain A.csv [B.csv ...] [--torch T.csv ...] --out docs/perf/chains.md
                 [--png docs/perf/chains.png] [--header TEXT]
Only the standard library (the PNG needs gnuplot)."""
import argparse
import csv
import math
import os
import statistics
import subprocess
from collections import defaultdict, OrderedDict


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fmt(x, d=3):
    return "-" if x is None or not math.isfinite(x) else ("%.*f" % (d, x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chain", nargs="+", required=True)
    ap.add_argument("--torch", nargs="*", default=[])
    ap.add_argument("--out", required=True)
    ap.add_argument("--png")
    ap.add_argument("--header", default="")
    ap.add_argument("--fill", nargs="*", default=[],
                    help="files whose <!-- chains:summary begin/end --> block gets the summary table")
    ap.add_argument("--stamp", default="", help="the line above the filled summary (date, machine)")
    ap.add_argument("--peak", type=float, default=0.0,
                    help="the threads' f32 FMA peak in GFLOP/s: adds the ceiling column (best oneDNN time divided by "
                         "the time of the block's FLOPs at that peak: the ratio no implementation passes)")
    a = ap.parse_args()

    med = defaultdict(list)        # (set, N, block, impl) -> per-round medians
    info = OrderedDict()           # (set, N, block) -> gflop, groups
    for path in a.chain:
        for r in csv.DictReader(open(path)):
            key = (r["set"], int(r["N"]), r["block"])
            info.setdefault(key, {"gflop": float(r["gflop"]), "groups": None})
            if r["implementation"] == "polysci-dp":
                info[key]["groups"] = int(r["groups"])
            v = float(r["median_ms"])
            if math.isfinite(v):
                med[key + (r["implementation"],)].append(v)
            if r.get("note"):
                info[key]["note"] = r["note"]
    torch_ms, pst_ms = {}, {}
    for path in a.torch:
        for r in csv.DictReader(open(path)):
            key = (r["set"], int(r["N"]), r["block"])
            torch_ms[key] = float(r["torch_ms"])
            if r.get("polysci_torch_ms"):
                pst_ms[key] = float(r["polysci_torch_ms"])

    def m(key, impl):
        v = med.get(key + (impl,))
        return statistics.median(v) if v else float("nan")

    lines = [a.header.rstrip() + "\n"] if a.header else []
    summary = []
    plot_rows = []
    groups = OrderedDict()
    for key in info:
        groups.setdefault((key[0], key[1]), []).append(key)
    for (set_name, n), keys in groups.items():
        lines.append("### %s, N = %d\n" % (set_name, n))
        lines.append("| block | GFLOP | oneDNN ms | oneDNN 1x1+dw fused ms | polysci no fusion ms | polysci ms | groups | "
                     "polysci / best oneDNN | polysci / no fusion | PyTorch eager ms | polysci / PyTorch |" +
                     (" ceiling |" if a.peak > 0 else ""))
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if a.peak > 0 else ""))
        r_dnn, r_none, r_torch, r_ceil = [], [], [], []
        for key in keys:
            dp, none, dnn, dnnf = m(key, "polysci-dp"), m(key, "polysci-none"), m(key, "onednn"), m(key, "onednn-dwfused")
            best = min(x for x in (dnn, dnnf) if math.isfinite(x)) if math.isfinite(dnn) or math.isfinite(dnnf) else float("nan")
            t = torch_ms.get(key, float("nan"))
            rd, rn, rt = best / dp, none / dp, t / dp
            # the block's FLOPs at the FMA peak, in ms: no implementation is faster
            ceil = best / (info[key]["gflop"] / a.peak * 1e3) if a.peak > 0 else float("nan")
            r_dnn.append(rd), r_none.append(rn), r_torch.append(rt), r_ceil.append(ceil)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | **%s** | %s | %s | %s |" % (
                key[2], fmt(info[key]["gflop"]), fmt(dnn), info[key].get("note") or fmt(dnnf), fmt(none), fmt(dp),
                info[key]["groups"],
                fmt(rd, 2), fmt(rn, 2), fmt(t), fmt(rt, 2)) + (" %s |" % fmt(ceil, 2) if a.peak > 0 else ""))
            plot_rows.append((key[2], set_name, n, rd))
        g = (geomean(r_dnn), geomean(r_none), geomean(r_torch), geomean(r_ceil))
        lines.append("| **geomean** | | | | | | | **%s** | %s | | %s |" % (fmt(g[0]), fmt(g[1]), fmt(g[2])) +
                     (" %s |" % fmt(g[3]) if a.peak > 0 else "") + "\n")
        summary.append((set_name, n, len(keys)) + g)
    out = ["| set | N | blocks | polysci / best oneDNN | polysci / no fusion | polysci / PyTorch eager |" +
           (" ceiling: best oneDNN / FLOPs at peak |" if a.peak > 0 else ""),
           "|---|---:|---:|---:|---:|---:|" + ("---:|" if a.peak > 0 else "")]
    for s in summary:
        out.append("| %s | %d | %d | **%s** | %s | %s |" % (s[0], s[1], s[2], fmt(s[3]), fmt(s[4]), fmt(s[5])) +
                   (" %s |" % fmt(s[6]) if a.peak > 0 else ""))
    text = "\n".join(lines)
    marker = "<!-- summary -->"
    text = text.replace(marker, "\n".join(out)) if marker in text else "\n".join(out) + "\n\n" + text
    open(a.out, "w").write(text + "\n")
    link = "Details: [docs/perf/chains.md](docs/perf/chains.md)."
    for path in a.fill:
        doc = open(path).read()
        b, e = "<!-- chains:summary begin -->", "<!-- chains:summary end -->"
        if b not in doc or e not in doc:
            continue
        rel = os.path.relpath(os.path.abspath(a.out), os.path.dirname(os.path.abspath(path)))
        block = (a.stamp + "\n\n" if a.stamp else "") + "\n".join(out) + "\n\n" + link.replace(
            "docs/perf/chains.md", rel, 1).replace("(docs/perf/chains.md)", "(%s)" % rel)
        doc = doc[:doc.index(b) + len(b)] + "\n" + block + "\n" + doc[doc.index(e):]
        open(path, "w").write(doc)
    if a.png and plot_rows:
        dat = a.png + ".dat"
        with open(dat, "w") as fh:
            for i, (b, s, n, r) in enumerate(plot_rows):
                fh.write("%d %s/N%d %s %.4f\n" % (i, b, n, s, r if math.isfinite(r) else 0))
        gp = ("set terminal pngcairo size 1400,500 noenhanced; set output '%s'; set style fill solid 0.8; set boxwidth 0.8;"
              "set ylabel 'best oneDNN time / polysci time'; set xtics rotate by 90 right font ',8'; set bmargin 7; set grid ytics;"
              "set yrange [0:*]; set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2;"
              "plot '%s' using 1:4:xtic(2) with boxes notitle" % (a.png, dat))
        try:
            subprocess.run(["gnuplot", "-e", gp], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print("report.py: no PNG (%s)" % e)
        finally:
            os.remove(dat)


if __name__ == "__main__":
    main()
