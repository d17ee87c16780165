"""The ctypes mirrors of the C structs against the library itself."""

import ctypes

import pytest


def test_sizes_match_what_the_library_reports(ps):
    from polysci import _lib
    for init, cls in [(_lib.lib.ps_desc_init_conv, _lib.DescC), (_lib.lib.ps_desc_init_gemm, _lib.DescC),
                      (_lib.lib.ps_context_options_init, _lib.ContextOptionsC),
                      (_lib.lib.ps_plan_options_init, _lib.PlanOptionsC),
                      (_lib.lib.ps_exec_args_init, _lib.ExecArgsC)]:
        assert _lib._reported_size(init) == ctypes.sizeof(cls), cls.__name__
    if ctypes.sizeof(ctypes.c_void_p) == 8:
        # LP64: size_t + enum (+4 padding) + the 512-byte union.
        assert ctypes.sizeof(_lib.DescC) == 528
        assert _lib.DescC.u.offset == 16


def _status_and_message(st):
    from polysci import _lib
    return st, _lib.lib.ps_last_error_message().decode()


def test_desc_struct_size_is_validated(ps):
    """The library rejects any struct_size but its own sizeof(ps_desc), and says
    which it expected: that value must be ctypes.sizeof of the mirror."""
    from polysci import _lib
    d = ps.ConvDesc(N=1, C=2, K=3, H=4, W=4, R=3, S=3)
    raw = _lib.DescC.from_buffer_copy(d.c_desc)
    size = ctypes.sizeof(_lib.DescC)
    assert _lib.lib.ps_desc_validate(ctypes.byref(raw)) == 0
    for wrong in (size - 8, size + 8, 0, 512):
        raw.struct_size = wrong
        st, msg = _status_and_message(_lib.lib.ps_desc_validate(ctypes.byref(raw)))
        assert st == ps.Status.ERR_INVALID_ARG
        assert "expected %d" % size in msg, msg
    raw.struct_size = size
    assert _lib.lib.ps_desc_validate(ctypes.byref(raw)) == 0


def test_options_and_args_struct_size_are_validated(ps, ctx):
    from polysci import _lib
    lib = _lib.lib
    # ps_context_options
    o = _lib.ContextOptionsC()
    lib.ps_context_options_init(ctypes.byref(o))
    o.struct_size += 8
    h = ctypes.c_void_p()
    st, msg = _status_and_message(lib.ps_context_create(ctypes.byref(o), ctypes.byref(h)))
    assert st == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(o) in msg
    # ps_plan_options
    d = ps.ConvDesc(N=1, C=2, K=3, H=4, W=4, R=3, S=3)
    po = _lib.PlanOptionsC()
    lib.ps_plan_options_init(ctypes.byref(po))
    po.struct_size -= 8
    st, msg = _status_and_message(lib.ps_plan_create(ctx.handle, ctypes.byref(d.c_desc), ctypes.byref(po), ctypes.byref(h)))
    assert st == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(po) in msg
    assert not h.value
    # ps_exec_args
    plan = ctx.plan(d)
    a = _lib.ExecArgsC()
    lib.ps_exec_args_init(ctypes.byref(a))
    a.struct_size += 8
    st, msg = _status_and_message(lib.ps_plan_execute(plan.handle, ctypes.byref(a)))
    assert st == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(a) in msg


def test_every_conv_field_reaches_the_library(ps, ctx):
    """Distinct values in every field, read back through ps_plan_describe."""
    d = ps.ConvDesc(N=2, C=3, K=5, H=11, W=13, R=3, S=4, stride=(2, 1), padding=(1, 2, 3, 0),
                    dilation=(1, 2), layout="nchw", weight_layout="krsc", bias=True, relu=True)
    plan = ctx.plan(d)
    text = plan.describe()
    oh, ow = d.output_size()
    assert "conv_fwd f32 nchw N=2 C=3 K=5 H=11 W=13 R=3 S=4 stride=2x1 pad=1,2,3,0 dilation=1x2 " \
           "-> OH=%d OW=%d +bias +relu" % (oh, ow) in text, text
    assert (oh, ow) == ((11 + 3 - 3) // 2 + 1, (13 + 3 - 7) // 1 + 1)
    assert plan.desc == d  # ps_plan_get_desc gives back the same descriptor
    assert plan.desc.weight_layout == ps.WeightLayout.KRSC
    assert bytes(plan.desc.c_desc) == bytes(d.c_desc)


def test_every_gemm_field_reaches_the_library(ps, ctx):
    d = ps.GemmDesc(7, 5, 3, order="row", trans_a=True, trans_b=False, lda=10, ldb=6, ldc=8, alpha=0.5, beta=2.0)
    text = ctx.plan(d).describe()
    assert "gemm f32 row-major M=7 N=5 K=3 trans_a=1 trans_b=0 lda=10 ldb=6 ldc=8 alpha=0.5 beta=2" in text, text
    d = ps.GemmDesc(4, 6, 9, order="col", trans_b=True)
    assert "gemm f32 col-major M=4 N=6 K=9 trans_a=0 trans_b=1 lda=0 ldb=0 ldc=0 alpha=1 beta=0" in ctx.plan(d).describe()


def test_plan_options_reach_the_library(ps, ctx):
    d = ps.ConvDesc(N=1, C=8, K=8, H=6, W=6, R=3, S=3, padding=1)
    assert "threads=1" in ctx.plan(d, num_threads=1, cache=False).describe()
    assert "threads=%d" % ctx.num_threads in ctx.plan(d, cache=False).describe()
    # ranker "none": the expert schedule; these weights (2.3 KiB) fit in half of any L2, so its loops are the
    # input-stationary order around the default schedule's kernel
    none = str(ctx.plan(d, ranker="none", cache=False).schedule)
    default = str(ps.Schedule.default(d))
    assert none.split(" : ")[0] == default.split(" : ")[0] and none.split(" : ")[1] == "n* oh* ow* c k", (none, default)
    # 9 MiB of weights: the fixed-order default schedule's loops; its calls (64 channels x 512 x 9 taps,
    # 1.1 MiB of weights) are 256 KiB or more, so 32-channel blocks
    big = ps.ConvDesc(N=1, C=512, K=512, H=7, W=7, R=3, S=3, padding=1)
    got, want = str(ctx.plan(big, ranker="none", cache=False).schedule), str(ps.Schedule.default(big))
    assert got.split(" : ")[1] == want.split(" : ")[1], (got, want)
    assert got.split(" : ")[0] in (want.split(" : ")[0], "32" + want.split(" : ")[0][2:]), (got, want)
    with pytest.raises(ps.ArgumentError, match="top_k"):
        ctx.plan(d, top_k=-1)
    # the measured mode's budget: checked by the library (negative, NaN), by the binding (not a number)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ps.ArgumentError, match="time_budget_ms"):
            ctx.plan(d, top_k=4, time_budget_ms=bad)
    with pytest.raises(ps.ArgumentError, match="time_budget_ms"):
        ctx.plan(d, top_k=4, time_budget_ms="fast")
    assert ctx.plan(d, top_k=4, time_budget_ms=5.0, cache=False).schedule is not None


def test_library_path_and_version(ps):
    import os
    assert os.path.exists(ps.library_path)
    assert ps.api_version() == 1
    assert ps.version().count(".") == 2
    assert ps.has_symbol("ps_plan_create") and not ps.has_symbol("ps_no_such_function")


def test_graph_structs_match_the_library(ps):
    """ps_stencil reports its size through ps_stencil_init; ps_tensor_info has
    no init, so its size is checked by the library's rejection message."""
    from polysci import _lib
    lib = _lib.lib
    assert _lib._reported_size(lib.ps_stencil_init) == ctypes.sizeof(_lib.StencilC)
    if ctypes.sizeof(ctypes.c_void_p) == 8:
        assert ctypes.sizeof(_lib.StencilC) == 64 and _lib.StencilC.dy.offset == 32
        assert ctypes.sizeof(_lib.TensorInfoC) == 80
    g = ps.Graph()
    x = g.input("x", (1, 4, 5, 2))
    info = _lib.TensorInfoC()
    for wrong in (ctypes.sizeof(info) - 8, ctypes.sizeof(info) + 8):
        info.struct_size = wrong
        st, msg = _status_and_message(lib.ps_graph_tensor_info(g.handle, x.index, ctypes.byref(info)))
        assert st == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(info) in msg, msg
    st = _lib.StencilC()
    lib.ps_stencil_init(ctypes.byref(st))
    st.struct_size += 8
    dy = (ctypes.c_int * 1)(0)
    st.input, st.n_taps, st.dy, st.dx = x.index, 1, dy, dy
    out = ctypes.c_int()
    s, msg = _status_and_message(lib.ps_graph_add_stencil(g.handle, None, ctypes.byref(st), ctypes.byref(out)))
    assert s == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(st) in msg, msg
    st.struct_size -= 8
    assert lib.ps_graph_add_stencil(g.handle, None, ctypes.byref(st), ctypes.byref(out)) == 0 and out.value == 1


def test_graph_plan_structs_match_the_library(ps):
    if not ps.has_engine():
        pytest.skip("the loaded libpolysci has no graph engine")
    from polysci import _lib
    lib = _lib.lib
    assert _lib._reported_size(lib.ps_graph_options_init) == ctypes.sizeof(_lib.GraphOptionsC)
    o = _lib.GraphOptionsC()
    lib.ps_graph_options_init(ctypes.byref(o))
    assert (o.num_threads, o.fusion, o.tile_h, o.tile_w, o.n_group_of, o.group_limit, o.flags) == (0, 0, 0, 0, 0, 0, 0)
    g = ps.Graph()
    g.output(g.stencil(g.input("x", (1, 4, 5, 2)), [(0, 0)]))
    plan = g.plan()
    s = _lib.GraphPlanStatsC()
    s.struct_size = ctypes.sizeof(s) + 8
    st, msg = _status_and_message(lib.ps_graph_plan_get_stats(plan.handle, ctypes.byref(s)))
    assert st == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(s) in msg, msg
    o.struct_size -= 8
    h = ctypes.c_void_p()
    ctx = ps.default_context()
    st, msg = _status_and_message(lib.ps_graph_plan_create(ctx.handle, g.handle, ctypes.byref(o), ctypes.byref(h)))
    assert st == ps.Status.ERR_INVALID_ARG and "expected %d" % ctypes.sizeof(o) in msg, msg
    assert not h.value
