"""The PolyScientist-DNN ranker (ranker="dnn") through the bindings: plans it
chooses compute the right result, and cost queries report the tournament."""

import numpy as np
import pytest

from reference import assert_close, conv_ref_nchw, gemm_ref


def _needs_cost_query(ps):
    if not ps.has_symbol("ps_cost_query"):
        pytest.skip("the loaded libpolysci has no ps_cost_query")


def test_dnn_conv_plan(ps, ctx):
    _needs_cost_query(ps)
    d = ps.ConvDesc(N=2, C=24, K=40, H=12, W=11, R=3, S=3, padding=1, layout="nhwc", bias=True, relu=True)
    plan = ctx.plan(d, ranker="dnn", cache=False)
    # Static ranking: the plan runs the tournament's winner.
    assert str(plan.schedule) == ctx.cost_query(d, ranker="dnn").best.schedule
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 24, 12, 11)).astype(np.float32)
    w = rng.standard_normal((40, 24, 3, 3)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    out = np.full(d.dst_shape, np.nan, dtype=np.float32)
    got = plan.execute(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), plan.pack_weights(w), bias=b, out=out)
    ref, mag = conv_ref_nchw(x, w, (1, 1), (1, 1, 1, 1), (1, 1), bias=b, relu=True)
    assert_close(got.transpose(0, 3, 1, 2), ref, mag, 24 * 9 + 1, what="dnn conv")


def test_dnn_gemm_plan_top_k(ps, ctx):
    d = ps.GemmDesc(96, 80, 130, order="row")
    plan = ctx.plan(d, ranker="dnn", top_k=3, cache=False)  # timing applies to the tournament's order
    rng = np.random.default_rng(6)
    a = rng.standard_normal((96, 130)).astype(np.float32)
    b = rng.standard_normal((130, 80)).astype(np.float32)
    c = np.full((96, 80), np.nan, dtype=np.float32)
    got = plan.gemm(a, b, c)
    ref, mag = gemm_ref(a, b, 1.0, 0.0)
    assert_close(got, ref, mag, 130 + 2, what="dnn gemm")


def test_dnn_cost_query(ps, ctx):
    _needs_cost_query(ps)
    d = ps.ConvDesc(N=1, C=32, K=64, H=14, W=14, R=3, S=3, padding=1)
    rep = ctx.cost_query(d, ranker="dnn")
    again = ctx.cost_query(d, ranker="dnn")
    eq1 = ctx.cost_query(d, ranker="cost")
    n = len(rep)
    assert n == len(eq1) and n >= 2
    assert [v.rank for v in rep] == list(range(1, n + 1))
    # Deterministic: the same order and losses twice.
    assert [(v.schedule, v.cost) for v in rep] == [(v.schedule, v.cost) for v in again]
    # Every variant once, with Eq. 1's working sets; cost = tournament losses.
    by_schedule = {v.schedule: v for v in eq1}
    assert sorted(v.schedule for v in rep) == sorted(by_schedule)
    for v in rep:
        assert v.ws_bytes == by_schedule[v.schedule].ws_bytes
        assert v.cost == int(v.cost) and 0 <= v.cost <= 2 * (n - 1)
    js = rep.to_dict()
    assert js["n_variants"] == n and js["variants"][0]["schedule"] == rep.best.schedule
    # Every ranked schedule is valid for the descriptor.
    for i in range(n):
        rep.schedule(i).check(d)


def test_dnn_ranker_name(ps, ctx):
    d = ps.GemmDesc(32, 32, 32)
    assert str(ctx.plan(d, ranker=ps.Ranker.DNN, cache=False).schedule) == \
        str(ctx.plan(d, ranker="dnn", cache=False).schedule)
