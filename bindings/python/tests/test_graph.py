"""The stage-graph API from Python: expressions, the builder and its errors,
and (where the library has the engine) plans against a float64 numpy
reference (graph_reference.py) in every fusion mode."""

import ctypes
import ctypes.util
import gc
import threading

import numpy as np
import pytest

import polysci as ps
import graph_reference as R
from graph_reference import Pipeline, assert_close

engine = pytest.mark.skipif(not ps.has_engine(), reason="the loaded libpolysci has no ps_graph_plan_create / "
                                                        "ps_graph_execute (graph engine not built yet)")

# ----------------------------------------------------------------- expressions


def test_expressions_print_as_the_library_writes_them():
    a, b = ps.inp(0), ps.inp(1)
    assert str(2 * a - b) == "((2 * in0) - in1)"
    assert str(a + 1) == "(in0 + 1)" and str(1 + a) == "(1 + in0)"
    assert str(1 - a) == "(1 - in0)" and str(a / 4) == "(in0 / 4)" and str(0.5 / a) == "(0.5 / in0)"
    assert str(-a) == "(-in0)" and str(abs(a - b)) == "abs((in0 - in1))" and (+a) is a
    assert [str(e) for e in (a < b, a <= 1, a > 0.5, a >= b, a == b, a != 0)] == \
        ["(in0 < in1)", "(in0 <= 1)", "(in0 > 0.5)", "(in0 >= in1)", "(in0 == in1)", "(in0 != 0)"]
    assert str(1 < a) == "(in0 > 1)"  # Python reflects the comparison
    assert str(ps.select(a > b, a, 0)) == "select((in0 > in1), in0, 0)"
    assert str(ps.clamp(a, 0, 1)) == "clamp(in0, 0, 1)"
    assert str(ps.minimum(a, 2)) == "min(in0, 2)" and str(ps.maximum(0, b)) == "max(0, in1)"
    assert [str(f(a)) for f in (ps.sqrt, ps.exp, ps.log, ps.floor)] == \
        ["sqrt(in0)", "exp(in0)", "log(in0)", "floor(in0)"]
    # numpy scalars are numbers; numpy defers to the Expr's operators
    assert str(np.float32(2) * a) == "(2 * in0)" and str(a * np.int64(3)) == "(in0 * 3)"
    assert str(ps.Expr(0.25)) == "0.25" and str(ps.sqrt(2.0)) == "sqrt(2)"
    assert repr(a + b) == "<polysci.Expr (in0 + in1)>"


def test_expressions_reject_what_they_cannot_hold():
    a = ps.inp(0)
    with pytest.raises(TypeError, match="truth value"):
        bool(a > 0)
    with pytest.raises(TypeError, match="truth value"):
        if a == 1:
            pass
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        a * True  # bools are not numbers here
    with pytest.raises(TypeError, match="Expr or a number"):
        ps.select(a, [1], 0)
    with pytest.raises(TypeError):
        ps.Expr(None)
    with pytest.raises(ps.ArgumentError, match="input index"):
        ps.inp(-1)
    with pytest.raises(ps.ArgumentError, match="input index"):
        ps.inp(16)


def test_reused_expressions_are_copied_not_shared():
    """C operators take their operands; every use hands them a copy, so an
    Expr survives any number of uses and the result survives the operands."""
    a = ps.inp(0)
    sq = a * a
    total = sq
    for _ in range(200):
        total = total + sq
    del sq, a
    gc.collect()
    assert str(total).count("(in0 * in0)") == 201
    e = ps.inp(1) - 1
    quad = ps.select(e > 0, e, -e) / ps.clamp(e, e, e)
    del e
    gc.collect()
    assert str(quad) == "(select(((in1 - 1) > 0), (in1 - 1), (-(in1 - 1))) / clamp((in1 - 1), (in1 - 1), (in1 - 1)))"
    assert str(ps.Expr(quad)) == str(quad.copy()) == str(quad)
    g = ps.Graph()
    x = g.input("x", (1, 4, 4, 1))
    y = g.input("y", (1, 4, 4, 1))
    t = g.pointwise(quad * quad, x, y)  # the graph copies the tree; quad stays ours
    g.pointwise(quad, x, y)
    assert str(quad).startswith("(select(") and t.shape == (1, 4, 4, 1)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _malloc_in_use():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("no mallinfo2 in this C library")
    libc.mallinfo2.restype = _MallInfo2
    return lambda: libc.mallinfo2().uordblks


def test_expressions_do_not_leak():
    """Thousands of trees built with reused operands and dropped: the C heap
    does not grow (a leaked node is 48 bytes; each round builds ~40 nodes)."""
    in_use = _malloc_in_use()

    def rounds(n):
        a, b = ps.inp(0), ps.inp(1)
        for i in range(n):
            d = a - b
            e = ps.select(d > 0, d * d, ps.clamp(d, -1, 1)) + d / (abs(d) + 1)
            f = ps.maximum(e, e) - ps.minimum(d, e) + ps.sqrt(abs(e)) * i
            str(f)
            del d, e, f
        gc.collect()

    rounds(500)  # warm up the allocator and the finalizer registry
    before = in_use()
    rounds(3000)
    grown = in_use() - before
    assert grown < 3000 * 40 * 48 // 20, "C heap grew by %d bytes over 3000 rounds" % grown


# ----------------------------------------------------------------- building


def test_tensor_shapes_domains_and_names():
    g = ps.Graph()
    img = g.input("img", shape=(2, 20, 30, 3), layout="nchw")
    assert (img.shape, img.origin, img.name, img.is_input, img.output_index, img.layout) == \
        ((2, 20, 30, 3), (0, 0), "img", True, -1, ps.ActLayout.NCHW)
    assert img.array_shape == (2, 3, 20, 30) and img.channels == 3 and img.index == 0
    gray = g.channel_mix(img, [[0.299, 0.587, 0.114]], name="gray")
    assert gray.shape == (2, 20, 30, 1) and gray.name == "gray"
    box = g.stencil(gray, taps=[(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], weights=[1 / 9] * 9,
                    boundary="valid")
    assert (box.shape, box.origin, box.name) == ((2, 18, 28, 1), (1, 1), "t2")
    skew = g.stencil(box, taps=[(0, 0), (2, -3)], boundary="valid")  # rows y..y+2, columns x-3..x
    assert (skew.shape, skew.origin) == ((2, 16, 25, 1), (1, 4))
    pool = g.stencil(gray, taps=[(0, 0), (0, 1), (1, 0), (1, 1)], stride=2, reduce="max", boundary="zero")
    assert (pool.shape, pool.origin) == ((2, 10, 15, 1), (0, 0))
    odd = g.stencil(gray, taps=[(0, 0)], stride=(3, 4))
    assert odd.shape == (2, 7, 8, 1)  # ceil(20/3), ceil(30/4)
    mixed = g.pointwise(lambda a, b: a * b, img, skew)  # 3 channels x 1 broadcast, domains intersected
    assert (mixed.shape, mixed.origin) == ((2, 16, 25, 3), (1, 4))
    up = g.resample(pool, "up2_bilinear")
    down = g.resample(skew, "down2_average", boundary="zero")
    assert (up.shape, up.origin) == ((2, 20, 30, 1), (0, 0))
    assert (down.shape, down.origin) == ((2, 8, 13, 1), (1, 2))  # rows 1..16 -> 1..8, columns 4..28 -> 2..14
    near = g.resample(down, "up2_nearest")
    assert (near.shape, near.origin) == ((2, 16, 26, 1), (2, 4))
    depth = g.stencil(img, taps=[(0, -1), (0, 1)], weights=np.arange(6, dtype=np.float32).reshape(2, 3))
    assert depth.shape == (2, 20, 30, 3)
    out = g.output(mixed, layout="nhwc", region=(3, 5, 10, 12))
    assert out == mixed and (out.shape, out.origin, out.output_index, out.layout) == \
        ((2, 10, 12, 3), (3, 5), 0, ps.ActLayout.NHWC)
    assert out.array_shape == (2, 10, 12, 3)
    g.output(near, layout="nchw")
    assert near.array_shape == (2, 1, 16, 26) and near.output_index == 1
    assert len(g) == 11 and [t.index for t in g.inputs] == [0] and [t.index for t in g.outputs] == [mixed.index, near.index]
    assert g["gray"] == gray and g[2] == box and g.tensor("img") == img and g.tensors[-1] == depth
    assert "output 0" in repr(mixed) and repr(g) == "<polysci.Graph 11 tensors, 1 inputs, 2 outputs>"
    assert {gray: 1}[g["gray"]] == 1  # tensors hash by graph and index


def test_pointwise_accepts_a_function_an_expr_or_a_list():
    g = ps.Graph()
    x = g.input("x", (1, 5, 6, 2))
    y = g.input("y", (1, 5, 6, 1))
    a = g.pointwise(lambda p, q: ps.select(p > q, p, q), x, y)
    b = g.pointwise(2 * ps.inp(0) - ps.inp(1), [x, y])
    c = g.pointwise(lambda p: 1.5, x)  # a constant, broadcast over x's domain
    d = g.pointwise(ps.inp(0), "x")    # tensors by name
    assert a.shape == b.shape == c.shape == d.shape == (1, 5, 6, 2)
    with pytest.raises(ps.ArgumentError, match="returned str"):
        g.pointwise(lambda p: "no", x)
    with pytest.raises(ps.ArgumentError, match="1..16 inputs"):
        g.pointwise(ps.inp(0))


def _status_message():
    from polysci import _lib
    return _lib.lib.ps_last_error_message().decode()


def _raises(cls, status, match, fn, *args, **kw):
    """fn raises cls with status; the message is the library's own (or the bindings')."""
    with pytest.raises(cls) as ei:
        fn(*args, **kw)
    e = ei.value
    assert e.status == status, (e.status, e)
    assert match in e.message, e.message
    assert str(e) == "%s: %s" % (e.status_name, e.message)
    return e


def test_builder_errors_carry_the_library_status_and_message():
    g = ps.Graph()
    x = g.input("x", (1, 8, 9, 3))
    g1 = g.channel_mix(x, [[1, 1, 1]], name="g1")
    n = len(g)
    INV, UNS, OVF = ps.Status.ERR_INVALID_ARG, ps.Status.ERR_UNSUPPORTED, ps.Status.ERR_OVERFLOW
    e = _raises(ps.ArgumentError, INV, 'a tensor named "x" exists already (tensor 0)', g.input, "x", (1, 2, 2, 1))
    assert e.status_name == "PS_ERR_INVALID_ARG" and isinstance(e, ValueError)
    assert e.message == _status_message()  # ps_last_error_message, read right after the call
    _raises(ps.ArgumentError, INV, "n, h, w, c must be >= 1", g.input, "y", (1, 0, 2, 1))
    _raises(ps.Error, OVF, "too large", g.input, "big", (1 << 20, 1 << 20, 1 << 20, 1))
    _raises(ps.ArgumentError, INV, "name must have 1..63 bytes", g.input, "n" * 64, (1, 2, 2, 1))
    _raises(ps.ArgumentError, INV, "has a control character, comma or quote", g.input, "a,b", (1, 2, 2, 1))
    _raises(ps.Error, UNS, "strides 9 x 9 unsupported (1..8)", g.stencil, x, [(0, 0)], stride=9)
    _raises(ps.ArgumentError, INV, "n_taps 1025 out of range", g.stencil, x, [(0, 0)] * 1025)
    _raises(ps.ArgumentError, INV, "no valid pixel (every tap inside): an input of 8 x 9 at (0, 0) read by taps spanning 9 x 1", g.stencil, x, [(-4, 0), (4, 0)], boundary="valid")
    _raises(ps.ArgumentError, INV, "the expression reads input 2 of 2", g.pointwise, ps.inp(2) + ps.inp(0), x, g1)
    y = g.input("y", (1, 8, 9, 2))
    n = len(g)
    _raises(ps.ArgumentError, INV, 'input 1 ("y") has 2 channels, another input 3', g.pointwise, ps.inp(0), x, y)
    far = g.stencil(g1, [(0, 30)], boundary="valid")  # columns -30..-22: defined left of the input
    assert far.origin == (0, -30) and far.shape == (1, 8, 9, 1)
    n = len(g)
    _raises(ps.ArgumentError, INV, "the inputs' domains do not intersect", g.pointwise, ps.inp(0) + ps.inp(1), g1, far)
    _raises(ps.Error, UNS, "boundary must be ZERO or CLAMP", g.resample, g1, "up2_nearest", boundary="valid")
    _raises(ps.ArgumentError, INV, "input 99 is not a tensor of this graph", g.channel_mix, 99, [[1.0]])
    _raises(ps.ArgumentError, INV, "k 0 out of range", g.channel_mix, x, np.zeros((0, 3)))
    assert len(g) == n  # every failed add left the graph as it was
    _raises(ps.ArgumentError, INV, '"x" is a graph input; an input cannot be an output', g.output, x)
    g.output(g1)
    _raises(ps.ArgumentError, INV, '"g1" is output 0 already', g.output, g1)
    _raises(ps.ArgumentError, INV, "region [0, 9) x [0, 9) is not inside the domain [0, 8) x [-30, -21)",
            g.output, far, region=(0, 0, 9, 9))
    assert far.output_index == -1 and len(g.outputs) == 1  # a bad region marks nothing
    _raises(ps.ArgumentError, INV, "region [2, 4) x [-31, -29)", g.output, far, region=(2, -31, 2, 2))
    g.output(far, region=(2, -29, 3, 4))
    assert (far.shape, far.origin) == ((1, 3, 4, 1), (2, -29))


def test_builder_argument_checks_in_python():
    """What the library cannot check (array lengths it reads blindly, Python
    types) is checked before the call, with the fix in the message."""
    g = ps.Graph()
    x = g.input("x", (1, 6, 7, 3))
    other = ps.Graph()
    o = other.input("o", (1, 6, 7, 3))
    n = len(g)
    INV = ps.Status.ERR_INVALID_ARG
    _raises(ps.ArgumentError, INV, "belongs to another graph", g.stencil, o, [(0, 0)])
    _raises(ps.ArgumentError, INV, "no tensor named 'nope'", g.resample, "nope", "up2_nearest")
    _raises(ps.ArgumentError, INV, "K x C with C = 3", g.channel_mix, x, [[1, 2]])
    _raises(ps.ArgumentError, INV, "must have 2 dimensions", g.channel_mix, x, [1, 2, 3])
    _raises(ps.ArgumentError, INV, "bias has 2 values for K = 1", g.channel_mix, x, [[1, 2, 3]], bias=[0, 0])
    _raises(ps.ArgumentError, INV, "(n_taps, C) = (2, 3)", g.stencil, x, [(0, 0), (0, 1)], weights=np.ones((2, 2)))
    _raises(ps.ArgumentError, INV, "weights has 3 values for 2 taps", g.stencil, x, [(0, 0), (0, 1)], weights=[1, 2, 3])
    _raises(ps.ArgumentError, INV, "weights given twice", g.stencil, x, [(0, 0, 1.0)], weights=[1.0])
    _raises(ps.ArgumentError, INV, "all be (dy, dx, w)", g.stencil, x, [(0, 0), (0, 1, 2.0)])
    _raises(ps.ArgumentError, INV, "at least one tap", g.stencil, x, [])
    _raises(ps.ArgumentError, INV, "tap dx = 4294967296 out of range", g.stencil, x, [(0, 1 << 32)])
    _raises(ps.ArgumentError, INV, "unknown boundary 'mirror' (one of clamp, ignore, valid, zero)", g.stencil, x, [(0, 0)],
            boundary="mirror")
    _raises(ps.ArgumentError, INV, "unknown reduce 'avg'", g.stencil, x, [(0, 0)], reduce="avg")
    _raises(ps.ArgumentError, INV, "unknown resampling 'up3'", g.resample, x, "up3")
    _raises(ps.ArgumentError, INV, "unknown layout 'hwcn'", g.input, "z", (1, 2, 2, 1), layout="hwcn")
    _raises(ps.ArgumentError, INV, "shape must be (N, H, W, C)", g.input, "z", (2, 2, 1))
    _raises(ps.ArgumentError, INV, "name must be a str", g.input, 5, (1, 2, 2, 1))
    _raises(ps.ArgumentError, INV, "NUL", g.input, "a\0b", (1, 2, 2, 1))
    _raises(ps.ArgumentError, INV, "region must be (y0, x0, h, w)", g.output, x, region=(1, 2))
    assert len(g) == n
    g.close()
    assert g.closed and repr(g) == "<polysci.Graph closed>"
    _raises(ps.ArgumentError, INV, "the graph is closed", g.input, "z", (1, 2, 2, 1))


# ----------------------------------------------------------------- the reference itself


def test_reference_matches_direct_numpy():
    """The reference evaluator against independent numpy formulations, so the
    engine tests compare with the right thing."""
    rng = np.random.default_rng(1)
    p = Pipeline()
    x = p.input("x", (1, 7, 9, 2))
    blur = p.stencil(x, [(dy, dx, 1 / 9) for dy in (-1, 0, 1) for dx in (-1, 0, 1)])
    zero = p.stencil(x, [(0, -2, 1.0), (1, 0, 2.0)], boundary="zero")
    down = p.resample(x, "down2_average")
    near = p.resample(x, "up2_nearest")
    bil = p.resample(x, "up2_bilinear", boundary="zero")
    for t in (blur, zero, down, near, bil):
        p.output(t)
    (a,) = p.inputs(rng)
    (r_blur, r_zero, r_down, r_near, r_bil), _ = p.reference(a)
    a64 = a.astype(np.float64)
    e = np.pad(a64, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="edge")
    want = sum(e[:, 1 + dy:8 + dy, 1 + dx:10 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) * float(np.float32(1 / 9))
    np.testing.assert_allclose(r_blur, want, rtol=1e-12)
    z = np.pad(a64, ((0, 0), (0, 1), (2, 0), (0, 0)))
    np.testing.assert_allclose(r_zero, z[:, 0:7, 0:9] + 2 * z[:, 1:8, 2:11], rtol=1e-12)
    e = np.pad(a64, ((0, 0), (0, 1), (0, 1), (0, 0)), mode="edge")  # odd sizes: the last row/column repeats
    np.testing.assert_allclose(r_down, e.reshape(1, 4, 2, 5, 2, 2).mean(axis=(2, 4)), rtol=1e-12)
    np.testing.assert_allclose(r_near, a64.repeat(2, axis=1).repeat(2, axis=2), rtol=1e-12)
    # bilinear: out row 2i = 3/4 in[i] + 1/4 in[i-1], row 2i+1 = 3/4 in[i] + 1/4 in[i+1] (0 outside)
    z = np.pad(a64, ((0, 0), (1, 1), (1, 1), (0, 0)))
    rows = np.empty((1, 14, 11, 2))
    rows[:, 0::2], rows[:, 1::2] = 0.75 * z[:, 1:8] + 0.25 * z[:, 0:7], 0.75 * z[:, 1:8] + 0.25 * z[:, 2:9]
    cols = np.empty((1, 14, 18, 2))
    cols[:, :, 0::2] = 0.75 * rows[:, :, 1:10] + 0.25 * rows[:, :, 0:9]
    cols[:, :, 1::2] = 0.75 * rows[:, :, 1:10] + 0.25 * rows[:, :, 2:11]
    np.testing.assert_allclose(r_bil, cols, rtol=1e-12)
    # valid domains and regions: a valid 3 x 3 max at origin (1, 1), stored from (2, 3)
    q = Pipeline()
    x = q.input("x", (1, 7, 9, 1), layout="nchw")
    m = q.stencil(x, [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], boundary="valid", reduce="max")
    q.output(m, layout="nchw", region=(2, 3, 3, 4))
    (a,) = q.inputs(rng)
    (got,), _ = q.reference(a)
    want = np.array([[a[0, 0, y - 1:y + 2, x - 1:x + 2].max() for x in range(3, 7)] for y in range(2, 5)])
    np.testing.assert_array_equal(got[0, 0], want)


# ----------------------------------------------------------------- plans (need the engine)


def _blur(layout="nhwc", shape=(1, 37, 23, 1)):
    p = Pipeline()
    x = p.input("in", shape, layout)
    bx = p.stencil(x, [(0, -1, 1 / 3), (0, 0, 1 / 3), (0, 1, 1 / 3)], name="bx")
    by = p.stencil(bx, [(-1, 0, 1 / 3), (0, 0, 1 / 3), (1, 0, 1 / 3)], name="by")
    p.output(by, layout)
    return p, 3


def _unsharp():
    """Gray from RGB, separable blur, sharpen, a mask on the input: fan-out,
    fan-in, broadcasting of a 1-channel tensor over 3 channels."""
    p = Pipeline()
    img = p.input("img", (1, 29, 41, 3), "nchw")
    gray = p.channel_mix(img, [[0.299, 0.587, 0.114]], name="gray")
    bx = p.stencil(gray, [(0, d, w) for d, w in zip(range(-2, 3), (1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16))])
    by = p.stencil(bx, [(d, 0, w) for d, w in zip(range(-2, 3), (1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16))])
    sharp = p.pointwise(lambda a, b: 2 * a - b, gray, by, name="sharp")
    # inputs are exact f32 in both evaluations, so the comparison cannot flip
    out = p.pointwise(lambda i, s, g: R.select(i > 0.5, i + (s - g), R.clamp(i * s, 0, 1)), img, sharp, gray)
    p.output(out, "nchw")
    p.output(sharp, "nhwc")
    return p, 5


def _pyramid():
    """One level of a Laplacian pyramid: blur, down2 by a strided stencil and
    by averaging, bilinear and nearest up2, differences."""
    p = Pipeline()
    x = p.input("x", (2, 27, 33, 3))
    k = [(1 / 16, -2), (4 / 16, -1), (6 / 16, 0), (4 / 16, 1), (1 / 16, 2)]
    bx = p.stencil(x, [(0, d, w) for w, d in k])
    g1 = p.stencil(bx, [(d, 0, w) for w, d in k], stride=2, name="g1")  # blur rows, keep every second pixel
    up = p.resample(g1, "up2_bilinear", name="up")
    lap = p.pointwise(lambda a, b: a - b, x, up, name="lap")
    avg = p.resample(x, "down2_average", boundary="zero")
    near = p.resample(avg, "up2_nearest")
    resid = p.pointwise(lambda a, b, c: 1.4 * a + R.maximum(b, c), lap, near, up)
    p.output(lap)
    p.output(resid, "nchw")
    p.output(g1)
    return p, 5


def _valid_domains():
    """Valid-region stages move the domain's corner off (0, 0); strided valid
    pooling; an output region at a nonzero corner."""
    p = Pipeline()
    x = p.input("x", (1, 31, 26, 2), "nchw")
    box = p.stencil(x, [(dy, dx, 1 / 9) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], boundary="valid")  # (1, 1)
    skew = p.stencil(box, [(0, 0, 0.5), (2, -3, 0.5)], boundary="valid")                  # rows +0..2, cols -3..0
    pool = p.stencil(skew, [(dy, dx) for dy in (0, 1, 2) for dx in (0, 1, 2)], stride=2, boundary="valid",
                     reduce="max")
    both = p.pointwise(lambda a, b: a - 0.5 * b, x, skew)
    p.output(both, "nhwc", region=(3, 6, 20, 15))
    p.output(pool, "nchw")
    p.output(box, "nhwc", region=(1, 1, 1, 1))
    return p, 9


def _broadcast_and_functions():
    """Pointwise over a 1-channel and a 4-channel tensor with every function;
    depthwise per-channel weights, zero boundary, min reduction, channel mix
    with bias."""
    p = Pipeline()
    x = p.input("x", (1, 19, 22, 4))
    m = p.input("m", (1, 19, 22, 1), "nchw")
    dw = p.stencil(x, [(-1, 0), (0, 0), (1, 1)], weights=np.array([[.5, .25, 1, 2], [1, 1, 1, 1], [.25, .5, 0, 1]]),
                   boundary="zero")
    mn = p.stencil(dw, [(0, -1), (0, 0), (0, 1)], reduce="min", boundary="zero")
    mix = p.channel_mix(mn, [[1, 0, -1, 0.5], [0.25, 0.25, 0.25, 0.25]], bias=[0.5, -1], name="mix")
    f = p.pointwise(lambda a, b, c: R.sqrt(a + 1) * R.exp(b) - R.log(c * c + 1) + R.floor(b * 4)
                    + R.minimum(a, b) / (abs(c) + 1) + (b <= 0.25) * 3 - (b != b) + R.clamp(-a, -0.5, 0.5),
                    x, m, dw)
    g = p.pointwise(lambda a, b: R.select(b >= 0.5, a, -a), mix, m)  # 2 channels x 1
    p.output(f)
    p.output(g, "nchw")
    return p, 6


def _tiny():
    """1 x 1 images, two of them, through every resampling."""
    p = Pipeline()
    x = p.input("x", (2, 1, 1, 2))
    b = p.stencil(x, [(dy, dx, 0.2) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if abs(dy) + abs(dx) < 2])
    up = p.resample(b, "up2_bilinear")
    near = p.resample(up, "up2_nearest", boundary="zero")
    down = p.resample(near, "down2_average")
    p.output(down)
    p.output(up, "nchw")
    return p, 5


PIPELINES = {"blur": _blur, "unsharp": _unsharp, "pyramid": _pyramid, "valid_domains": _valid_domains,
             "broadcast": _broadcast_and_functions, "tiny": _tiny}


def _pairs(p):
    """A fixed grouping: each stage joins the group of its first producer
    while that group has one stage, else starts a group (producer-consumer
    pairs, and stages alone)."""
    group, size = [], {}
    for t, prods in enumerate(p.producers):
        first = prods[0] if prods else None
        if first is not None and p.producers[first] and size[group[first]] == 1:
            group.append(group[first])
        else:
            group.append(t)
        size[group[t]] = size.get(group[t], 0) + 1
    return group


CONFIGS = {
    "dp": dict(fusion="dp"),
    "greedy": dict(fusion="greedy"),
    "none": dict(fusion="none"),
    "fixed": dict(fusion="fixed", group_of=_pairs),
    "dp_tile": dict(fusion="dp", tile=(8, 5)),
    "greedy_tile1": dict(fusion="greedy", tile=1),
    "dp_no_inline": dict(fusion="dp", no_inline=True),
    "dp_interpreted": dict(fusion="dp", no_codegen=True),
}


def _plan(p, config, **kw):
    opts = dict(CONFIGS[config])
    if callable(opts.get("group_of")):
        opts["group_of"] = opts["group_of"](p)
    opts.update(kw)
    return p.graph.plan(threads=2, **opts)


def _check_plan(p, taps, plan, arrays, what):
    refs, scale = p.reference(*arrays)
    outs = [np.full(s, np.nan, np.float32) for s in plan.output_shapes]  # NaN: unwritten elements show
    got = plan(*arrays, out=outs if len(outs) > 1 else outs[0])
    got = got if isinstance(got, tuple) else (got,)
    assert all(g is o for g, o in zip(got, outs))
    for i, (g, r) in enumerate(zip(got, refs)):
        assert_close(g, r, scale, p.stages(), taps, "%s output %d" % (what, i))


@engine
@pytest.mark.parametrize("name,config", [(n, c) for n in sorted(PIPELINES) for c in sorted(CONFIGS)])
def test_plans_match_the_reference(name, config):
    p, taps = PIPELINES[name]()
    plan = _plan(p, config)
    rng = np.random.default_rng(abs(hash((name, config))) % (1 << 32))
    arrays = p.inputs(rng)
    _check_plan(p, taps, plan, arrays, "%s/%s" % (name, config))
    # again with other data (the workspace is reused) and allocated outputs
    arrays = p.inputs(rng, -1.0, 2.0)
    refs, scale = p.reference(*arrays)
    got = plan(*arrays)
    got = got if isinstance(got, tuple) else (got,)
    for i, (g, r) in enumerate(zip(got, refs)):
        assert g.dtype == np.float32 and g.flags.c_contiguous
        assert_close(g, r, scale, p.stages(), taps, "%s/%s output %d, 2nd call" % (name, config, i))


@engine
@pytest.mark.parametrize("kind", ["up2_nearest", "up2_bilinear", "down2_average"])
def test_a_lone_resampling_stage_at_odd_sizes(kind):
    """One resampling stage, alone, under the tile-size model and forced tiles."""
    for shape in ((1, 9, 9, 1), (2, 27, 33, 3), (1, 64, 64, 3), (1, 1, 1, 1)):
        for config in ("dp", "none", "greedy_tile1"):
            p = Pipeline()
            p.output(p.resample(p.input("x", shape), kind))
            _check_plan(p, 4, _plan(p, config), p.inputs(np.random.default_rng(4)), "%s %s/%s" % (kind, shape, config))


@engine
def test_blur_in_both_layouts_and_by_name():
    for layout in ("nhwc", "nchw"):
        p, taps = _blur(layout, (2, 13, 17, 3))
        plan = p.graph.plan(fusion="dp")
        (a,) = p.inputs(np.random.default_rng(5))
        assert plan.input_shapes == [a.shape] and plan.output_shapes == [a.shape]
        (ref,), scale = p.reference(a)
        assert_close(plan(a), ref, scale, 2, taps, layout)
        assert_close(plan(**{"in": a}), ref, scale, 2, taps, layout + " by name")


@engine
def test_plan_introspection_and_lifetime(ctx):
    p, _ = _unsharp()
    plan = ps.GraphPlan(ctx, p.graph, fusion="greedy", threads=1)
    text = plan.describe()
    assert isinstance(text, str) and text
    s = plan.stats
    assert isinstance(s, ps.GraphPlanStats)
    assert 1 <= s.n_groups <= s.n_stages <= len(p.graph) - 1 and s.plan_ms >= 0 and s.redundant_fraction >= 0
    assert s.workspace_bytes == plan.workspace_size
    assert "GraphPlan" in repr(plan) and plan.context is ctx
    # the plan copies what it needs: the graph may grow or close
    arrays = p.inputs(np.random.default_rng(3))
    before = plan(*arrays)
    p.graph.stencil(p.graph["gray"], [(0, 0)])
    p.graph.close()
    after = plan(*arrays)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)
    with pytest.raises(ps.ArgumentError, match="while 1 of its plans are open"):
        c = ps.Context(num_threads=1)
        q = Pipeline()
        q.output(q.stencil(q.input("x", (1, 4, 4, 1)), [(0, 0)]))
        keep = q.graph.plan(ctx=c)
        c.close()
    keep.close()
    c.close()
    plan.close()
    assert plan.closed and repr(plan) == "<polysci.GraphPlan closed>"
    with pytest.raises(ps.ArgumentError, match="the plan is closed"):
        plan(*arrays)


@engine
def test_plan_option_errors():
    p, _ = _blur()
    g = p.graph
    INV = ps.Status.ERR_INVALID_ARG
    _raises(ps.ArgumentError, INV, "unknown fusion 'fast'", g.plan, fusion="fast")
    _raises(ps.ArgumentError, INV, 'group_of is for fusion="fixed"', g.plan, group_of=[0, 0, 0])
    _raises(ps.ArgumentError, INV, "group_of has 2 entries; the graph has 3 tensors", g.plan, fusion="fixed",
            group_of=[0, 0])
    _raises(ps.ArgumentError, INV, "ctx must be a polysci.Context", ps.GraphPlan, "ctx", g)
    # a mapping: the stages it leaves out are groups of their own
    plan = g.plan(fusion="fixed", group_of={"bx": 0, g["by"]: 0})
    assert plan.stats.n_groups == 1
    plan = g.plan(fusion="fixed", group_of={1: 7})
    assert plan.stats.n_groups == 2
    empty = ps.Graph()
    empty.input("x", (1, 2, 2, 1))
    with pytest.raises(ps.Error):
        empty.plan()  # no outputs: the library refuses, with its message


@engine
def test_execute_checks_every_array():
    p, _ = _pyramid()
    plan = p.graph.plan(fusion="dp", threads=1)
    (x,) = p.inputs(np.random.default_rng(2))
    INV = ps.Status.ERR_INVALID_ARG
    _raises(ps.ArgumentError, INV, "dtype float32 (got float64)", plan, x.astype(np.float64))
    _raises(ps.ArgumentError, INV, "input 0 ('x', NHWC) must have shape (2, 27, 33, 3) (got (2, 3, 27, 33), the NCHW "
            "shape); convert with np.ascontiguousarray(a.transpose(0, 2, 3, 1))", plan,
            np.ascontiguousarray(x.transpose(0, 3, 1, 2)))  # NCHW data for an NHWC input
    _raises(ps.ArgumentError, INV, "must have shape (2, 27, 33, 3) (got (2, 27, 33, 2))", plan, x[..., :2].copy())
    _raises(ps.ArgumentError, INV, "C-contiguous", plan, np.asfortranarray(x))
    _raises(ps.ArgumentError, INV, "numpy.ndarray", plan, x.tolist())
    _raises(ps.ArgumentError, INV, "the graph has 1 input ('x'); got 2 arrays", plan, x, x)
    _raises(ps.ArgumentError, INV, "no graph input named 'y'", plan, y=x)
    _raises(ps.ArgumentError, INV, "by position or by name", plan, x, x=x)
    outs = plan.new_outputs()
    assert [o.shape for o in outs] == plan.output_shapes == [(2, 27, 33, 3), (2, 3, 27, 33), (2, 14, 17, 3)]
    _raises(ps.ArgumentError, INV, "a list of 3 arrays", plan, x, out=outs[0])
    _raises(ps.ArgumentError, INV, "out[1] ('t7', NCHW) must have shape (2, 3, 27, 33) (got (2, 27, 33, 3), the NHWC "
            "shape); allocate it in NCHW (GraphPlan.new_outputs)", plan, x, out=[outs[0], outs[0], outs[2]])
    ro = [o.copy() for o in outs]
    ro[2].flags.writeable = False
    _raises(ps.ArgumentError, INV, "read-only", plan, x, out=ro)
    _raises(ps.ArgumentError, INV, "out[0] overlaps input 0", plan, x, out=[x, outs[1], outs[2]])
    big = np.empty(2 * outs[0].size, np.float32)
    _raises(ps.ArgumentError, INV, "out[2] overlaps out[0]", plan, x,
            out=[big[:outs[0].size].reshape(outs[0].shape), outs[1],
                 big[outs[0].size - 1:outs[0].size - 1 + outs[2].size].reshape(outs[2].shape)])


@engine
def test_one_plan_from_two_threads():
    """ps_graph_execute is thread-safe with distinct outputs; each Python
    thread gets its own workspace."""
    p, taps = _unsharp()
    plan = p.graph.plan(fusion="dp", threads=2)
    rng = np.random.default_rng(9)
    work = [[p.inputs(rng) for _ in range(4)] for _ in range(2)]
    results = [[None] * 4 for _ in range(2)]
    errors = []
    start = threading.Barrier(2)

    def run(k):
        try:
            start.wait()
            for i, arrays in enumerate(work[k]):
                results[k][i] = plan(*arrays)
        except Exception as e:  # reported below, on the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        for i, arrays in enumerate(work[k]):
            refs, scale = p.reference(*arrays)
            for j, (g, r) in enumerate(zip(results[k][i], refs)):
                assert_close(g, r, scale, p.stages(), taps, "thread %d call %d output %d" % (k, i, j))
            # and bit for bit what the same plan gives alone
            alone = plan(*arrays)
            for g, a in zip(results[k][i], alone):
                np.testing.assert_array_equal(g, a)


def test_planning_without_the_engine_says_so():
    if ps.has_engine():
        pytest.skip("the library has the engine")
    p, _ = _blur()
    e = _raises(ps.Error, ps.Status.ERR_UNSUPPORTED, "has no ps_graph", p.graph.plan)
    assert "libpolysci" in e.message
