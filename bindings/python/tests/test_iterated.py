"""Iterated stencils from Python (polysci.IteratedStencil): the step-by-step
run against a float64 numpy reference, every tiling bitwise equal to it,
coupled arrays and periodic boundaries, introspection and errors."""

import threading

import numpy as np
import pytest

import polysci as ps

pytestmark = pytest.mark.skipif(not ps.has_iterated(), reason="the loaded libpolysci has no iterated stencils")

TILINGS = ("overlap", "split", "hybrid")


def reference(shape, steps, updates, arrays, periodic):
    """float64 steps of `updates` ({array: (taps, constant)}): fixed
    boundaries keep the cells within the radius of a face."""
    ndim = len(shape)
    radius = [max((abs(o[d]) for taps, _ in updates.values() for _, o, _ in taps), default=0) for d in range(ndim)]
    cur = [a.astype(np.float64) for a in arrays]
    inner = tuple(slice(None) if periodic else slice(radius[d], shape[d] - radius[d]) for d in range(ndim))
    for _ in range(steps):
        nxt = [c.copy() for c in cur]
        for a, (taps, const) in updates.items():
            acc = np.full(shape, const, dtype=np.float64)
            for src, off, w in taps:
                acc += w * np.roll(cur[src], shift=[-o for o in off], axis=tuple(range(ndim)))
            nxt[a][inner] = acc[inner]
        cur = nxt
    return cur


def run(stencil, arrays, **opts):
    out = [a.copy() for a in arrays]
    plan = stencil.plan(**opts)
    plan.execute(*out)
    return out, plan.stats


@pytest.mark.parametrize("periodic", [False, True])
def test_heat2d_every_tiling_bitwise_equal_to_step(periodic):
    shape, steps = (37, 53), 9
    bnd = "periodic" if periodic else "fixed"
    st = ps.IteratedStencil.example("heat2d", shape, steps, boundary=bnd)
    name, taps, const = st.get_update(0)
    assert name == "u" and len(taps) == 5 and const == 0.0
    g = np.random.default_rng(1).random(shape, dtype=np.float32)
    ref, s = run(st, [g], tiling="step")
    assert s.tiling == "step" and s.redundant_fraction == 0 and s.split_order is None
    want = reference(shape, steps, {0: (taps, const)}, [g], periodic)[0]
    np.testing.assert_allclose(ref[0], want, rtol=0, atol=1e-5)
    for t in TILINGS:
        for order in ("phases", "pipelined"):
            if order == "phases" and t != "split":
                continue
            out, s = run(st, [g], tiling=t, band=4, tile=(9, 64), split_order=order, threads=2)
            assert s.tiling == t and s.band == 4
            assert np.array_equal(out[0], ref[0]), (t, order)
            if t == "split":
                assert s.redundant_fraction == 0 and s.points_computed == s.points_needed
                # 4 tiles of about 9 rows: two per thread, so the order asked for runs
                assert s.split_order == order and s.phases == 2  # one split dimension: two either way
            else:
                assert s.points_computed >= s.points_needed
    out, s = run(st, [g])
    assert np.array_equal(out[0], ref[0]) and s.tiling in ("step", "overlap", "split", "hybrid")


def test_built_stencil_coupled_arrays_3d():
    shape, steps = (9, 11, 13), 5
    st = ps.IteratedStencil(shape, steps)
    u, v = st.add_array("u"), st.add_array()
    assert (u, v) == (0, 1)
    tu = [(u, (0, 0, -1), 0.25), (v, (0, 0, 0), 0.5), (u, (1, 0, 0), 0.25)]
    tv = [(v, (-1, 0, 0), 0.3), (u, (0, 1, 0), 0.3), (v, (0, 0, 1), 0.3)]
    st.set_update(u, tu, constant=0.01)
    st.set_update(v, tv)
    i = st.info
    assert i.shape == shape and i.n_arrays == 2 and i.radius == (1, 1, 1) and i.taps == 6 and i.boundary == "fixed"
    assert st.get_update(v)[0] == "a1"
    rng = np.random.default_rng(2)
    arrays = [rng.random(shape, dtype=np.float32) for _ in range(2)]
    ref, _ = run(st, arrays, tiling="step")
    want = reference(shape, steps, {0: (tu, 0.01), 1: (tv, 0.0)}, arrays, False)
    for a in range(2):
        np.testing.assert_allclose(ref[a], want[a], rtol=0, atol=1e-5)
    for t in TILINGS:
        out, _ = run(st, arrays, tiling=t, band=2)
        assert all(np.array_equal(o, r) for o, r in zip(out, ref)), t


def test_heat1d_periodic_matches_numpy_roll():
    st = ps.IteratedStencil.example("heat1d", 200, steps=30, boundary="periodic")
    g = np.random.default_rng(3).random(200, dtype=np.float32)
    out = g.copy()
    plan = st.plan()
    assert plan(out) is out
    want = g.astype(np.float64)
    for _ in range(30):
        want = 0.25 * np.roll(want, 1) + 0.5 * want + 0.25 * np.roll(want, -1)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-5)
    assert "chosen:" in plan.describe() and "distance vectors" in plan.describe()
    assert repr(plan).startswith("<polysci.IteratedPlan ")


def test_one_plan_from_several_threads():
    st = ps.IteratedStencil.example("jacobi2d", (40, 45), steps=6, boundary="periodic")
    plan = st.plan(tiling="overlap", band=3)
    g = np.random.default_rng(4).random((40, 45), dtype=np.float32)
    alone = plan(g.copy())
    outs = [g.copy() for _ in range(4)]
    threads = [threading.Thread(target=plan, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(o, alone) for o in outs)


def test_errors_leave_everything_unchanged():
    with pytest.raises(ps.ArgumentError):
        ps.IteratedStencil((4, 5, 6, 7), 3)
    with pytest.raises(ps.Error):
        ps.IteratedStencil((0, 5), 3)
    with pytest.raises(ps.ArgumentError):
        ps.IteratedStencil((10, 10), 3, boundary="reflect")
    with pytest.raises(ps.ArgumentError):
        ps.IteratedStencil.example("heat4d", (10,), 3)
    st = ps.IteratedStencil((20, 30), 4)
    u = st.add_array("u")
    with pytest.raises(ps.ArgumentError):
        st.set_update(u, [(u, (0,), 1.0)])               # one offset for two dimensions
    with pytest.raises(ps.Error):
        st.set_update(u, [(u, (0, 17), 1.0)])            # |offset| > 16
    with pytest.raises(ps.Error):
        st.set_update(u, [(3, (0, 0), 1.0)])             # no array 3
    with pytest.raises(ps.ArgumentError):
        st.set_update(u, [(u, (0, 0))])
    assert st.get_update(u)[1] == []                     # unchanged: still no update
    with pytest.raises(ps.Error):
        st.plan()                                        # an array without an update
    st.set_update(u, [(u, (0, -1), 0.5), (u, (0, 1), 0.5)])
    with pytest.raises(ps.Error):
        st.set_update(u, [(u, (0, 0), 1.0)])             # one update per array
    with pytest.raises(ps.ArgumentError):
        st.plan(tiling="diamond")
    with pytest.raises(ps.ArgumentError):
        st.plan(split_order="zigzag")
    with pytest.raises(ps.ArgumentError):
        st.plan(tile=(8, 8, 8))
    with pytest.raises(ps.Error):
        st.plan(tiling="split", band=4, tile=(20, 2))    # uprights narrower than 2 x slope x band
    plan = st.plan()
    g = np.random.default_rng(5).random((20, 30), dtype=np.float32)
    keep = g.copy()
    for bad in (g.astype(np.float64), g.T, g[:, :29], np.asfortranarray(g)):
        with pytest.raises(ps.ArgumentError):
            plan(bad)
    with pytest.raises(ps.ArgumentError):
        plan(g, g)
    assert np.array_equal(g, keep)
    plan(g)
    assert not np.array_equal(g, keep)
    plan.close()
    assert plan.closed
    with pytest.raises(ps.ArgumentError):
        plan(g)
