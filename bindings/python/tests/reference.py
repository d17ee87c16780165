"""float64 numpy references and the error bound polysci's C tests use.

The reference is computed in float64 from exactly the float32 inputs, so the
only error is the f32 arithmetic under test. As in tests/reference.c:
    |got - ref| <= tol(L) * sum|terms| + tiny,  tol(L) = 8u*sqrt(L) + 2u, u = 2^-24
(a probabilistic bound with failure probability < 1e-13 per element; a
missing or misplaced term of typical size exceeds it by a factor >= 8 for
reduction lengths up to 4000)."""

import numpy as np

U = np.finfo(np.float32).eps / 2.0
TINY = 1e-30


def tolerance(L):
    return 8.0 * U * np.sqrt(max(L, 1)) + 2.0 * U


def assert_close(got, ref, mag, L, what=""):
    """Fails with the worst element if any |got-ref| exceeds the bound."""
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    bound = tolerance(L) * mag + TINY
    err = np.abs(got - ref)
    bad = ~(err <= bound)  # NaN counts as bad
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err / bound, nan=np.inf), 0)), got.shape)
        raise AssertionError("%s: %d of %d elements off; worst at %s: got %r, want %r (bound %.3g)" % (
            what, int(bad.sum()), got.size, i, got[i], ref[i], bound[i]))
    return float(np.max(err / bound)) if err.size else 0.0


def conv_ref_nchw(x, w_kcrs, stride=(1, 1), pad=(0, 0, 0, 0), dilation=(1, 1), bias=None, relu=False):
    """x: (N, C, H, W), w: (K, C, R, S), pad: (top, bottom, left, right).
    Returns (out, mag) in float64, both (N, K, OH, OW); mag = sum of |terms|."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w_kcrs, dtype=np.float64)
    sh, sw = stride
    dh, dw = dilation
    t, b, l, r = pad
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    N, C, Hp, Wp = xp.shape
    K, C2, R, S = w.shape
    assert C == C2
    OH = (Hp - dh * (R - 1) - 1) // sh + 1
    OW = (Wp - dw * (S - 1) - 1) // sw + 1
    out = np.zeros((N, K, OH, OW))
    mag = np.zeros((N, K, OH, OW))
    for ri in range(R):
        for si in range(S):
            h0, w0 = ri * dh, si * dw
            patch = xp[:, :, h0:h0 + sh * (OH - 1) + 1:sh, w0:w0 + sw * (OW - 1) + 1:sw]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, ri, si], optimize=True)
            mag += np.einsum("nchw,kc->nkhw", np.abs(patch), np.abs(w[:, :, ri, si]), optimize=True)
    if bias is not None:
        bb = np.asarray(bias, dtype=np.float64)[None, :, None, None]
        out += bb
        mag += np.abs(bb)
    if relu:
        out = np.maximum(out, 0.0)
    return out, mag


def gemm_ref(a_op, b_op, alpha, beta, c0=None):
    """op(A) (M x K), op(B) (K x N) as float64 arrays; returns (C, mag)."""
    a_op = np.asarray(a_op, dtype=np.float64)
    b_op = np.asarray(b_op, dtype=np.float64)
    out = alpha * (a_op @ b_op)
    mag = abs(alpha) * (np.abs(a_op) @ np.abs(b_op))
    if beta != 0:
        c0 = np.asarray(c0, dtype=np.float64)
        out = out + beta * c0
        mag = mag + abs(beta) * np.abs(c0)
    return out, mag
