#!/usr/bin/python3
"""Halide 14 definitions and schedules of the image-pipeline benchmarks.

  harris      Halide apps/harris: gray, Sobel /12, products, 3x3 box sums,
              det - 0.04 trace^2; no boundary condition, output = the valid
              region [3, W-3) x [3, H-3), one channel
  unsharp     Halide apps/unsharp: gray, 7-tap Gaussian (sigma 1.5) blur y then
              x, sharpen = 2 gray - blur, output = sharpen / gray * input
  unsharp_pm  PolyMage unsharp mask: per channel [1 4 6 4 1]/16 blur y then x,
              sharpen = 4 img - 3 blur, |img - blur| < 0.001 ? img : sharpen
  blur3x3     Halide's classic two-pass 3x3 box blur, applied to each of the
              three channels of the shared input
  laplacian   detail-enhancing Laplacian pyramid, 4 levels, per channel,
              gains (1.8, 1.4, 1.2)
Every pipeline but harris reads its input through repeat_edge (clamp to
edge) and writes an output of the input's size, 3 channels.  Images are
planar f32 (x, y, c), x fastest.  The float64 numpy definitions are in
reference.py; README.md gives the formulas.

Schedules (halide_common.SCHEDULES): naive (every stage compute_root, rows
parallel, x vectorized), manual (Halide's hand-written app schedule, or one
in the apps' style), mullapudi2016 / adams2019 / li2018 (autoscheduler
plugins).

CLI (Debian's interpreter; HL_NUM_THREADS sets the threads):
  HL_NUM_THREADS=2 /usr/bin/python3 halide_pipelines.py time --bench harris --sched manual
  /usr/bin/python3 halide_pipelines.py dump --bench laplacian --size 130x97 --prefix /tmp/lap
"""
import math
import os
import sys

import halide as hl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import halide_common as C  # noqa: E402

f32 = C.f32
DEFAULT_SIZE = (4256, 2832)
LAPLACIAN_GAINS = (1.8, 1.4, 1.2)
LAPLACIAN_LEVELS = 4


def _vars(*names):
    return tuple(hl.Var(n) for n in names)


def _estimates(inp, out, out_vars, W, H, channels_out, out_min=(0, 0)):
    inp.dim(0).set_estimate(0, W).dim(1).set_estimate(0, H).dim(2).set_estimate(0, 3)
    x, y = out_vars[0], out_vars[1]
    out.set_estimate(x, out_min[0], W - 2 * out_min[0]).set_estimate(y, out_min[1], H - 2 * out_min[1])
    if channels_out:
        out.set_estimate(out_vars[2], 0, channels_out)


# --------------------------------------------------------------------------
# harris (Halide apps/harris)
# --------------------------------------------------------------------------
def _sum3x3(f, x, y):
    return (f[x - 1, y - 1] + f[x - 1, y] + f[x - 1, y + 1] +
            f[x, y - 1] + f[x, y] + f[x, y + 1] +
            f[x + 1, y - 1] + f[x + 1, y] + f[x + 1, y + 1])


def build_harris(W, H):
    if W < 7 or H < 7:
        raise ValueError("harris needs W, H >= 7 (output [3, W-3) x [3, H-3))")
    x, y = _vars("x", "y")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    gray = hl.Func("gray")
    gray[x, y] = (f32(0.299) * inp[x, y, 0] + f32(0.587) * inp[x, y, 1] +
                  f32(0.114) * inp[x, y, 2])
    Iy = hl.Func("Iy")
    Iy[x, y] = (gray[x - 1, y - 1] * f32(-1.0 / 12) + gray[x - 1, y + 1] * f32(1.0 / 12) +
                gray[x, y - 1] * f32(-2.0 / 12) + gray[x, y + 1] * f32(2.0 / 12) +
                gray[x + 1, y - 1] * f32(-1.0 / 12) + gray[x + 1, y + 1] * f32(1.0 / 12))
    Ix = hl.Func("Ix")
    Ix[x, y] = (gray[x - 1, y - 1] * f32(-1.0 / 12) + gray[x + 1, y - 1] * f32(1.0 / 12) +
                gray[x - 1, y] * f32(-2.0 / 12) + gray[x + 1, y] * f32(2.0 / 12) +
                gray[x - 1, y + 1] * f32(-1.0 / 12) + gray[x + 1, y + 1] * f32(1.0 / 12))
    Ixx = hl.Func("Ixx")
    Ixx[x, y] = Ix[x, y] * Ix[x, y]
    Iyy = hl.Func("Iyy")
    Iyy[x, y] = Iy[x, y] * Iy[x, y]
    Ixy = hl.Func("Ixy")
    Ixy[x, y] = Ix[x, y] * Iy[x, y]
    Sxx = hl.Func("Sxx")
    Sxx[x, y] = _sum3x3(Ixx, x, y)
    Syy = hl.Func("Syy")
    Syy[x, y] = _sum3x3(Iyy, x, y)
    Sxy = hl.Func("Sxy")
    Sxy[x, y] = _sum3x3(Ixy, x, y)
    det = hl.Func("det")
    det[x, y] = Sxx[x, y] * Syy[x, y] - Sxy[x, y] * Sxy[x, y]
    trace = hl.Func("trace")
    trace[x, y] = Sxx[x, y] + Syy[x, y]
    output = hl.Func("output")
    output[x, y] = det[x, y] - f32(0.04) * trace[x, y] * trace[x, y]
    _estimates(inp, output, (x, y), W, H, 0, out_min=(3, 3))
    s = dict(gray=gray, Iy=Iy, Ix=Ix, Ixx=Ixx, Iyy=Iyy, Ixy=Ixy, Sxx=Sxx, Syy=Syy,
             Sxy=Sxy, det=det, trace=trace)

    def manual(vec):
        # Halide apps/harris CPU schedule
        yi = hl.Var("yi")
        output.split(y, y, yi, C.fit(32, H - 6)).parallel(y).vectorize(x, vec)
        gray.store_at(output, y).compute_at(output, yi).vectorize(x, vec)
        Ix.store_at(output, y).compute_at(output, yi).vectorize(x, vec)
        Iy.store_at(output, y).compute_at(output, yi).vectorize(x, vec)
        Ix.compute_with(hl.LoopLevel(Iy, x, 0))

    return C.Bench("harris", inp, output, s, [W, H, 3], [W - 6, H - 6], manual, out_min=[3, 3],
                   out_ndim=3)


# --------------------------------------------------------------------------
# unsharp (Halide apps/unsharp)
# --------------------------------------------------------------------------
def build_unsharp(W, H, sigma=1.5):
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    kPi = 3.14159265358979310000
    kernel = hl.Func("kernel")
    kernel[x] = hl.exp(-x * x / f32(2 * sigma * sigma)) / f32(math.sqrt(2 * kPi) * sigma)
    inb = hl.BoundaryConditions.repeat_edge(inp)
    gray = hl.Func("gray")
    gray[x, y] = (f32(0.299) * inb[x, y, 0] + f32(0.587) * inb[x, y, 1] +
                  f32(0.114) * inb[x, y, 2])
    blur_y = hl.Func("blur_y")
    blur_y[x, y] = (kernel[0] * gray[x, y] +
                    kernel[1] * (gray[x, y - 1] + gray[x, y + 1]) +
                    kernel[2] * (gray[x, y - 2] + gray[x, y + 2]) +
                    kernel[3] * (gray[x, y - 3] + gray[x, y + 3]))
    blur_x = hl.Func("blur_x")
    blur_x[x, y] = (kernel[0] * blur_y[x, y] +
                    kernel[1] * (blur_y[x - 1, y] + blur_y[x + 1, y]) +
                    kernel[2] * (blur_y[x - 2, y] + blur_y[x + 2, y]) +
                    kernel[3] * (blur_y[x - 3, y] + blur_y[x + 3, y]))
    sharpen = hl.Func("sharpen")
    sharpen[x, y] = 2 * gray[x, y] - blur_x[x, y]
    ratio = hl.Func("ratio")
    ratio[x, y] = sharpen[x, y] / gray[x, y]
    output = hl.Func("output")
    output[x, y, c] = ratio[x, y] * inp[x, y, c]
    _estimates(inp, output, (x, y, c), W, H, 3)
    s = dict(gray=gray, blur_y=blur_y, blur_x=blur_x, sharpen=sharpen, ratio=ratio)

    def manual(vec):
        # Halide apps/unsharp CPU schedule
        yo, yi = _vars("yo", "yi")
        output.split(y, yo, yi, C.fit(32, H)).vectorize(x, vec).parallel(yo).reorder(x, c, yi, yo)
        gray.compute_at(output, yi).store_at(output, yo).vectorize(x, vec)
        blur_y.compute_at(output, yi).store_at(output, yo).vectorize(x, vec)
        ratio.compute_at(output, yi).store_at(output, yo).vectorize(x, vec)

    return C.Bench("unsharp", inp, output, s, [W, H, 3], [W, H, 3], manual)


# --------------------------------------------------------------------------
# unsharp_pm (PolyMage apps/unsharp_mask: weight 3, threshold 0.001)
# --------------------------------------------------------------------------
def build_unsharp_pm(W, H, weight=3.0, threshold=0.001):
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    inb = hl.BoundaryConditions.repeat_edge(inp)
    blur_y = hl.Func("blur_y")   # PolyMage "blurx" (its x is the row index)
    blur_y[x, y, c] = (inb[x, y - 2, c] + inb[x, y - 1, c] * f32(4) + inb[x, y, c] * f32(6) +
                       inb[x, y + 1, c] * f32(4) + inb[x, y + 2, c]) * f32(0.0625)
    blur_x = hl.Func("blur_x")   # PolyMage "blury"
    blur_x[x, y, c] = (blur_y[x - 2, y, c] + blur_y[x - 1, y, c] * f32(4) + blur_y[x, y, c] * f32(6) +
                       blur_y[x + 1, y, c] * f32(4) + blur_y[x + 2, y, c]) * f32(0.0625)
    sharpen = hl.Func("sharpen")
    sharpen[x, y, c] = inp[x, y, c] * f32(1 + weight) - blur_x[x, y, c] * f32(weight)
    mask = hl.Func("mask")
    mask[x, y, c] = hl.select(hl.abs(inp[x, y, c] - blur_x[x, y, c]) < f32(threshold),
                              inp[x, y, c], sharpen[x, y, c])
    _estimates(inp, mask, (x, y, c), W, H, 3)
    s = dict(blur_y=blur_y, blur_x=blur_x, sharpen=sharpen)

    def manual(vec):
        # apps/unsharp style: strips of 32 rows in parallel, the vertical blur
        # computed per output row (vectorized), everything else inlined
        yo, yi = _vars("yo", "yi")
        mask.split(y, yo, yi, C.fit(32, H)).vectorize(x, vec).reorder(x, yi, c, yo).parallel(yo)
        blur_y.compute_at(mask, yi).vectorize(x, vec)

    return C.Bench("unsharp_pm", inp, mask, s, [W, H, 3], [W, H, 3], manual)


# --------------------------------------------------------------------------
# blur3x3 (Halide's classic example), per channel
# --------------------------------------------------------------------------
def build_blur3x3(W, H):
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    inb = hl.BoundaryConditions.repeat_edge(inp)
    third = f32(1.0 / 3)
    bx = hl.Func("bx")
    bx[x, y, c] = (inb[x - 1, y, c] + inb[x, y, c] + inb[x + 1, y, c]) * third
    out = hl.Func("out")
    out[x, y, c] = (bx[x, y - 1, c] + bx[x, y, c] + bx[x, y + 1, c]) * third
    _estimates(inp, out, (x, y, c), W, H, 3)

    def manual(vec):
        # The classic CPU schedule: 256x32 tiles, tile rows in parallel, x
        # vectorized, bx computed per tile (34 rows for 32: 6% redundant)
        xo, yo, xi, yi = _vars("xo", "yo", "xi", "yi")
        out.tile(x, y, xo, yo, xi, yi, C.fit(256, W), C.fit(32, H)).vectorize(xi, vec).parallel(yo)
        bx.compute_at(out, xo).vectorize(x, vec)

    return C.Bench("blur3x3", inp, out, dict(bx=bx), [W, H, 3], [W, H, 3], manual)


# --------------------------------------------------------------------------
# laplacian: detail-enhancing Laplacian pyramid (4 levels, per channel)
# --------------------------------------------------------------------------
def pyramid_sizes(W, H, levels=LAPLACIAN_LEVELS):
    """[(W0, H0), ...]: level i+1 is ceil(level i / 2)."""
    sizes = [(W, H)]
    for _ in range(levels - 1):
        w, h = sizes[-1]
        sizes.append(((w + 1) // 2, (h + 1) // 2))
    return sizes


def build_laplacian(W, H, gains=LAPLACIAN_GAINS):
    """g0 = in; g(i+1) = down2(g(i)): [1 4 6 4 1]/16 in x at the even columns,
    then in y at the even rows, clamp-to-edge reads of g(i);
    l(i) = g(i) - up2(g(i+1)); r3 = g3; r(i) = gain(i) l(i) + up2(r(i+1)).
    up2 is bilinear x2 sampling the coarse image at ((y - 0.5)/2, (x - 0.5)/2):
    fine 2k -> 0.25 c[k-1] + 0.75 c[k], fine 2k+1 -> 0.75 c[k] + 0.25 c[k+1],
    coarse indices clamped; x pass (upx) on the coarse rows, then the y pass
    (inlined into l / r)."""
    L = LAPLACIAN_LEVELS
    assert len(gains) == L - 1
    x, y, c = _vars("x", "y", "c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    sizes = pyramid_sizes(W, H, L)

    def clamped(f, i):
        w, h = sizes[i]
        return hl.BoundaryConditions.repeat_edge(f, [hl.Range(0, w), hl.Range(0, h)])

    def upx(name, cf):
        u = hl.Func(name)
        u[x, y, c] = hl.select(x % 2 == 0,
                               f32(0.25) * cf[x / 2 - 1, y, c] + f32(0.75) * cf[x / 2, y, c],
                               f32(0.75) * cf[x / 2, y, c] + f32(0.25) * cf[x / 2 + 1, y, c])
        return u

    def upy(u):
        return hl.select(y % 2 == 0,
                         f32(0.25) * u[x, y / 2 - 1, c] + f32(0.75) * u[x, y / 2, c],
                         f32(0.75) * u[x, y / 2, c] + f32(0.25) * u[x, y / 2 + 1, c])

    w16 = f32(1.0 / 16)
    g = [inp]                        # g[0] read in its domain only: no wrapper
    gc = [hl.BoundaryConditions.repeat_edge(inp)]
    downx, ux_g = [], []
    for i in range(L - 1):
        d = hl.Func("downx%d" % i)   # x pass at the coarse columns, fine rows
        d[x, y, c] = (gc[i][2 * x - 2, y, c] + f32(4) * gc[i][2 * x - 1, y, c] +
                      f32(6) * gc[i][2 * x, y, c] + f32(4) * gc[i][2 * x + 1, y, c] +
                      gc[i][2 * x + 2, y, c]) * w16
        gn = hl.Func("g%d" % (i + 1))
        gn[x, y, c] = (d[x, 2 * y - 2, c] + f32(4) * d[x, 2 * y - 1, c] + f32(6) * d[x, 2 * y, c] +
                       f32(4) * d[x, 2 * y + 1, c] + d[x, 2 * y + 2, c]) * w16
        downx.append(d)
        g.append(gn)
        gc.append(clamped(gn, i + 1))
        ux_g.append(upx("upx_g%d" % i, gc[i + 1]))
    # collapse: r3 = g3, so up2(r3) is up2(g3) and reuses upx_g2
    r = [None] * L
    ux_r = [None] * (L - 1)
    ux_r[L - 2] = ux_g[L - 2]
    lap = [None] * (L - 1)
    for i in range(L - 2, -1, -1):
        if ux_r[i] is None:
            ux_r[i] = upx("upx_r%d" % i, clamped(r[i + 1], i + 1))
        li = hl.Func("l%d" % i)
        li[x, y, c] = g[i][x, y, c] - upy(ux_g[i])
        ri = hl.Func("r%d" % i if i else "output")
        ri[x, y, c] = f32(gains[i]) * li[x, y, c] + upy(ux_r[i])
        lap[i], r[i] = li, ri
    output = r[0]
    _estimates(inp, output, (x, y, c), W, H, 3)
    s = {}
    for i in range(L - 1):
        s["downx%d" % i] = downx[i]
        s["g%d" % (i + 1)] = g[i + 1]
        s["upx_g%d" % i] = ux_g[i]
        s["l%d" % i] = lap[i]
        if i < L - 2:
            s["upx_r%d" % i] = ux_r[i]
        if i > 0:
            s["r%d" % i] = r[i]

    def manual(vec):
        # In the style of apps/local_laplacian and apps/interpolate: every
        # pyramid level (g1..g3, r1, r2) compute_root, strips of rows in
        # parallel, x vectorized; the separable intermediates (downx, upx)
        # sliding-windowed per strip (store_at strip, compute_at row) like
        # apps/unsharp's blur_y; l(i) and the y passes inlined into r(i).
        # Channels are the outermost loop, so strips stay contiguous rows.
        def strips(f, rows, inner):
            yo, yi = hl.Var(f.name() + "_yo"), hl.Var(f.name() + "_yi")
            f.split(y, yo, yi, rows).parallel(yo).vectorize(x, vec)
            for h in inner:
                h.store_at(f, yo).compute_at(f, yi).vectorize(x, vec)
        for i in range(1, L):
            g[i].compute_root()
            strips(g[i], 16, [downx[i - 1]])
        for i in range(1, L - 1):
            r[i].compute_root()
        for i in range(L - 2, -1, -1):
            strips(r[i], C.fit(32, H) if i == 0 else 16,
                   [ux_g[i]] + ([ux_r[i]] if ux_r[i] is not ux_g[i] else []))

    return C.Bench("laplacian", inp, output, s, [W, H, 3], [W, H, 3], manual)


BUILDERS = {
    "harris": build_harris,
    "unsharp": build_unsharp,
    "unsharp_pm": build_unsharp_pm,
    "blur3x3": build_blur3x3,
    "laplacian": build_laplacian,
}


def build(name, W, H):
    if name not in BUILDERS:
        raise ValueError("unknown pipeline %r (one of %s)" % (name, ", ".join(BUILDERS)))
    return BUILDERS[name](W, H)


def main(argv=None):
    C.warn_quiet()
    ap = C.make_parser(__doc__, BUILDERS)
    ap.add_argument("--size", type=C.parse_size, default=DEFAULT_SIZE, help="WxH (default 4256x2832)")
    a = ap.parse_args(argv)
    if a.mode == "list":
        print(" ".join(BUILDERS))
        return 0
    if not a.bench:
        ap.error("--bench is required")
    W, H = a.size
    b = build(a.bench, W, H)
    return C.run_command(ap, a, b, dict(bench=a.bench, width=W, height=H))


if __name__ == "__main__":
    sys.exit(main())
