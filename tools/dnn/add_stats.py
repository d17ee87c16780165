#!/usr/bin/python3
"""Adds the shape-statistics columns (kernel_m, kernel_n, kernel_k,
kernel_batch, par_iters, par_eff, red_steps) to `polysci bench --dist` files
written before `polysci bench` had them, without timing anything again.

For every layer of a file it asks the library (`polysci rank ... --json`,
same layer shape, batch and threads as the timing run) for its variants and
joins them to the file's rows by schedule text. The statistics depend only on
the layer, the schedule and the thread count, not on the machine, so they
are what the timing run would have written. A schedule the library no longer
generates is an error (the file then needs a new timing run).

    tools/dnn/add_stats.py [--polysci build/tools/polysci] [--layers-dir bench/layers] FILE...

Files are rewritten in place; files that already have the columns are left
alone.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NEW = ("kernel_m", "kernel_n", "kernel_k", "kernel_batch", "par_iters", "par_eff", "red_steps")


def layer_dims(layers_dir, lset):
    """name -> list of ints from bench/layers/<set>.txt."""
    path = os.path.join(layers_dir, lset + ".txt")
    dims = {}
    with open(path) as f:
        for line in f:
            p = line.split("#", 1)[0].split()
            if p:
                dims[p[0]] = [int(x) for x in p[1:]]
    return dims


def query(polysci, lset, dims, n, threads):
    """schedule text -> the new columns' values, from `polysci rank --json`."""
    if lset == "gemm":
        m, nn, k = dims
        cmd = [polysci, "rank", "gemm", "--M", str(m), "--N", str(nn), "--K", str(k), "--order", "row"]
    else:
        h, w, c, k, r, s, stride, ph, pw = dims
        cmd = [polysci, "rank", "conv", "--N", str(n), "--H", str(h), "--W", str(w), "--C", str(c), "--K", str(k),
               "--R", str(r), "--S", str(s), "--stride", str(stride), "--pad-top", str(ph), "--pad-bottom", str(ph),
               "--pad-left", str(pw), "--pad-right", str(pw)]
    cmd += ["--threads", str(threads), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    stats = {}
    for v in json.loads(out)["variants"]:
        stats[v["schedule"]] = [str(x) for x in v["kernel"]] + [
            str(v["parallel_iterations"]), repr(float(v["parallel_efficiency"])), str(v["reduction_steps"])]
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--polysci", default=os.path.join(REPO, "build", "tools", "polysci"))
    ap.add_argument("--layers-dir", default=os.path.join(REPO, "bench", "layers"))
    args = ap.parse_args()
    for path in args.files:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        head = rows[0]
        if all(c in head for c in NEW):
            print("%s: has the columns already" % path)
            continue
        col = {c: i for i, c in enumerate(head)}
        lset = os.path.basename(path).split(".")[0].split("_")[0]
        dims = layer_dims(args.layers_dir, lset)
        cache = {}
        out = [head + list(NEW)]
        for row in rows[1:]:
            key = (row[col["name"]], int(row[col["N"]] or 0), int(row[col["threads"]]))
            if key not in cache:
                cache[key] = query(args.polysci, lset, dims[key[0]], key[1] or 1, key[2])
            got = cache[key].get(row[col["schedule"]])
            if got is None:
                sys.exit("%s: %s: schedule '%s' is not in the library's variant space" % (path, key[0], row[col["schedule"]]))
            out.append(row + got)
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(out)
        os.replace(tmp, path)
        print("%s: %d rows, %d layers" % (path, len(out) - 1, len(cache)))


if __name__ == "__main__":
    main()
