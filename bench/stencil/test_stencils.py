"""The float64 stencil reference (stencil_reference.py) on its own, and Halide's
naive and manual (overlapped-tile) schedules against it at small sizes and T.

  /usr/bin/python3 -m pytest -q -p no:cacheprovider bench/stencil
  HALIDE_SLOW=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider bench/stencil   # + autoschedulers

The Halide tests need Debian's python3-halide and are skipped without it.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
import stencil_reference as R  # noqa: E402

SLOW = pytest.mark.skipif(os.environ.get("HALIDE_SLOW") != "1",
                          reason="autoschedulers: set HALIDE_SLOW=1")


# ---- the reference alone (numpy only) ------------------------------------
@pytest.mark.parametrize("name", list(R.CASES))
def test_constant_grid_is_fixed_and_boundary_kept(name):
    shape = {1: (20,), 2: (9, 11), 3: (7, 8, 9)}[R.DIMS[name]]
    assert np.allclose(R.run(name, np.full(shape, 0.25), 5), 0.25, rtol=0, atol=1e-15)
    u0 = np.random.default_rng(0).uniform(0.05, 1.0, size=shape)
    u = R.run(name, u0, 5)
    edge = np.ones(shape, bool)
    edge[tuple(slice(1, -1) for _ in shape)] = False
    assert np.array_equal(u[edge], u0[edge])
    assert u.max() <= u0.max() and u.min() >= u0.min()   # convex updates: maximum principle


def test_heat2d_matches_loops():
    u0 = np.random.default_rng(2).uniform(size=(5, 6))
    u = u0.copy()
    for _ in range(3):
        v = u.copy()
        for i in range(1, 4):
            for j in range(1, 5):
                v[i, j] = (0.125 * (u[i, j + 1] - 2 * u[i, j] + u[i, j - 1]) +
                           0.125 * (u[i + 1, j] - 2 * u[i, j] + u[i - 1, j]) + u[i, j])
        u = v
    assert np.max(np.abs(R.run("heat2d", u0, 3) - u)) < 1e-15


@pytest.mark.parametrize("name", list(R.CASES))
def test_tolerance_rejects_one_step_more(name):
    shape, T = R.CASES[name][0][:2]
    u0 = np.random.default_rng(0).uniform(0.05, 1.0, size=tuple(reversed(shape)))
    assert R.compare(name, R.run(name, u0, T).astype(np.float32), u0, T)[0]
    assert not R.compare(name, R.run(name, u0, T + 1), u0, T)[0]


# ---- Halide against the reference -----------------------------------------
def _halide():
    pytest.importorskip("halide")
    import halide_common as C
    import halide_stencils as HS
    C.warn_quiet()
    return C, HS


def _check(name, case, sched, form):
    C, HS = _halide()
    shape, T, group, tile = case
    u0 = C.make_input_array(list(reversed(shape)))
    b = HS.build(name, shape, T, form, group, [t or None for t in tile])
    out = C.run_once(b, sched, u0, machine=(2, 1 << 20, 40), pad=b.info["pad"])
    ok, msg = R.compare(name, out, u0, T)
    assert ok, "%s %s %s %s: %s" % (name, shape, sched, form, msg)


# First case of each stencil: naive in the clamp and ghost forms, manual in all
# three; second case: each schedule in its default form (clamp, group).
RUNS = ([(n, R.CASES[n][0], "naive", f) for n in R.CASES for f in ("clamp", "ghost")] +
        [(n, R.CASES[n][0], "manual", f) for n in R.CASES for f in ("clamp", "group", "ghost")] +
        [(n, R.CASES[n][1], s, f) for n in R.CASES for s, f in (("naive", "clamp"), ("manual", "group"))])


@pytest.mark.parametrize("name,case,sched,form", RUNS,
                         ids=["%s-%s-%s-%s" % (n, "x".join(map(str, c[0])), s, f) for n, c, s, f in RUNS])
def test_halide_matches_reference(name, case, sched, form):
    _check(name, case, sched, form)


@SLOW
@pytest.mark.parametrize("sched", ["mullapudi2016", "adams2019", "li2018"])
@pytest.mark.parametrize("name", list(R.CASES))
def test_autoscheduled_matches_reference(name, sched):
    _check(name, R.CASES[name][0], sched, "clamp")


def test_cli_time_and_dump(tmp_path):
    _halide()
    cli = [sys.executable, os.path.join(HERE, "halide_stencils.py")]
    env = dict(os.environ, HL_NUM_THREADS="1")
    res = subprocess.run(cli + ["time", "--bench", "heat2d", "--n", "64", "--T", "6", "--sched", "manual",
                                "--group", "3", "--tile", "32,16", "--reps", "2", "--warmup", "1"],
                         env=env, capture_output=True, text=True, check=True)
    rec = json.loads(res.stdout.strip().splitlines()[-1])
    assert rec["status"] == "ok" and rec["shape"] == [64, 64] and rec["T"] == 6
    assert len(rec["times_ms"]) == 2 and rec["nan"] == 0 and rec["tile"] == [32, 16]
    prefix = str(tmp_path / "h3")
    subprocess.run(cli + ["dump", "--bench", "heat3d", "--shape", "19,23,17", "--T", "4", "--form", "ghost",
                          "--prefix", prefix], env=env, capture_output=True, text=True, check=True)
    u0, out = np.load(prefix + "_in.npy"), np.load(prefix + "_out.npy")
    assert u0.shape == (17, 23, 19) and out.shape == (17, 23, 19)
    assert R.compare("heat3d", out, u0, 4)[0]
