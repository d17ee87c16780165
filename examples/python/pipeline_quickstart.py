#!/usr/bin/env python3
"""A fused pipeline from Python: grayscale, a separable 3 x 3 box blur
(clamp-to-edge) and an unsharp mask, planned once and run on a numpy image,
checked against numpy.

    POLYSCI_LIBRARY=build/lib/libpolysci.so python3 examples/python/pipeline_quickstart.py
    ... --size 480 640 --fusion greedy --threads 2

Exits 1 if the result is off, 77 if the loaded library has no graph engine.
"""

import argparse
import os
import sys

import numpy as np

try:
    import polysci as ps
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
    import polysci as ps


def build(h, w):
    g = ps.Graph()
    img = g.input("img", shape=(1, h, w, 3), layout="nchw")          # (N, H, W, C); the array is (N, C, H, W)
    gray = g.channel_mix(img, [[0.299, 0.587, 0.114]], name="gray")
    bx = g.stencil(gray, taps=[(0, -1, 1 / 3), (0, 0, 1 / 3), (0, 1, 1 / 3)], boundary="clamp", name="bx")
    by = g.stencil(bx, taps=[(-1, 0, 1 / 3), (0, 0, 1 / 3), (1, 0, 1 / 3)], boundary="clamp", name="by")
    sharp = g.pointwise(lambda a, b: 2 * a - b, gray, by, name="sharp")   # traced from the operators
    g.output(sharp, layout="nchw")
    return g


def reference(img):
    """The same pipeline in float64 numpy (with the f32-rounded weights the plan uses)."""
    f32 = lambda v: float(np.float32(v))
    x = img[0].astype(np.float64)                                    # (C, H, W)
    gray = f32(0.299) * x[0] + f32(0.587) * x[1] + f32(0.114) * x[2]
    third = f32(1 / 3)
    p = np.pad(gray, ((0, 0), (1, 1)), mode="edge")
    bx = third * (p[:, :-2] + p[:, 1:-1] + p[:, 2:])
    p = np.pad(bx, ((1, 1), (0, 0)), mode="edge")
    by = third * (p[:-2] + p[1:-1] + p[2:])
    return (2 * gray - by)[None, None]                               # (N, C=1, H, W)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", nargs=2, type=int, default=(2832, 4256), metavar=("H", "W"))
    ap.add_argument("--fusion", default="dp", choices=("dp", "greedy", "none"))
    ap.add_argument("--threads", type=int, default=0, help="0: the context's")
    args = ap.parse_args()
    h, w = args.size

    g = build(h, w)
    print(g, "->", g.outputs[0])
    if not ps.has_engine():
        print("the loaded libpolysci (%s) has no graph engine (ps_graph_execute)" % ps.library_path)
        return 77
    plan = g.plan(fusion=args.fusion, threads=args.threads)
    print(plan.describe())
    print(plan.stats)

    img = np.random.default_rng(0).random((1, 3, h, w), dtype=np.float32)   # NCHW
    out = plan(img)                                                  # allocated, (1, 1, H, W)
    plan(img, out=out)                                               # or into a given array
    err = float(np.abs(out - reference(img)).max())
    print("unsharp %dx%d: max |polysci - numpy| = %.3g" % (h, w, err))
    ok = err < 1e-5  # values in [0, 2]; f32 rounding of ~10 operations is ~1e-6
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
