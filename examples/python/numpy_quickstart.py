#!/usr/bin/env python3
"""polysci from Python with numpy only: one convolution (NHWC, bias + ReLU
fused) and one row-major GEMM, each checked against numpy.

    POLYSCI_LIBRARY=build/lib/libpolysci.so python3 examples/python/numpy_quickstart.py

Exits 1 if a result is off.
"""

import os
import sys

import numpy as np

try:
    import polysci
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
    import polysci


def main():
    ctx = polysci.Context()  # threads: OpenMP's default
    rng = np.random.default_rng(0)

    # A 3x3 convolution, stride 1, padding 1, 56x56x64 -> 64 channels.
    desc = polysci.ConvDesc(N=1, C=64, K=64, H=56, W=56, R=3, S=3, padding=1,
                            layout="nhwc", weight_layout="kcrs", bias=True, relu=True)
    plan = ctx.plan(desc)
    print(plan.describe())
    x = rng.standard_normal(desc.src_shape, dtype=np.float32)      # (N, H, W, C)
    w = rng.standard_normal(desc.weight_shape, dtype=np.float32)   # (K, C, R, S)
    b = rng.standard_normal(desc.K, dtype=np.float32)
    packed = plan.pack_weights(w)                                  # once per set of weights
    y = plan.execute(x, packed, bias=b)                            # (N, OH, OW, K)

    # numpy: zero-pad, then sum over the taps.
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros(desc.dst_shape)
    for r in range(3):
        for s in range(3):
            ref += np.einsum("nhwc,kc->nhwk", xp[:, r:r + 56, s:s + 56, :], w[:, :, r, s].astype(np.float64))
    ref = np.maximum(ref + b, 0)
    conv_err = float(np.abs(y - ref).max())
    print("conv: max |polysci - numpy| = %.3g (max |y| = %.3g)\n" % (conv_err, float(np.abs(ref).max())))

    # C = 0.5 * A @ B, row-major (C-ordered numpy arrays).
    g = polysci.GemmDesc(M=200, N=300, K=100, order="row", alpha=0.5)
    gplan = ctx.plan(g)
    print(gplan.describe())
    a = rng.standard_normal((200, 100), dtype=np.float32)
    bm = rng.standard_normal((100, 300), dtype=np.float32)
    c = gplan.gemm(a, bm)
    gemm_err = float(np.abs(c - 0.5 * (a.astype(np.float64) @ bm)).max())
    print("gemm: max |polysci - numpy| = %.3g" % gemm_err)

    ok = conv_err < 1e-3 and gemm_err < 1e-4
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
