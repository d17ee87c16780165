#!/usr/bin/python3
"""Float64 numpy reference of the iterated-stencil benchmarks, and `verify`:
every Halide schedule of halide_stencils.py against it at small sizes.

Importable without Halide (numpy only):
    import stencil_reference as R
    u = R.run("heat2d", u0, T)     # u0: numpy grid (N,), (H, W) or (D, H, W)
Grids are C-ordered numpy arrays (the last axis is Halide's x).  Boundaries
are fixed: only points with every index in [1, n-2] are updated.

  /usr/bin/python3 stencil_reference.py verify [--bench heat2d,...] [--scheds ...]

Tolerance:  max |halide - ref| <= tol(T) * max |u0|, tol(T) = 4 k T u with
u = 2^-24 and k the stencil's flops per point.  Why: every update is a convex
combination of its taps (weights >= 0 summing to 1: heat1d 1/4 1/2 1/4,
heat2d 1/8 x4 and 1/2, heat3d 1/8 x6 and 1/4, jacobi2d 1/9 x9), so it does
not amplify the error carried in from the previous step (max-norm <= 1),
and one f32 evaluation adds at most k roundings, each of an intermediate
that enters the result with a size of at most 4 max|u| (the differences
u[x+1] - 2u + u[x-1] are <= 4 max|u|; jacobi2d's partial sums, <= 9 max|u|,
are scaled by 1/9).  A wrong coefficient,
tap, boundary or step count gives errors of 1e-3 or more of max|u0|
(inputs are uniform in [0.05, 1)); outputs are NaN-filled before the run.
"""
import argparse
import os
import sys

import numpy as np

FLOPS = {"heat1d": 5, "heat2d": 10, "heat3d": 15, "jacobi2d": 9}
DIMS = {"heat1d": 1, "heat2d": 2, "heat3d": 3, "jacobi2d": 2}
U32 = 2.0 ** -24


def tolerance(name, T):
    return 4 * FLOPS[name] * T * U32


def step(name, u):
    """One time step of stencil `name` on the float64 grid u (new array)."""
    if u.ndim != DIMS[name] or min(u.shape) < 3:
        raise ValueError("%s needs a %d-D grid with extents >= 3" % (name, DIMS[name]))
    inner = tuple(slice(1, -1) for _ in range(u.ndim))

    def at(*off):  # u shifted by off, given in numpy axis order (last = x), on the interior
        return u[tuple(slice(1 + o, n - 1 + o) for o, n in zip(off, u.shape))]
    c = u[inner]
    new = u.copy()
    if name == "heat1d":
        new[inner] = 0.25 * (at(1) - 2 * c + at(-1)) + c
    elif name == "heat2d":
        new[inner] = (0.125 * (at(0, 1) - 2 * c + at(0, -1)) +
                      0.125 * (at(1, 0) - 2 * c + at(-1, 0)) + c)
    elif name == "heat3d":
        new[inner] = (0.125 * (at(0, 0, 1) - 2 * c + at(0, 0, -1)) +
                      0.125 * (at(0, 1, 0) - 2 * c + at(0, -1, 0)) +
                      0.125 * (at(1, 0, 0) - 2 * c + at(-1, 0, 0)) + c)
    elif name == "jacobi2d":
        new[inner] = sum(at(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9
    else:
        raise ValueError("unknown stencil %r" % name)
    return new


def run(name, u0, T):
    """T steps of stencil `name` from u0, in float64."""
    u = np.array(u0, dtype=np.float64)
    for _ in range(T):
        u = step(name, u)
    return u


def compare(name, out, u0, T, ref=None):
    """(ok, message) for a Halide result against the reference."""
    ref = run(name, u0, T) if ref is None else ref
    out = np.asarray(out, dtype=np.float64)
    if out.shape != ref.shape:
        return False, "shape %s, reference %s" % (out.shape, ref.shape)
    nan = int(np.isnan(out).sum())
    err = float(np.nanmax(np.abs(out - ref))) / float(np.max(np.abs(u0)))
    tol = tolerance(name, T)
    return (nan == 0 and err <= tol), "max|d|/max|u0| = %.2e (tol %.1e)  nan %d" % (err, tol, nan)


# (shape in Halide order x, y[, z], T, manual group, manual tile): odd,
# non-square extents, T not a multiple of the group, tiles smaller than the
# grid so the overlapped tiles, their halos and the clamped edges are exercised
CASES = {
    "heat1d": [((257,), 23, 4, (64,)), ((1000,), 24, 8, (256,))],
    "heat2d": [((67, 45), 7, 3, (32, 16)), ((130, 97), 12, 5, (64, 32))],
    "heat3d": [((19, 23, 17), 5, 2, (0, 8, 8)), ((33, 20, 25), 6, 4, (16, 16, 8))],
    "jacobi2d": [((67, 45), 7, 3, (32, 16)), ((130, 97), 12, 5, (64, 32))],
}


def verify(benches, scheds, forms=("clamp", "group", "ghost"), machine=None, log=print):
    """Every schedule x form x case of every stencil against the reference;
    returns the number of failures.  Needs python3-halide."""
    import halide_common as C
    import halide_stencils as HS
    C.warn_quiet()
    fails = 0
    for name in benches:
        for shape, T, group, tile in CASES[name]:
            u0 = C.make_input_array(list(reversed(shape)))
            ref = run(name, u0, T)
            for form in forms:
                for s in scheds:
                    ok, msg = C.checked_run(
                        lambda: HS.build(name, shape, T, form, group, [t or None for t in tile]),
                        s, u0, machine, lambda out: compare(name, out, u0, T, ref))
                    fails += not ok
                    log("%-8s %-12s T=%-3d %-5s %-14s %s  %s" % (
                        name, "x".join(map(str, shape)), T, form, s, "ok  " if ok else "FAIL", msg))
    return fails


def main(argv=None):
    ap = argparse.ArgumentParser(description="float64 reference of the stencils; verify Halide")
    ap.add_argument("mode", choices=["verify"])
    ap.add_argument("--bench", default=",".join(CASES))
    ap.add_argument("--scheds", default="naive,manual,mullapudi2016,adams2019,li2018")
    ap.add_argument("--forms", default="clamp,group,ghost")
    ap.add_argument("--machine", default=None, help="autoscheduler machine params P,LLC,BALANCE")
    a = ap.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.join(here, "..", "pipeline"))
    fails = verify(a.bench.split(","), a.scheds.split(","), a.forms.split(","), a.machine)
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
