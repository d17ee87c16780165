"""Convolutions through the bindings against the float64 numpy reference."""

import threading

import numpy as np
import pytest

from reference import assert_close, conv_ref_nchw


def _naive_conv(x, w, stride, pad, dil):
    # Direct definition, for checking the einsum reference itself on a tiny case.
    N, C, H, W = x.shape
    K, _, R, S = w.shape
    t, b, l, r = pad
    OH = (H + t + b - dil[0] * (R - 1) - 1) // stride[0] + 1
    OW = (W + l + r - dil[1] * (S - 1) - 1) // stride[1] + 1
    out = np.zeros((N, K, OH, OW))
    for n in range(N):
        for k in range(K):
            for oh in range(OH):
                for ow in range(OW):
                    acc = 0.0
                    for c in range(C):
                        for ri in range(R):
                            for si in range(S):
                                ih = oh * stride[0] - t + ri * dil[0]
                                iw = ow * stride[1] - l + si * dil[1]
                                if 0 <= ih < H and 0 <= iw < W:
                                    acc += float(x[n, c, ih, iw]) * float(w[k, c, ri, si])
                    out[n, k, oh, ow] = acc
    return out


def test_reference_matches_definition():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((4, 3, 3, 2))
    for stride, pad, dil in [((1, 1), (1, 1, 1, 0), (1, 1)), ((2, 1), (0, 2, 1, 1), (2, 1))]:
        got, _ = conv_ref_nchw(x, w, stride, pad, dil)
        np.testing.assert_allclose(got, _naive_conv(x, w, stride, pad, dil), rtol=1e-12, atol=1e-12)


def to_layout(x_nchw, layout):
    return np.ascontiguousarray(x_nchw if layout == "nchw" else x_nchw.transpose(0, 2, 3, 1))


def from_layout(y, layout):
    return y if layout == "nchw" else y.transpose(0, 3, 1, 2)


def weights_in(w_kcrs, wl):
    perm = {"kcrs": (0, 1, 2, 3), "krsc": (0, 2, 3, 1), "rsck": (2, 3, 1, 0)}[wl]
    return np.ascontiguousarray(w_kcrs.transpose(perm))


def run_conv(ps, ctx, shape, layout="nhwc", wl="kcrs", bias=False, relu=False, schedule=None, seed=0):
    N, C, K, H, W, R, S, stride, pad, dil = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((K, C, R, S)).astype(np.float32)
    b = rng.standard_normal(K).astype(np.float32) if bias else None
    d = ps.ConvDesc(N=N, C=C, K=K, H=H, W=W, R=R, S=S, stride=stride, padding=pad, dilation=dil,
                    layout=layout, weight_layout=wl, bias=bias, relu=relu)
    plan = ctx.plan(d, schedule=schedule)
    src = to_layout(x, layout)
    src_copy = src.copy()
    pw = plan.pack_weights(weights_in(w, wl))
    out = np.full(d.dst_shape, np.nan, dtype=np.float32)  # must be fully overwritten
    got = plan.execute(src, pw, bias=b, out=out)
    assert got is out
    np.testing.assert_array_equal(src, src_copy)  # src untouched
    p4 = pad if len(pad) == 4 else (pad[0], pad[0], pad[1], pad[1])
    ref, mag = conv_ref_nchw(x, w, stride, p4, dil, bias=b, relu=relu)
    err = assert_close(from_layout(got, layout), ref, mag, C * R * S + (1 if bias else 0), what=str(d))
    return plan, d, err


# N, C, K, H, W, R, S, stride, padding, dilation
SHAPES = [
    (1, 3, 8, 9, 11, 3, 3, (1, 1), (1, 1), (1, 1)),
    (2, 5, 17, 13, 12, 3, 3, (2, 2), (1, 1), (1, 1)),         # stride 2 + padding
    (1, 16, 24, 10, 10, 1, 1, (2, 2), (0, 0), (1, 1)),        # 1x1 stride 2 (ResNet downsampling)
    (3, 7, 9, 8, 9, 3, 2, (1, 2), (0, 2, 1, 0), (1, 1)),      # asymmetric padding / stride
    (1, 6, 10, 12, 12, 3, 3, (1, 1), (2, 2), (2, 2)),         # dilation
    (2, 3, 16, 23, 23, 7, 7, (2, 2), (3, 3), (1, 1)),         # ResNet stem, shrunk
    (1, 64, 64, 14, 14, 3, 3, (1, 1), (1, 1), (1, 1)),        # blocked channels
    (1, 70, 33, 7, 9, 1, 1, (1, 1), (0, 0), (1, 1)),          # channel remainders
]


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "N%dC%dK%dH%dW%dR%dS%d_s%dx%d" % (s[:7] + s[7]))
def test_conv_layouts(ps, ctx, shape, layout):
    run_conv(ps, ctx, shape, layout=layout)


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("bias,relu", [(True, False), (False, True), (True, True)])
def test_conv_bias_relu(ps, ctx, layout, bias, relu):
    plan, d, _ = run_conv(ps, ctx, SHAPES[1], layout=layout, bias=bias, relu=relu, seed=3)
    assert d.bias == bias and d.relu == relu
    assert ("+bias" in plan.describe()) == bias and ("+relu" in plan.describe()) == relu


@pytest.mark.parametrize("wl", ["kcrs", "krsc", "rsck", "oihw", "hwio"])
def test_conv_weight_layouts(ps, ctx, wl):
    canonical = {"oihw": "kcrs", "hwio": "rsck"}.get(wl, wl)
    plan, d, _ = run_conv(ps, ctx, SHAPES[3], wl=canonical, seed=5)
    assert ps.ConvDesc(1, 1, 1, 1, 1, 1, 1, weight_layout=wl).weight_layout.name.lower() == canonical


def test_conv_explicit_schedules(ps, ctx):
    shape = (2, 32, 48, 10, 12, 3, 3, (1, 1), (1, 1), (1, 1))
    d = ps.ConvDesc(N=2, C=32, K=48, H=10, W=12, R=3, S=3, padding=1)
    default = ps.Schedule.default(d)
    texts = [
        str(default),
        "16x12x16/2 : n* k:3* oh k ow c",       # k tiled, tile then point loop
        "48x4x32/1 : oh* n ow c",              # k extent 1: may be left out
        "8x6x8/4 : k:6* n oh ow k c",
    ]
    for text in texts:
        plan, _, _ = run_conv(ps, ctx, shape, schedule=text, seed=7)
        assert str(plan.schedule) == str(ps.Schedule.parse(text, "conv"))
    # A Schedule object works too, and the plan copied it.
    s = ps.Schedule.parse(texts[1], d)
    plan, _, _ = run_conv(ps, ctx, shape, schedule=s, seed=7)
    s.close()
    assert str(plan.schedule) == str(ps.Schedule.parse(texts[1], "conv"))


def test_conv_workspace_and_reuse(ps, ctx):
    d = ps.ConvDesc(N=2, C=8, K=12, H=9, W=9, R=3, S=3, padding=1, layout="nchw")
    plan = ctx.plan(d)
    assert plan.workspace_size > 0  # NCHW converts through the workspace
    ws = plan.new_workspace()
    assert ws.nbytes == plan.workspace_size and ws.ptr % 64 == 0
    rng = np.random.default_rng(11)
    w = rng.standard_normal(d.weight_shape).astype(np.float32)
    pw = plan.pack_weights(w)
    out = np.empty(d.dst_shape, np.float32)
    for i in range(3):
        x = rng.standard_normal(d.src_shape).astype(np.float32)
        plan.execute(x, pw, out=out, workspace=ws)
        ref, mag = conv_ref_nchw(x, w, pad=(1, 1, 1, 1))
        assert_close(out, ref, mag, 8 * 9, what="run %d" % i)
    # A plain numpy byte buffer is accepted as workspace; a short one is not.
    plan.execute(x, pw, out=out, workspace=np.empty(plan.workspace_size, np.uint8))
    with pytest.raises(ps.ArgumentError, match="workspace"):
        plan.execute(x, pw, out=out, workspace=np.empty(plan.workspace_size - 1, np.uint8))


def test_packed_weights_owned_and_aligned(ps, ctx):
    d = ps.ConvDesc(N=1, C=10, K=20, H=6, W=6, R=3, S=3)
    plan = ctx.plan(d)
    w = np.random.default_rng(2).standard_normal(d.weight_shape).astype(np.float32)
    pw = plan.pack_weights(w)
    assert pw.nbytes == plan.packed_weights_size > w.nbytes
    assert pw.ptr % ps.ALIGNMENT == 0
    x = np.random.default_rng(3).standard_normal(d.src_shape).astype(np.float32)
    y1 = plan.execute(x, pw)
    # The packed copy is independent of the user's array ...
    w[:] = 0
    y2 = plan.execute(x, pw)
    np.testing.assert_array_equal(y1, y2)
    # ... and survives its plan: another plan of the same shape accepts it.
    plan.close()
    plan2 = ctx.plan(d)
    np.testing.assert_array_equal(plan2.execute(x, pw), y1)


def test_concurrent_execution(ps, ctx):
    """One plan from several Python threads, separate outputs (ctypes drops the GIL)."""
    d = ps.ConvDesc(N=1, C=16, K=16, H=12, W=12, R=3, S=3, padding=1)
    plan = ctx.plan(d, num_threads=1)
    rng = np.random.default_rng(4)
    w = rng.standard_normal(d.weight_shape).astype(np.float32)
    pw = plan.pack_weights(w)
    xs = [rng.standard_normal(d.src_shape).astype(np.float32) for _ in range(4)]
    outs = [None] * 4
    errors = []

    def work(i):
        try:
            for _ in range(5):
                outs[i] = plan.execute(xs[i], pw, workspace=plan.new_workspace())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        ref, mag = conv_ref_nchw(xs[i].transpose(0, 3, 1, 2), w, pad=(1, 1, 1, 1))
        assert_close(outs[i].transpose(0, 3, 1, 2), ref, mag, 16 * 9)


def test_desc_properties(ps):
    d = ps.ConvDesc(N=2, C=3, K=4, H=10, W=9, R=3, S=2, stride=(2, 1), padding=(1, 0, 1, 1),
                    dilation=(1, 2), layout="nchw", weight_layout="rsck", bias=True)
    assert d.output_size() == ((10 + 1 + 0 - 3) // 2 + 1, (9 + 2 - 2 - 1) // 1 + 1)
    assert d.src_shape == (2, 3, 10, 9)
    assert d.dst_shape == (2, 4) + d.output_size()
    assert d.weight_shape == (3, 2, 3, 4)
    assert d.padding == (1, 0, 1, 1) and d.stride == (2, 1) and d.dilation == (1, 2)
    oh, ow = d.output_size()
    assert d.flops == 2.0 * 2 * 4 * 3 * oh * ow * 3 * 2
    assert d.replace(layout="nhwc").src_shape == (2, 10, 9, 3)
    assert d == ps.ConvDesc(**d._kwargs()) and d != d.replace(bias=False)
    assert eval(repr(d), {"polysci": ps}) == d
