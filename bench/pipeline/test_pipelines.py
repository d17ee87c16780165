"""The float64 numpy reference (reference.py) on its own, and Halide's naive and
manual schedules of every pipeline against it at small, odd sizes.

  /usr/bin/python3 -m pytest -q -p no:cacheprovider bench/pipeline
  HALIDE_SLOW=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider bench/pipeline   # + autoschedulers

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
import reference as R  # noqa: E402

SIZES = [(67, 45), (130, 97), (37, 23)]
SLOW = pytest.mark.skipif(os.environ.get("HALIDE_SLOW") != "1",
                          reason="autoschedulers: set HALIDE_SLOW=1")


def _img(W, H, seed=0):
    return np.random.default_rng(seed).uniform(0.05, 1.0, size=(3, H, W)).astype(np.float32)


# ---- the reference alone (numpy only) ------------------------------------
def test_laplacian_unit_gains_reconstruct_input():
    # With every gain 1 the collapse telescopes: r0 = g0 exactly (up to f64 rounding)
    img = _img(67, 45)
    out = R.laplacian(img, gains=(1.0, 1.0, 1.0))
    assert np.max(np.abs(out - img)) < 1e-12


@pytest.mark.parametrize("name", ["unsharp_pm", "blur3x3", "laplacian"])
def test_constant_image_is_fixed_point(name):
    img = np.full((3, 23, 37), 0.375)
    assert np.allclose(R.PIPELINES[name](img), img, rtol=0, atol=1e-12)


def test_unsharp_constant_image():
    # apps/unsharp's 7-tap Gaussian is truncated and not normalized (taps sum to
    # 0.9826, the y-then-x blur to its square), so a constant image comes out
    # scaled by 2 - sum^2
    k = [np.exp(-i * i / 4.5) / (np.sqrt(2 * np.pi) * 1.5) for i in range(4)]
    ksum = k[0] + 2 * sum(k[1:])
    assert 0.98 < ksum < 0.99
    img = np.full((3, 23, 37), 0.375)
    assert np.allclose(R.unsharp(img), (2 - ksum ** 2) * img, rtol=0, atol=1e-12)


def test_harris_constant_image_is_zero():
    assert np.max(np.abs(R.harris(np.full((3, 23, 37), 0.5)))) < 1e-12


def test_down2_up2_match_loops():
    rng = np.random.default_rng(1)
    a = rng.uniform(size=(1, 7, 9))
    d = R.down2(a)
    assert d.shape == (1, 4, 5)
    w = [1, 4, 6, 4, 1]
    cl = lambda i, n: min(max(i, 0), n - 1)  # noqa: E731
    for y in range(4):
        for x in range(5):
            v = sum(w[j] * w[k] * a[0, cl(2 * y + k - 2, 7), cl(2 * x + j - 2, 9)]
                    for j in range(5) for k in range(5)) / 256
            assert abs(d[0, y, x] - v) < 1e-14
    u = R.up2(d, 7, 9)
    for y in range(7):
        for x in range(9):
            def lin(i, n):  # coarse taps and weights of fine index i: coordinate (i - 0.5) / 2
                c = (i - 0.5) / 2
                j = int(np.floor(c))
                f = c - j
                return [(cl(j, n), 1 - f), (cl(j + 1, n), f)]
            v = sum(wy * wx * d[0, jy, jx] for jy, wy in lin(y, 4) for jx, wx in lin(x, 5))
            assert abs(u[0, y, x] - v) < 1e-14


def test_tolerance_rejects_a_perturbed_algorithm():
    # The tolerance is far below what a wrong constant or tap produces
    img = _img(67, 45)
    ok, _ = R.compare("laplacian", R.laplacian(img, gains=(1.8, 1.4, 1.25)), img)
    assert not ok
    shifted = R.blur3x3(img)[:, :, ::-1].copy()
    assert not R.compare("blur3x3", shifted, img)[0]
    assert R.compare("blur3x3", R.blur3x3(img).astype(np.float32), img)[0]


# ---- Halide against the reference -----------------------------------------
def _halide():
    pytest.importorskip("halide")
    import halide_common as C
    import halide_pipelines as HP
    C.warn_quiet()
    return C, HP


def _check(name, sched, W, H):
    C, HP = _halide()
    img = C.make_input_array((3, H, W))
    out = C.run_once(HP.build(name, W, H), sched, img, machine=(2, 1 << 20, 40))
    ok, msg = R.compare(name, out, img)
    assert ok, "%s %s %dx%d: %s" % (name, sched, W, H, msg)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "%dx%d" % s)
@pytest.mark.parametrize("sched", ["naive", "manual"])
@pytest.mark.parametrize("name", list(R.PIPELINES))
def test_halide_matches_reference(name, sched, size):
    _check(name, sched, *size)


@SLOW
@pytest.mark.parametrize("sched", ["mullapudi2016", "adams2019", "li2018"])
@pytest.mark.parametrize("name", list(R.PIPELINES))
def test_autoscheduled_matches_reference(name, sched):
    _check(name, sched, 130, 97)


def test_cli_time_and_dump(tmp_path):
    _halide()
    cli = [sys.executable, os.path.join(HERE, "halide_pipelines.py")]
    env = dict(os.environ, HL_NUM_THREADS="1")
    res = subprocess.run(cli + ["time", "--bench", "harris", "--size", "64x40", "--sched", "manual",
                                "--reps", "2", "--warmup", "1"],
                         env=env, capture_output=True, text=True, check=True)
    rec = json.loads(res.stdout.strip().splitlines()[-1])
    assert rec["status"] == "ok" and rec["width"] == 64 and rec["height"] == 40
    assert len(rec["times_ms"]) == 2 and rec["nan"] == 0 and rec["compile_s"] > 0
    prefix = str(tmp_path / "lap")
    subprocess.run(cli + ["dump", "--bench", "laplacian", "--size", "45x31", "--prefix", prefix],
                   env=env, capture_output=True, text=True, check=True)
    img, out = np.load(prefix + "_in.npy"), np.load(prefix + "_out.npy")
    assert img.shape == (3, 31, 45) and out.shape == (3, 31, 45) and out.dtype == np.float32
    assert R.compare("laplacian", out, img)[0]
