"""The Python examples run and check themselves (subprocesses, small settings)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EXAMPLES = os.path.join(REPO, "examples", "python")


def _run(args, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "bindings", "python") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable] + args, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_numpy_quickstart():
    r = _run([os.path.join(EXAMPLES, "numpy_quickstart.py")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "conv: max |polysci - numpy|" in r.stdout and "gemm: max |polysci - numpy|" in r.stdout


def test_pipeline_quickstart():
    """Builds the graph always; plans, runs and checks it where the library
    has the graph engine (else the example exits 77)."""
    import polysci
    r = _run([os.path.join(EXAMPLES, "pipeline_quickstart.py"), "--size", "67", "93", "--threads", "2"])
    if not polysci.has_engine():
        assert r.returncode == 77 and "has no graph engine" in r.stdout, r.stdout + r.stderr
        assert "<polysci.Graph 5 tensors, 1 inputs, 1 outputs>" in r.stdout, r.stdout
        return
    assert r.returncode == 0, r.stdout + r.stderr
    assert "unsharp 67x93: max |polysci - numpy|" in r.stdout and "OK" in r.stdout, r.stdout


def test_stencil_quickstart():
    import polysci
    r = _run([os.path.join(EXAMPLES, "stencil_quickstart.py"), "--size", "67", "93", "--steps", "9", "--threads", "2"])
    if not polysci.has_iterated():
        assert r.returncode == 77 and "has no iterated stencils" in r.stdout, r.stdout + r.stderr
        return
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bit for bit equal to step by step: yes" in r.stdout and "OK" in r.stdout, r.stdout


def test_torch_example_small_layers(tmp_path):
    pytest.importorskip("torch")
    layers = tmp_path / "layers.txt"
    layers.write_text("# name H W C K R S stride pad_h pad_w\n"
                      "small_3x3 14 14 32 48 3 3 1 1 1\n"
                      "small_1x1s2 9 9 16 24 1 1 2 0 0\n"
                      "small_7x7s2 20 20 3 16 7 7 2 3 3\n")
    r = _run([os.path.join(EXAMPLES, "torch_conv.py"), "--layers", str(layers), "--all",
              "-N", "2", "--reps", "1", "--relu", "--nchw"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 layers, 0 mismatches" in r.stdout, r.stdout
    assert "NCHW: max |polysci - torch|" in r.stdout
