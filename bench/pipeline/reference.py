#!/usr/bin/python3
"""Float64 numpy reference of the image-pipeline benchmarks, and `verify`:
every Halide schedule of halide_pipelines.py against it at small sizes.

Importable without Halide (numpy only):
    import reference
    out = reference.harris(img)        # img: (C, H, W) planar, float32 or float64
Every function takes a planar (3, H, W) image and returns a float64 planar
(C, H', W') array: (3, H, W) for unsharp, unsharp_pm, blur3x3 and laplacian
(clamp-to-edge reads), (1, H-6, W-6) for harris (the valid region
[3, H-3) x [3, W-3), no boundary condition).  blur3x3 and laplacian work on
any number of channels.

  /usr/bin/python3 reference.py verify [--bench NAME,...] [--scheds naive,manual,...]
                                       [--sizes 67x45,130x97,...]

Tolerance (checked per pipeline):  max |halide - ref| <= TOL * max |ref|,
TOL = 1e-5.  Why: Halide evaluates in f32 (unit roundoff u = 2^-24 = 6e-8);
every output is a chain of at most ~70 roundings (laplacian: three down2 of 10
operations each, then the up2/collapse chain; harris: ~35), and the
intermediate values are positive-weight combinations no larger than a few
times max|ref|, so the f32 error is bounded by about 70 u * 3 = 1.3e-5 of
max|ref| in the worst case and observed at 1e-7..1e-6.  A wrong tap,
coefficient, boundary or unwritten element (outputs are NaN-filled) gives
errors of 1e-3 or more of max|ref|.  unsharp_pm's mask is a threshold select:
a pixel where the f64 |img - blur| lies within 2e-6 of the threshold (the f32
error of blur, ~10 roundings of values < 1) may take the other branch; such
pixels are accepted when they match the other branch, and counted.
"""
import argparse
import math
import os
import sys

import numpy as np

TOL = 1e-5
PM_THRESHOLD_SLACK = 2e-6
LAPLACIAN_GAINS = (1.8, 1.4, 1.2)
LAPLACIAN_LEVELS = 4


def _f64(img):
    img = np.asarray(img, dtype=np.float64)
    if img.ndim != 3:
        raise ValueError("expected a planar (C, H, W) image, got shape %s" % (img.shape,))
    return img


def shift(a, axis, k):
    """result[..., i, ...] = a[..., clamp(i + k), ...] along axis (repeat edge)."""
    n = a.shape[axis]
    return np.take(a, np.clip(np.arange(n) + k, 0, n - 1), axis=axis)


def gray(img):
    return 0.299 * img[0] + 0.587 * img[1] + 0.114 * img[2]


def harris(img):
    """(3, H, W) -> (1, H-6, W-6): the Harris response on [3, H-3) x [3, W-3)."""
    img = _f64(img)
    g = gray(img)
    H, W = g.shape
    if H < 7 or W < 7:
        raise ValueError("harris needs H, W >= 7")

    def G(dx, dy):  # g[y+dy, x+dx] on y, x in [1, H-1) x [1, W-1)
        return g[1 + dy:H - 1 + dy, 1 + dx:W - 1 + dx]
    Iy = (-G(-1, -1) + G(-1, 1) - 2 * G(0, -1) + 2 * G(0, 1) - G(1, -1) + G(1, 1)) / 12
    Ix = (-G(-1, -1) + G(1, -1) - 2 * G(-1, 0) + 2 * G(1, 0) - G(-1, 1) + G(1, 1)) / 12

    def box(a):  # a on [1, H-1) x [1, W-1) -> 3x3 sums on [2, H-2) x [2, W-2)
        h, w = a.shape
        return sum(a[1 + dy:h - 1 + dy, 1 + dx:w - 1 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    Sxx, Syy, Sxy = box(Ix * Ix), box(Iy * Iy), box(Ix * Iy)
    det = Sxx * Syy - Sxy * Sxy
    tr = Sxx + Syy
    return (det - 0.04 * tr * tr)[None, 1:-1, 1:-1]


def unsharp(img, sigma=1.5):
    """Halide apps/unsharp: output = (2 gray - blur(gray)) / gray * img."""
    img = _f64(img)
    k = [math.exp(-i * i / (2 * sigma * sigma)) / (math.sqrt(2 * math.pi) * sigma) for i in range(4)]
    gy = gray(img)
    by = k[0] * gy + sum(k[i] * (shift(gy, 0, -i) + shift(gy, 0, i)) for i in (1, 2, 3))
    bx = k[0] * by + sum(k[i] * (shift(by, 1, -i) + shift(by, 1, i)) for i in (1, 2, 3))
    return ((2 * gy - bx) / gy)[None] * img


def _blur5(a, axis):
    return (shift(a, axis, -2) + 4 * shift(a, axis, -1) + 6 * a +
            4 * shift(a, axis, 1) + shift(a, axis, 2)) / 16


def unsharp_pm_parts(img, weight=3.0):
    """(img, |img - blur|, sharpen) of PolyMage's unsharp mask, float64."""
    img = _f64(img)
    blur = _blur5(_blur5(img, 1), 2)
    return img, np.abs(img - blur), img * (1 + weight) - blur * weight


def unsharp_pm(img, weight=3.0, threshold=0.001):
    """PolyMage unsharp mask: |img - blur| < threshold ? img : sharpen."""
    img, dev, sharp = unsharp_pm_parts(img, weight)
    return np.where(dev < threshold, img, sharp)


def blur3x3(img):
    """Two-pass 3x3 box blur per channel, clamp to edge."""
    img = _f64(img)
    bx = (shift(img, 2, -1) + img + shift(img, 2, 1)) / 3
    return (shift(bx, 1, -1) + bx + shift(bx, 1, 1)) / 3


def down2(a):
    """[1 4 6 4 1]/16 blur (clamp to edge) sampled at the even columns and rows:
    (C, H, W) -> (C, ceil(H/2), ceil(W/2))."""
    def along(a, axis):
        n = a.shape[axis]
        m = (n + 1) // 2
        centre = 2 * np.arange(m)
        taps = [np.take(a, np.clip(centre + j, 0, n - 1), axis=axis) for j in (-2, -1, 0, 1, 2)]
        return (taps[0] + 4 * taps[1] + 6 * taps[2] + 4 * taps[3] + taps[4]) / 16
    return along(along(a, 2), 1)


def up2(a, H, W):
    """Bilinear x2 of (C, h, w) to (C, H, W): fine index i samples the coarse
    image at (i - 0.5) / 2, i.e. coarse j0 = floor((i - 1) / 2) with weight
    0.25 (i even) or 0.75 (i odd) and j0 + 1 with the rest; indices clamped."""
    def along(a, axis, n_fine):
        n = a.shape[axis]
        i = np.arange(n_fine)
        j0 = (i - 1) // 2
        w0 = np.where(i % 2 == 0, 0.25, 0.75)
        shape = [1] * a.ndim
        shape[axis] = n_fine
        w0 = w0.reshape(shape)
        return (w0 * np.take(a, np.clip(j0, 0, n - 1), axis=axis) +
                (1 - w0) * np.take(a, np.clip(j0 + 1, 0, n - 1), axis=axis))
    return along(along(a, 2, W), 1, H)


def laplacian(img, gains=LAPLACIAN_GAINS, levels=LAPLACIAN_LEVELS):
    """Detail-enhancing Laplacian pyramid: g0 = img, g(i+1) = down2(g(i)),
    l(i) = g(i) - up2(g(i+1)), r(L-1) = g(L-1), r(i) = gain(i) l(i) + up2(r(i+1))."""
    img = _f64(img)
    if len(gains) != levels - 1:
        raise ValueError("need levels - 1 gains")
    g = [img]
    for _ in range(levels - 1):
        g.append(down2(g[-1]))
    r = g[-1]
    for i in range(levels - 2, -1, -1):
        H, W = g[i].shape[1:]
        lap = g[i] - up2(g[i + 1], H, W)
        r = gains[i] * lap + up2(r, H, W)
    return r


PIPELINES = {
    "harris": harris,
    "unsharp": unsharp,
    "unsharp_pm": unsharp_pm,
    "blur3x3": blur3x3,
    "laplacian": laplacian,
}


def compare(name, out, img, ref=None):
    """(ok, message) for a pipeline output (planar float32) against the
    reference of img, under the tolerance stated in the module docstring."""
    ref = PIPELINES[name](img) if ref is None else ref
    out = np.asarray(out, dtype=np.float64)
    if out.shape != ref.shape:
        return False, "shape %s, reference %s" % (out.shape, ref.shape)
    nan = int(np.isnan(out).sum())
    scale = float(np.max(np.abs(ref)))
    d = np.abs(out - ref)
    flips = 0
    if name == "unsharp_pm":
        im, dev, sharp = unsharp_pm_parts(img)
        bad = ~(d <= TOL * scale)
        alt = np.where(dev < 0.001, sharp, im)   # the branch not taken in f64
        tie = bad & (np.abs(dev - 0.001) <= PM_THRESHOLD_SLACK) & (np.abs(out - alt) <= TOL * scale)
        flips = int(tie.sum())
        d = np.where(tie, 0.0, d)
    err = float(np.nanmax(d)) / scale if d.size and not np.all(np.isnan(d)) else float("nan")
    ok = nan == 0 and err <= TOL
    msg = "max|d|/max|ref| = %.2e (tol %.0e)  nan %d" % (err, TOL, nan)
    if name == "unsharp_pm":
        msg += "  threshold ties %d" % flips
    return ok, msg


def verify(benches, scheds, sizes, machine=None, log=print):
    """Runs every schedule of every bench at every size against the reference;
    returns the number of failures.  Needs python3-halide."""
    import halide_common as C
    import halide_pipelines as HP
    C.warn_quiet()
    fails = 0
    for name in benches:
        for (W, H) in sizes:
            img = C.make_input_array((3, H, W))
            ref = PIPELINES[name](img)
            for s in scheds:
                ok, msg = C.checked_run(lambda: HP.build(name, W, H), s, img, machine,
                                        lambda out: compare(name, out, img, ref))
                fails += not ok
                log("%-10s %4dx%-4d %-14s %s  %s" % (name, W, H, s, "ok  " if ok else "FAIL", msg))
    return fails


def main(argv=None):
    ap = argparse.ArgumentParser(description="float64 reference of the image pipelines; verify Halide")
    ap.add_argument("mode", choices=["verify"])
    ap.add_argument("--bench", default=",".join(PIPELINES))
    ap.add_argument("--scheds", default="naive,manual,mullapudi2016,adams2019,li2018")
    ap.add_argument("--sizes", default="67x45,130x97,257x129")
    ap.add_argument("--machine", default=None, help="autoscheduler machine params P,LLC,BALANCE")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import halide_common as C
    sizes = [C.parse_size(s) for s in a.sizes.split(",")]
    fails = verify(a.bench.split(","), a.scheds.split(","), sizes, a.machine)
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
