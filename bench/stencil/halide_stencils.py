#!/usr/bin/python3
"""Halide 14 definitions and schedules of the iterated-stencil benchmarks:
T time steps written as a chain of T Funcs (u1 .. uT, the output is uT).

  heat1d    u' = 0.25 (u[x+1] - 2u + u[x-1]) + u                      5 flops
  heat2d    u' = 0.125 (u[x+1] - 2u + u[x-1])
               + 0.125 (u[y+1] - 2u + u[y-1]) + u                     10 flops
  heat3d    u' = 0.125 (x term) + 0.125 (y term) + 0.125 (z term) + u  15 flops
  jacobi2d  u' = f32(1/9) * (sum of the 3x3 neighbourhood, row by row) 9 flops
(f32 constants; heat2d is the reference Halide heat2d, which is Pluto's and
PolyBench's heat-2d; heat3d is PolyBench's heat-3d; every update is a convex
combination of its taps.)  Boundaries are fixed (Dirichlet): only interior
points (every coordinate in [1, n-2]) are updated, the boundary cells keep
their input values for all T steps.

Forms (how the Funcs see the previous step; the same values on the grid,
since an interior point never reads outside it):
  clamp  every read of u(t-1) goes through repeat_edge over the grid, so every
         step is computed over the grid exactly (shared heat2d).  Default
         for every schedule but manual.
  group  only the reads of the input and of every group-th step (the ones
         the manual schedule computes whole) are clamped; the steps inside a
         group read their producer directly and are computed over the tile
         plus its halo.  Default for manual: with a clamp per step, Halide 14's
         bounds expressions for a tile's intermediates nest one clamp per step
         and its compile time explodes with the group (heat1d, 4 groups of 8
         steps: 20 s; 2 groups of 16: over 150 s, not finished), while this
         form compiles in about a second.
  ghost  no clamps; the input buffer carries T ghost cells on every side
         (filled with 0.5) and each step is computed over the region its
         consumers need, i.e. the grid grown by the steps still to come
         (shared heat2d_ghost).  Extra work: ~3% for heat2d T = 64, ~27% for
         T = 500, several times the grid for heat3d T = 100.

Schedules: naive (every step compute_root, rows in parallel -- z planes for
3-D, chunks of 64 vectors for 1-D -- x vectorized), manual (overlapped tiles,
the shared manual_heat "tiles" mode: every `group`-th step is compute_root,
tiled, tiles in parallel, x vectorized; the steps in between computed per
tile with the halo they need), mullapudi2016 / adams2019 / li2018.

  HL_NUM_THREADS=2 /usr/bin/python3 halide_stencils.py time --bench heat2d --T 64 --sched manual
  /usr/bin/python3 halide_stencils.py dump --bench heat3d --shape 19,23,17 --T 5 --prefix /tmp/h3
"""
import os
import sys

import halide as hl

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
import halide_common as C  # noqa: E402

f32 = C.f32

# name: (dims, default n per dim, default T, flops per point, manual group, manual tile (x, y, z))
# Manual tiles: heat1d 4096 points (16 KiB per step buffer, 19 of them per
# tile in L2); 2-D 512 x 32 (shared manual_heat); heat3d whole x rows (150)
# by 16 x 16, group 4 (three 150 x 22 x 22 intermediates, 870 KiB, per tile).
STENCILS = {
    "heat1d": (1, 160000, 1000, 5, 20, (4096,)),
    "heat2d": (2, 4000, 64, 10, 8, (512, 32)),
    "heat3d": (3, 150, 100, 15, 4, (None, 16, 16)),
    "jacobi2d": (2, 4000, 64, 9, 8, (512, 32)),
}


def update(name, g, c0):
    """The new value at the current point; g(dx[, dy[, dz]]) reads the previous
    step at an offset, c0 = g(0, ...).  Works on Halide Exprs."""
    two = f32(2.0)
    if name == "heat1d":
        return f32(0.25) * (g(1) - two * c0 + g(-1)) + c0
    if name == "heat2d":
        return (f32(0.125) * (g(1, 0) - two * c0 + g(-1, 0)) +
                f32(0.125) * (g(0, 1) - two * c0 + g(0, -1)) + c0)
    if name == "heat3d":
        return (f32(0.125) * (g(1, 0, 0) - two * c0 + g(-1, 0, 0)) +
                f32(0.125) * (g(0, 1, 0) - two * c0 + g(0, -1, 0)) +
                f32(0.125) * (g(0, 0, 1) - two * c0 + g(0, 0, -1)) + c0)
    if name == "jacobi2d":
        s = None
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                s = g(dx, dy) if s is None else s + g(dx, dy)
        return f32(1.0 / 9) * s
    raise ValueError(name)


FORMS = ("clamp", "group", "ghost")


def default_form(sched):
    return "group" if sched == "manual" else "clamp"


MAX_CHUNK = 100


def default_chunk(T):
    """Steps per compiled pipeline: T up to MAX_CHUNK, else the largest divisor
    of T not above it.  Halide 14's compile time grows much faster than the
    number of Funcs (naive heat1d: 16 s for 50 steps, 39 s for 100, 230 s
    for 200; T = 1000 did not get through compile and run in 15 minutes),
    so T = 500 and T = 1000 run as 5 and 10 applications of a 100-step
    pipeline."""
    if T <= MAX_CHUNK:
        return T
    return max(k for k in range(1, MAX_CHUNK + 1) if T % k == 0)


def build(name, shape=None, T=None, form="clamp", group=None, tile=None, chunk=None):
    """shape: grid extents in Halide order (x first); defaults from STENCILS;
    form: one of FORMS; group, tile: the manual schedule's steps per
    overlapped tile and tile extents (None = whole extent); chunk: steps per
    compiled pipeline (a divisor of T, default default_chunk(T)); the Bench
    applies it T / chunk times per run."""
    if name not in STENCILS:
        raise ValueError("unknown stencil %r (one of %s)" % (name, ", ".join(STENCILS)))
    dims, n_def, T_def, flops, group_def, tile_def = STENCILS[name]
    shape = list(shape or [n_def] * dims)
    T = T_def if T is None else T
    if len(shape) != dims or min(shape) < 3 or T < 1:
        raise ValueError("%s needs %d extents >= 3 and T >= 1" % (name, dims))
    if form not in FORMS:
        raise ValueError("form must be one of %s" % ", ".join(FORMS))
    chunk = chunk or default_chunk(T)
    if T % chunk:
        raise ValueError("chunk %d does not divide T = %d" % (chunk, T))
    if form == "ghost" and chunk != T:
        raise ValueError("the ghost form needs chunk = T (its input carries T ghost cells)")
    T_total, T = T, chunk
    group = group or group_def
    tile = list(tile or tile_def)
    xs = [hl.Var(v) for v in "xyz"[:dims]]
    inp = hl.ImageParam(hl.Float(32), dims, "input")
    interior = None
    for v, n in zip(xs, shape):
        cond = (v >= 1) & (v <= n - 2)
        interior = cond if interior is None else interior & cond
    grid = [hl.Range(0, n) for n in shape]
    chain = []
    prev = inp
    for t in range(1, T + 1):
        if form == "clamp" or (form == "group" and (t - 1) % group == 0):
            src = (hl.BoundaryConditions.repeat_edge(inp) if t == 1
                   else hl.BoundaryConditions.repeat_edge(prev, grid))
        else:
            src = prev

        def g(*off, src=src):
            return src[[v + o for v, o in zip(xs, off)]]
        f = hl.Func("u%d" % t)
        c0 = g(*([0] * dims))
        f[xs] = hl.select(interior, update(name, g, c0), c0)
        chain.append(f)
        prev = f
    pad = T if form == "ghost" else 0
    for d, n in enumerate(shape):
        inp.dim(d).set_estimate(-pad, n + 2 * pad)
    out = chain[-1]
    for v, n in zip(xs, shape):
        out.set_estimate(v, 0, n)

    def manual(vec):
        roots = sorted(set(range(group, T, group)) | {T})
        done = 0
        for r in roots:
            root = chain[r - 1]
            if r != T:
                root.compute_root()
            inner, outer = [], []
            for d, (v, n) in enumerate(zip(xs, shape)):
                ts = C.fit(tile[d] or n, n)
                if ts < n:
                    vo, vi = hl.Var("%so%d" % (v.name(), r)), hl.Var("%si%d" % (v.name(), r))
                    root.split(v, vo, vi, ts)
                    inner.append(vi)
                    outer.append(vo)
                else:
                    inner.append(v)
            if len(inner + outer) > 1:
                root.reorder(*(inner + outer))
            task = None
            if outer:
                task = outer[0]
                for k, vo in enumerate(outer[1:]):
                    fused = hl.Var("t%d_%d" % (r, k))
                    root.fuse(task, vo, fused)
                    task = fused
                root.parallel(task)
            root.vectorize(inner[0], vec)
            for k in range(done + 1, r):
                step = chain[k - 1]
                if task is not None:
                    step.compute_at(root, task)
                else:
                    step.compute_at(root, hl.Var.outermost())
                step.vectorize(xs[0], vec)
            done = r

    b = C.Bench(name, inp, out, {f.name(): f for f in chain[:-1]}, shape, shape, manual,
                par_dim=None if dims == 1 else dims - 1, repeat=T_total // chunk,
                info=dict(T=T_total, chunk=chunk, form=form, flops_per_point=flops, group=group,
                          tile=[C.fit(ts or n, n) for ts, n in zip(tile, shape)]))
    b.pad = pad
    return b


def _ints(s):
    return [int(v) for v in s.split(",")]


def main(argv=None):
    C.warn_quiet()
    ap = C.make_parser(__doc__, STENCILS)
    ap.add_argument("--n", type=int, default=None, help="grid extent in every dimension")
    ap.add_argument("--shape", default=None, help="grid extents x,y[,z] (overrides --n)")
    ap.add_argument("--T", type=int, default=None, help="time steps (default per stencil)")
    ap.add_argument("--form", choices=FORMS, default=None,
                    help="boundary form (default: group for manual, clamp otherwise)")
    ap.add_argument("--chunk", type=int, default=None,
                    help="steps per compiled pipeline, a divisor of T (default: T up to %d)" % MAX_CHUNK)
    ap.add_argument("--group", type=int, default=None, help="manual: steps per overlapped tile")
    ap.add_argument("--tile", default=None, help="manual: tile extents x,y[,z] (0 = whole extent)")
    a = ap.parse_args(argv)
    if a.mode == "list":
        print(" ".join(STENCILS))
        return 0
    if not a.bench:
        ap.error("--bench is required")
    dims = STENCILS[a.bench][0]
    shape = _ints(a.shape) if a.shape else ([a.n] * dims if a.n else None)
    tile = [v or None for v in _ints(a.tile)] if a.tile else None
    form = a.form or default_form(a.sched)
    b = build(a.bench, shape, a.T, form, a.group, tile, a.chunk)
    rec = dict(bench=a.bench, shape=b.in_shape, T=b.info["T"], chunk=b.info["chunk"], form=form,
               flops_per_point=b.info["flops_per_point"],
               interior_points=_prod(n - 2 for n in b.in_shape))
    if a.sched == "manual":
        rec.update(group=b.info["group"], tile=b.info["tile"])
    T = b.info["T"]

    def check(u0, out):
        import stencil_reference
        return stencil_reference.compare(a.bench, out, u0, T)
    return C.run_command(ap, a, b, rec, check)


def _prod(it):
    p = 1
    for v in it:
        p *= v
    return p


if __name__ == "__main__":
    sys.exit(main())
