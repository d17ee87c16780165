"""Error paths: bad arrays, bad descriptors, wrong weights, closed objects."""

import os
import subprocess
import sys

import numpy as np
import pytest


@pytest.fixture()
def conv(ps, ctx):
    d = ps.ConvDesc(N=2, C=4, K=6, H=7, W=7, R=3, S=3, padding=1, bias=True)
    plan = ctx.plan(d)
    rng = np.random.default_rng(0)
    pw = plan.pack_weights(rng.standard_normal(d.weight_shape).astype(np.float32))
    x = rng.standard_normal(d.src_shape).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    return d, plan, pw, x, b


def test_error_carries_status_and_library_message(ps, ctx):
    d = ps.ConvDesc(N=1, C=1, K=1, H=5, W=5, R=3, S=3, padding=3)  # pad >= filter extent
    with pytest.raises(ps.Error) as ei:
        ctx.plan(d)
    e = ei.value
    assert e.status == ps.Status.ERR_INVALID_ARG and e.status_name == "PS_ERR_INVALID_ARG"
    assert "padding" in e.message and "smaller than the dilated filter height" in e.message
    assert str(e).startswith("PS_ERR_INVALID_ARG: conv: vertical padding")
    assert isinstance(e, ps.ArgumentError) and isinstance(e, ValueError)
    with pytest.raises(ps.ArgumentError, match="N must be >= 1"):
        ps.ConvDesc(N=0, C=1, K=1, H=1, W=1, R=1, S=1).validate()
    with pytest.raises(ps.ArgumentError, match="empty output"):
        ps.ConvDesc(N=1, C=1, K=1, H=2, W=2, R=3, S=3).output_size()
    with pytest.raises(ps.ArgumentError, match="lda = 2 is smaller"):
        ctx.plan(ps.GemmDesc(4, 4, 4, lda=2))
    with pytest.raises(ps.ArgumentError, match="alpha and beta must be finite"):
        ctx.plan(ps.GemmDesc(4, 4, 4, alpha=float("inf")))
    with pytest.raises(ps.ArgumentError, match="num_threads"):
        ps.Context(num_threads=-1)


def test_python_side_descriptor_checks(ps):
    with pytest.raises(ps.ArgumentError, match="layout"):
        ps.ConvDesc(1, 1, 1, 1, 1, 1, 1, layout="nhcw")
    with pytest.raises(ps.ArgumentError, match="integer"):
        ps.ConvDesc(1.5, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ps.Error) as ei:
        ps.ConvDesc(1 << 70, 1, 1, 1, 1, 1, 1)
    assert ei.value.status == ps.Status.ERR_OVERFLOW
    with pytest.raises(ps.ArgumentError, match="pair"):
        ps.ConvDesc(1, 1, 1, 1, 1, 1, 1, stride=(1, 2, 3))
    with pytest.raises(ps.ArgumentError, match="matrix order"):
        ps.GemmDesc(1, 1, 1, order="diagonal")
    with pytest.raises(ps.ArgumentError, match="trans_a"):
        ps.GemmDesc(1, 1, 1, trans_a=2)


def test_array_checks(ps, conv):
    d, plan, pw, x, b = conv
    with pytest.raises(ps.ArgumentError, match="dtype float32"):
        plan.execute(x.astype(np.float64), pw, bias=b)
    with pytest.raises(ps.ArgumentError, match="dtype float32"):
        plan.execute(x.astype(">f4"), pw, bias=b)  # non-native byte order
    with pytest.raises(ps.ArgumentError, match=r"shape \(2, 7, 7, 4\)"):
        plan.execute(x[:1], pw, bias=b)
    nchw_view = x.transpose(0, 3, 1, 2).copy().transpose(0, 2, 3, 1)  # right shape, wrong strides
    with pytest.raises(ps.ArgumentError, match="C-contiguous"):
        plan.execute(nchw_view, pw, bias=b)
    with pytest.raises(ps.ArgumentError, match="numpy.ndarray"):
        plan.execute(x.tolist(), pw, bias=b)
    with pytest.raises(ps.ArgumentError, match="bias is None"):
        plan.execute(x, pw)
    with pytest.raises(ps.ArgumentError, match=r"bias must have shape \(6,\)"):
        plan.execute(x, pw, bias=b[:5])
    out = np.empty(d.dst_shape, np.float32)
    out.setflags(write=False)
    with pytest.raises(ps.ArgumentError, match="read-only"):
        plan.execute(x, pw, bias=b, out=out)
    buf = np.zeros(x.size + int(np.prod(d.dst_shape)) - 10, np.float32)
    src_in_buf = buf[:x.size].reshape(x.shape)
    src_in_buf[...] = x
    with pytest.raises(ps.ArgumentError, match="overlaps src"):
        plan.execute(src_in_buf, pw, bias=b, out=buf[x.size - 10:].reshape(d.dst_shape))
    with pytest.raises(ps.ArgumentError, match="PackedWeights"):
        plan.execute(x, np.zeros(10, np.float32), bias=b)
    with pytest.raises(ps.ArgumentError, match="weights must have shape"):
        plan.pack_weights(np.zeros((6, 4, 3), np.float32))
    # Nothing above ran, and the good call still works.
    assert plan.execute(x, pw, bias=b).shape == d.dst_shape


def test_bias_given_without_bias_in_desc(ps, ctx):
    d = ps.ConvDesc(N=1, C=2, K=3, H=4, W=4, R=1, S=1)
    plan = ctx.plan(d)
    pw = plan.pack_weights(np.ones(d.weight_shape, np.float32))
    with pytest.raises(ps.ArgumentError, match="bias=False"):
        plan.execute(np.ones(d.src_shape, np.float32), pw, bias=np.ones(3, np.float32))


def test_weights_of_another_plan_are_rejected_by_the_library(ps, ctx, conv):
    d, plan, pw, x, b = conv
    other = ctx.plan(d.replace(K=5))
    pw_other = other.pack_weights(np.ones(other.desc.weight_shape, np.float32))
    out = np.full(d.dst_shape, 7.0, np.float32)
    with pytest.raises(ps.Error) as ei:
        plan.execute(x, pw_other, bias=b, out=out)
    assert ei.value.status == ps.Status.ERR_BAD_WEIGHTS
    assert "not packed by ps_plan_pack_weights" in ei.value.message
    np.testing.assert_array_equal(out, 7.0)  # on error nothing is written
    # A corrupted header is rejected as well.
    pw.buffer[0] ^= 0xFF
    with pytest.raises(ps.Error, match="PS_ERR_BAD_WEIGHTS"):
        plan.execute(x, pw, bias=b)


def test_wrong_plan_kind(ps, ctx, conv):
    d, plan, pw, x, b = conv
    with pytest.raises(ps.ArgumentError, match="needs a gemm plan"):
        plan.gemm(x, x)
    g = ctx.plan(ps.GemmDesc(2, 2, 2))
    with pytest.raises(ps.ArgumentError, match="needs a conv plan"):
        g.execute(x, pw)
    with pytest.raises(ps.ArgumentError, match="needs a conv plan"):
        g.pack_weights(x)
    assert g.packed_weights_size == 0


def test_schedule_errors(ps, ctx):
    d = ps.ConvDesc(N=1, C=16, K=16, H=8, W=8, R=3, S=3, padding=1)
    with pytest.raises(ps.ParseError) as ei:
        ps.Schedule.parse("16x8x16 n k", "conv")
    assert ei.value.status == ps.Status.ERR_PARSE and "expected" in ei.value.message
    with pytest.raises(ps.ParseError, match="unknown loop name"):
        ps.Schedule.parse("16x8x16/1 : n k oh ow m", "conv")
    # Parses, but does not fit: the oh loop is missing.
    with pytest.raises(ps.ScheduleError) as ei:
        ctx.plan(d, schedule="16x8x16/1 : n k ow c")
    assert ei.value.status == ps.Status.ERR_INVALID_SCHEDULE and "oh" in ei.value.message
    with pytest.raises(ps.ScheduleError, match="reduction"):
        ps.Schedule.parse("16x8x16/1 : c* n k oh ow", "conv").check(d)
    with pytest.raises(ps.ScheduleError, match="unknown conv loop name"):
        ps.Schedule(16, 8, 16, 1, "conv").add_loop("m")
    with pytest.raises(ps.ArgumentError, match="ranker"):
        ctx.plan(d, ranker="oracle")


def test_closed_objects(ps):
    c = ps.Context(num_threads=1)
    d = ps.ConvDesc(N=1, C=2, K=2, H=3, W=3, R=1, S=1)
    plan = c.plan(d)
    with pytest.raises(ps.ArgumentError, match="plans are open"):
        c.close()
    assert not c.closed
    plan.close()
    plan.close()  # idempotent
    assert plan.closed and repr(plan) == "<polysci.Plan closed>"
    with pytest.raises(ps.ArgumentError, match="plan is closed"):
        plan.pack_weights(np.ones(d.weight_shape, np.float32))
    c.close()
    assert c.closed
    with pytest.raises(ps.ArgumentError, match="context is closed"):
        c.plan(d)
    with ps.Context() as c2:
        assert c2.num_threads >= 1
    assert c2.closed


def test_plan_keeps_context_alive(ps):
    import gc
    d = ps.ConvDesc(N=1, C=2, K=2, H=3, W=3, R=1, S=1)
    plan = ps.Context(num_threads=1).plan(d)  # the context object is dropped at once
    gc.collect()
    x = np.ones(d.src_shape, np.float32)
    y = plan.execute(x, plan.pack_weights(np.ones(d.weight_shape, np.float32)))
    np.testing.assert_array_equal(y, 2.0)
    assert plan.context.num_threads == 1


def test_library_not_found_message(tmp_path):
    env = dict(os.environ, POLYSCI_LIBRARY=str(tmp_path / "nope.so"))
    pkg = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
    r = subprocess.run([sys.executable, "-c", "import polysci"], cwd=pkg, env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "LibraryNotFound" in r.stderr and "POLYSCI_LIBRARY" in r.stderr and "nope.so" in r.stderr


def test_library_next_to_the_package(ps, tmp_path):
    """Without POLYSCI_LIBRARY, a libpolysci.so inside the package directory wins."""
    import shutil
    pkg_src = os.path.dirname(ps.__file__)
    shutil.copytree(pkg_src, tmp_path / "polysci", ignore=shutil.ignore_patterns("__pycache__", "libpolysci*"))
    os.symlink(os.path.realpath(ps.library_path), tmp_path / "polysci" / "libpolysci.so")
    env = {k: v for k, v in os.environ.items() if k not in ("POLYSCI_LIBRARY", "PYTHONPATH")}
    r = subprocess.run([sys.executable, "-c", "import polysci; print(polysci.library_path)"], cwd=tmp_path,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "polysci" / "libpolysci.so")
