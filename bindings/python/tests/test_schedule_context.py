"""Schedules as text/objects, plan description, the plan cache and wisdom."""

import pytest


def test_schedule_text_round_trip(ps):
    for text, kind in [("64x28x64/4 : n* k:4* oh k ow c", "conv"),
                       ("64x24x64/8 : m:4* n m k", "gemm"),
                       ("16x7x16/2 : n* oh* k ow c", "conv")]:
        s = ps.Schedule.parse(text, kind)
        assert str(s) == text
        assert ps.Schedule.parse(str(s), kind) == s
        assert s.copy() == s and s.copy() is not s
        assert eval(repr(s), {"polysci": ps}) == s


def test_schedule_built_loop_by_loop_equals_parsed(ps):
    s = ps.Schedule(64, 28, 64, 4, kind="conv")
    s.add_loop("n", parallel=True).add_loop("k", 4, parallel=True).add_loop("oh").add_loop("k").add_loop(ps.Dim.OW).add_loop("c")
    assert s == ps.Schedule.parse("64x28x64/4 : n* k:4* oh k ow c", "conv")
    g = ps.Schedule(64, 24, 64, 8, kind="gemm").add_loop("m", 4, True).add_loop("n").add_loop("m").add_loop("k")
    assert str(g) == "64x24x64/8 : m:4* n m k"
    # Text of the same loops in the other kind's names.
    assert g.format("conv") == "64x24x64/8 : k:4* ow k c"


def test_default_schedule_and_check(ps, ctx):
    d = ps.ConvDesc(N=2, C=32, K=64, H=14, W=14, R=3, S=3, padding=1)
    s = ps.Schedule.default(d)
    assert s.kind == ps.OpKind.CONV_FWD
    s.check(d)  # does not raise
    text = str(s)
    assert ps.Schedule.parse(text, "conv") == s
    names = [t.split(":")[0].rstrip("*") for t in text.split(" : ")[1].split()]
    assert names[-1] == "c" and "n" in names
    plan = ctx.plan(d, schedule=s)
    assert plan.schedule == s
    g = ps.GemmDesc(100, 80, 60)
    gs = ps.Schedule.default(g)
    assert gs.kind == ps.OpKind.GEMM and str(gs).split(" : ")[1].split()[-1].startswith("k")
    with pytest.raises(ps.ScheduleError):
        gs.check(d)  # gemm schedule for a conv descriptor


def test_describe(ps, ctx):
    d = ps.ConvDesc(N=1, C=16, K=32, H=8, W=8, R=3, S=3, padding=1)
    plan = ctx.plan(d)
    text = plan.describe()
    assert text.startswith("conv_fwd f32 nhwc N=1 C=16 K=32")
    assert "schedule: %s" % plan.schedule in text
    assert "packed weights: %d bytes" % plan.packed_weights_size in text
    assert "workspace: %d bytes" % plan.workspace_size in text
    assert plan.flops == d.flops == 2.0 * 32 * 16 * 8 * 8 * 9
    assert "polysci.Plan" in repr(plan)


def test_plan_cache_and_wisdom(ps, tmp_path):
    c = ps.Context(num_threads=1)
    d1 = ps.ConvDesc(N=1, C=8, K=8, H=6, W=6, R=3, S=3, padding=1)
    d2 = ps.GemmDesc(16, 16, 16)
    assert c.cached_plans == 0
    c.plan(d1)
    c.plan(d2)
    c.plan(d1, cache=False)
    assert c.cached_plans == 2
    path = tmp_path / "wisdom.txt"
    c.export_wisdom(path)
    data = path.read_bytes()
    fresh = ps.Context(num_threads=1)
    assert fresh.import_wisdom(str(path)) == 2
    assert fresh.cached_plans == 2
    assert str(fresh.plan(d1).schedule) == str(c.plan(d1).schedule)
    fresh.forget_plans()
    assert fresh.cached_plans == 0
    assert fresh.import_wisdom_bytes(data) == 2
    # Corrupt wisdom is refused as a whole; the context keeps what it had.
    with pytest.raises(ps.ParseError) as ei:
        fresh.import_wisdom_bytes(data[:-3] + b"xyz")
    assert ei.value.status == ps.Status.ERR_PARSE
    assert fresh.cached_plans == 2
    with pytest.raises(ps.Error) as ei:
        fresh.import_wisdom(tmp_path / "missing")
    assert ei.value.status == ps.Status.ERR_IO


def test_cost_query(ps, ctx):
    d = ps.ConvDesc(N=1, C=32, K=64, H=14, W=14, R=3, S=3, padding=1)
    if not ps.has_symbol("ps_cost_query"):
        with pytest.raises(ps.Error) as ei:
            ctx.cost_query(d)
        assert ei.value.status == ps.Status.ERR_UNSUPPORTED
        return
    rep = ctx.cost_query(d, ranker="cost")
    assert len(rep) >= 1 and rep.best is rep[0]
    assert [v.rank for v in rep] == list(range(1, len(rep) + 1))
    costs = [v.cost for v in rep]
    assert costs == sorted(costs)  # rank order: lowest cost first
    # The ctypes mirror of ps_variant_cost against the library's own JSON.
    js = rep.to_dict()
    assert js["n_variants"] == len(rep) == len(js["variants"])
    for v, j in zip(rep, js["variants"]):
        assert v.rank == j["rank"] and v.schedule == j["schedule"]
        assert v.cost == pytest.approx(j["cost"], rel=1e-5, abs=1e-300)
        assert set(v.ws_bytes) == {"L1", "L2", "L3", "mem"}
        for lvl in ("L1", "L2", "L3", "mem"):
            assert v.ws_bytes[lvl] == pytest.approx(j["ws_bytes"][lvl], abs=0.5)
            assert v.ws_bytes[lvl] >= 0
        # The shape statistics (the tail of the struct: a layout slip shows here).
        assert list(v.kernel) == j["kernel"]
        assert v.kernel == tuple(int(x) for x in v.schedule.split(" ", 1)[0].replace("/", "x").split("x"))
        assert v.parallel_iterations == j["parallel_iterations"] >= 1
        assert v.parallel_efficiency == j["parallel_efficiency"] and 0 < v.parallel_efficiency <= 1
        assert v.reduction_steps == j["reduction_steps"] >= 1
    # Every ranked schedule is valid for the descriptor; the best one runs.
    for i in range(len(rep)):
        rep.schedule(i).check(d)
    plan = ctx.plan(d, schedule=rep.schedule(0))
    assert str(plan.schedule) == rep.best.schedule
    with pytest.raises(ps.Error) as ei:
        ctx.cost_query(d, ranker="none")
    assert ei.value.status == ps.Status.ERR_UNSUPPORTED
    g = ctx.cost_query(ps.GemmDesc(256, 256, 256), ranker="cost")
    assert len(g) >= 1 and ps.Schedule.parse(g.best.schedule, "gemm").check(ps.GemmDesc(256, 256, 256))
