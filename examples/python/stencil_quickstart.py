#!/usr/bin/env python3
"""A 2-D heat equation stepped T times from Python: the stencil built tap by
tap, planned once with the cost model's time tiling, run in place on a numpy
grid, and checked bit for bit against the step-by-step plan and against a
float64 numpy evaluation.

    POLYSCI_LIBRARY=build/lib/libpolysci.so python3 examples/python/stencil_quickstart.py
    ... --size 2000 2000 --steps 64 --threads 2

Exits 1 if the result is off, 77 if the loaded library has no iterated stencils.
"""

import argparse
import os
import sys
import time

import numpy as np

try:
    import polysci as ps
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
    import polysci as ps


def reference(grid, steps):
    """float64: the five terms in the plan's order; the boundary rows and columns stay fixed."""
    u = grid.astype(np.float64)
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = (0.125 * u[:-2, 1:-1] + 0.125 * u[1:-1, :-2] + 0.5 * u[1:-1, 1:-1] +
                         0.125 * u[1:-1, 2:] + 0.125 * u[2:, 1:-1])
        u = v
    return u


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, nargs=2, default=(1000, 1200), metavar=("ROWS", "COLS"))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if not ps.has_iterated():
        print("the loaded libpolysci (%s) has no iterated stencils" % ps.library_path)
        return 77
    st = ps.IteratedStencil(tuple(args.size), steps=args.steps)         # fixed (Dirichlet) boundary
    u = st.add_array("u")
    st.set_update(u, [(u, (-1, 0), 0.125), (u, (0, -1), 0.125), (u, (0, 0), 0.5),
                      (u, (0, 1), 0.125), (u, (1, 0), 0.125)])            # (array, offsets, weight)
    plan = st.plan(threads=args.threads)                                   # the cost model's tiling
    step = st.plan(tiling="step", threads=args.threads)
    s = plan.stats
    print("heat2d %dx%d, T = %d: %s tiles, band %d, tile %s, redundant %.2f%%" % (
        args.size[0], args.size[1], args.steps, s.tiling, s.band, "x".join(map(str, s.tile)),
        100 * s.redundant_fraction))

    grid = np.random.default_rng(0).random(tuple(args.size), dtype=np.float32)
    plan(grid.copy())                                                      # warm-up: threads, first touch
    step(grid.copy())
    a, b = grid.copy(), grid.copy()
    t0 = time.perf_counter()
    plan(a)                                                                # in place: a holds step T
    t1 = time.perf_counter()
    step(b)
    t2 = time.perf_counter()
    err = float(np.max(np.abs(a - reference(grid, args.steps))))
    tol = 6 * 2.0 ** -24 * (args.steps + 1)
    same = np.array_equal(a, b)
    print("auto %.2f ms, step by step %.2f ms (one run each); bit for bit equal to step by step: %s; "
          "max |polysci - numpy| = %.2e (bound %.2e)" % (1e3 * (t1 - t0), 1e3 * (t2 - t1), "yes" if same else "NO",
                                                         err, tol))
    ok = same and err <= tol
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
