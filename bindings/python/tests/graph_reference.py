"""A float64 numpy evaluation of stage graphs, written from the definitions
in include/polysci/graph.h, to check polysci's plans against.

``Pipeline`` has the building methods of ``polysci.Graph`` (input, stencil,
pointwise, channel_mix, resample, output): each call adds the stage to a real
graph (``p.graph``) and records how to evaluate it. ``p.reference(*arrays)``
evaluates the recorded stages in float64 from exactly the float32 inputs and
returns the outputs as the plan stores them (stored region, user layout).

Every tensor is held over its domain as an (N, H, W, C) float64 array plus
the (y0, x0) corner of the domain; a read at (y, x) outside it is answered
by the reading stage's boundary (0, or the nearest pixel).

Pointwise functions are evaluated on ``Value`` arrays: numpy arrays whose
comparisons give 1.0 / 0.0 as the library's do. The functions select, clamp,
minimum, maximum, sqrt, exp, log and floor of this module build a polysci
expression when an operand is a ``polysci.Expr`` and compute in numpy
otherwise, so one lambda serves both.

Tolerance. The plan computes in f32 and the reference in f64 from the same
f32 inputs (and the same f32-rounded weights). Each stage rounds each of its
terms once (u = 2^-24 relative), so a stage with T terms of magnitude at most
M adds at most about (T + 1) u M, and errors carried in from its inputs are
scaled by at most the sum of |weights| (1 for the normalised filters used
here, 2-3 for the sharpening expressions). ``assert_close`` allows
64 u * stages * taps * scale of absolute error, scale being the largest
magnitude of any tensor of the graph: above that worst case whatever order
the plan sums in (reassociated, fused multiply-adds), and still 1e-3 of scale
or less for these pipelines, while a missing or misweighted tap, a wrong
boundary or a misplaced pixel moves an element by a few percent of scale.
"""

import numpy as np

import polysci as ps

U = 2.0 ** -24

# ----------------------------------------------------------------- values


class Value(np.ndarray):
    """float64 array whose comparisons are 1.0 / 0.0 (like PS_EXPR_LT etc.)."""

    def _cmp(self, other, op):
        return op(np.asarray(self), np.asarray(other)).astype(np.float64).view(Value)

    def __lt__(self, o): return self._cmp(o, np.less)
    def __le__(self, o): return self._cmp(o, np.less_equal)
    def __gt__(self, o): return self._cmp(o, np.greater)
    def __ge__(self, o): return self._cmp(o, np.greater_equal)
    def __eq__(self, o): return self._cmp(o, np.equal)
    def __ne__(self, o): return self._cmp(o, np.not_equal)
    __hash__ = None


def _is_expr(*args):
    return any(isinstance(a, ps.Expr) for a in args)


def _val(a):
    return np.asarray(a, dtype=np.float64).view(Value)


def select(c, a, b):
    return ps.select(c, a, b) if _is_expr(c, a, b) else _val(np.where(np.asarray(c) != 0, a, b))


def clamp(x, lo, hi):
    return ps.clamp(x, lo, hi) if _is_expr(x, lo, hi) else _val(np.minimum(np.maximum(x, lo), hi))


def minimum(a, b):
    return ps.minimum(a, b) if _is_expr(a, b) else _val(np.minimum(a, b))


def maximum(a, b):
    return ps.maximum(a, b) if _is_expr(a, b) else _val(np.maximum(a, b))


def _unary(psf, npf):
    def f(a):
        return psf(a) if _is_expr(a) else _val(npf(a))
    return f


sqrt = _unary(ps.sqrt, np.sqrt)
exp = _unary(ps.exp, np.exp)
log = _unary(ps.log, np.log)
floor = _unary(ps.floor, np.floor)

# ----------------------------------------------------------------- tensors


class Ref:
    """A tensor over its domain: a (N, H, W, C) float64 array at corner (y0, x0)."""

    def __init__(self, a, y0, x0):
        self.a, self.y0, self.x0 = a, y0, x0

    @property
    def h(self):
        return self.a.shape[1]

    @property
    def w(self):
        return self.a.shape[2]

    def read(self, ys, xs, boundary):
        """Values at rows ys x columns xs (1-D integer arrays): (N, len(ys), len(xs), C)."""
        iy, ix = np.asarray(ys) - self.y0, np.asarray(xs) - self.x0
        cy, cx = np.clip(iy, 0, self.h - 1), np.clip(ix, 0, self.w - 1)
        v = self.a[:, cy][:, :, cx]
        inside_y, inside_x = (iy == cy), (ix == cx)
        if boundary == "valid":
            assert inside_y.all() and inside_x.all(), "a valid stage read outside its input"
        elif boundary == "zero":
            v = v * (inside_y[:, None] & inside_x[None, :])[None, :, :, None]
        else:
            assert boundary == "clamp", boundary
        return v


def _range(lo, n, stride, dmin, dmax):
    """graph.c valid_range: y with stride*y + dmin >= lo and stride*y + dmax <= lo + n - 1."""
    a = -((dmin - lo) // stride)  # ceil((lo - dmin) / stride)
    b = (lo + n - 1 - dmax) // stride
    return a, max(b - a + 1, 0)


class Pipeline:
    def __init__(self):
        self.graph = ps.Graph()
        self.steps = []      # per tensor: f(values) -> Ref
        self.producers = []  # per tensor: the indices of the tensors it reads
        self.outputs = []    # (tensor index, layout, region)
        self.n_inputs = 0

    def _add(self, t, f, *inputs):
        assert t.index == len(self.steps)
        self.steps.append(f)
        self.producers.append([x.index for x in inputs])
        return t

    def input(self, name, shape, layout="nhwc"):
        t = self.graph.input(name, shape, layout)
        k = self.n_inputs
        self.n_inputs += 1

        def f(vals, arrays):
            a = np.asarray(arrays[k], dtype=np.float64)
            return Ref(a if layout == "nhwc" else a.transpose(0, 2, 3, 1), 0, 0)
        return self._add(t, f)

    def stencil(self, input, taps, weights=None, stride=1, boundary="clamp", reduce="sum", name=None):
        t = self.graph.stencil(input, taps, weights=weights, stride=stride, boundary=boundary, reduce=reduce,
                               name=name)
        taps = [tuple(x) for x in taps]
        dy = [x[0] for x in taps]
        dx = [x[1] for x in taps]
        if len(taps[0]) == 3:
            w = np.array([x[2] for x in taps], dtype=np.float32).astype(np.float64)
        elif weights is None:
            w = np.ones(len(taps))
        else:
            w = np.asarray(weights, dtype=np.float32).astype(np.float64)
        sy, sx = (stride, stride) if isinstance(stride, int) else stride
        i = input.index

        def f(vals, arrays):
            src = vals[i]
            if boundary == "valid":
                y0, h = _range(src.y0, src.h, sy, min(dy), max(dy))
                x0, wd = _range(src.x0, src.w, sx, min(dx), max(dx))
            else:
                y0, h = _range(src.y0, src.h, sy, 0, 0)
                x0, wd = _range(src.x0, src.w, sx, 0, 0)
            ys, xs = sy * np.arange(y0, y0 + h), sx * np.arange(x0, x0 + wd)
            terms = [src.read(ys + dy[k], xs + dx[k], boundary) * w[k] for k in range(len(taps))]
            red = {"sum": np.sum, "max": np.max, "min": np.min}[reduce]
            return Ref(red(np.stack(terms), axis=0), y0, x0)
        return self._add(t, f, input)

    def pointwise(self, fn, *inputs, name=None):
        t = self.graph.pointwise(fn, *inputs, name=name)
        idx = [x.index for x in inputs]

        def f(vals, arrays):
            srcs = [vals[k] for k in idx]
            y0, x0 = max(s.y0 for s in srcs), max(s.x0 for s in srcs)
            y1, x1 = min(s.y0 + s.h for s in srcs), min(s.x0 + s.w for s in srcs)
            args = [_val(s.a[:, y0 - s.y0:y1 - s.y0, x0 - s.x0:x1 - s.x0]) for s in srcs]
            r = np.asarray(fn(*args), dtype=np.float64)
            c = max(s.a.shape[3] for s in srcs)
            return Ref(np.broadcast_to(r, (srcs[0].a.shape[0], y1 - y0, x1 - x0, c)).copy(), y0, x0)
        return self._add(t, f, *inputs)

    def channel_mix(self, input, weights, bias=None, name=None):
        t = self.graph.channel_mix(input, weights, bias=bias, name=name)
        w = np.asarray(weights, dtype=np.float32).astype(np.float64)
        b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, dtype=np.float32).astype(np.float64)
        i = input.index

        def f(vals, arrays):
            src = vals[i]
            return Ref(np.einsum("nhwc,kc->nhwk", src.a, w) + b, src.y0, src.x0)
        return self._add(t, f, input)

    def resample(self, input, kind, boundary="clamp", name=None):
        t = self.graph.resample(input, kind, boundary=boundary, name=name)
        i = input.index

        def f(vals, arrays):
            src = vals[i]
            if kind == "down2_average":
                y0, h = _range(src.y0, src.h, 2, 0, 0)
                x0, wd = _range(src.x0, src.w, 2, 0, 0)
                ys, xs = 2 * np.arange(y0, y0 + h), 2 * np.arange(x0, x0 + wd)
                a = sum(src.read(ys + p, xs + q, boundary) for p in (0, 1) for q in (0, 1)) * 0.25
                return Ref(a, y0, x0)
            y0, x0, h, wd = 2 * src.y0, 2 * src.x0, 2 * src.h, 2 * src.w
            ys, xs = np.arange(y0, y0 + h), np.arange(x0, x0 + wd)
            if kind == "up2_nearest":
                return Ref(src.read(ys // 2, xs // 2, boundary), y0, x0)
            assert kind == "up2_bilinear", kind
            # sample at ((y - 0.5) / 2): 3/4 of row y // 2, 1/4 of its neighbour on y's side
            ny, nx = ys // 2 + np.where(ys % 2 == 0, -1, 1), xs // 2 + np.where(xs % 2 == 0, -1, 1)
            a = 0.0
            for ry, wy in ((ys // 2, 0.75), (ny, 0.25)):
                for rx, wx in ((xs // 2, 0.75), (nx, 0.25)):
                    a = a + wy * wx * src.read(ry, rx, boundary)
            return Ref(a, y0, x0)
        return self._add(t, f, input)

    def output(self, tensor, layout="nhwc", region=None):
        self.graph.output(tensor, layout=layout, region=region)
        self.outputs.append((tensor.index, layout, region))
        return tensor

    # -- evaluation

    def evaluate(self, *arrays):
        """Every tensor as a Ref (a list by tensor index)."""
        vals = []
        for f in self.steps:
            vals.append(f(vals, arrays))
        return vals

    def reference(self, *arrays):
        """(outputs, scale): the outputs as stored (float64, user layout), and
        the largest magnitude of any tensor (for the tolerance)."""
        vals = self.evaluate(*arrays)
        outs = []
        for i, layout, region in self.outputs:
            v = vals[i]
            if region is not None:
                y0, x0, h, w = region
                a = v.a[:, y0 - v.y0:y0 - v.y0 + h, x0 - v.x0:x0 - v.x0 + w]
            else:
                a = v.a
            outs.append(a if layout == "nhwc" else a.transpose(0, 3, 1, 2))
        scale = max(1.0, max(float(np.abs(v.a).max()) for v in vals))
        return outs, scale

    def stages(self):
        return len(self.steps) - self.n_inputs

    def inputs(self, rng, lo=0.0, hi=1.0):
        """Random float32 input arrays of the graph's inputs' shapes."""
        return [rng.uniform(lo, hi, t.array_shape).astype(np.float32) for t in self.graph.inputs]


def assert_close(got, ref, scale, stages, taps, what=""):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    bound = 64 * U * max(stages, 1) * max(taps, 1) * scale
    err = np.abs(got - ref)
    bad = ~(err <= bound)  # NaN (an unwritten element) counts as bad
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), 0)), got.shape)
        raise AssertionError("%s: %d of %d elements off; worst at %s: got %r, want %r (bound %.3g)" % (
            what, int(bad.sum()), got.size, i, got[i], ref[i], bound))
