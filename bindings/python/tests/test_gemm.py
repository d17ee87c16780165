"""GEMMs through the bindings against the float64 numpy reference."""

import itertools

import numpy as np
import pytest

from reference import assert_close, gemm_ref


def stored(rng, rows, cols, order, ld=0):
    """A (rows, cols) float32 matrix in `order` with leading dimension ld (0 =
    tight): a view into a padded array when ld is larger."""
    if order == "col":
        ld = ld or rows
        base = rng.standard_normal((ld, cols)).astype(np.float32, order="F")
        base = np.asfortranarray(base)
        return base[:rows, :], base
    ld = ld or cols
    base = rng.standard_normal((rows, ld)).astype(np.float32)
    return base[:, :cols], base


CASES = [
    # M, N, K, lda_pad, ldb_pad, ldc_pad, alpha, beta
    (8, 9, 10, 0, 0, 0, 1.0, 0.0),
    (33, 17, 64, 0, 0, 0, -0.5, 0.0),
    (64, 48, 96, 3, 0, 5, 1.0, 1.0),
    (1, 31, 7, 0, 2, 0, 2.5, -0.75),
    (65, 1, 13, 1, 1, 1, 1.0, 0.1),
    (20, 40, 1, 0, 0, 0, 0.0, 2.0),
]


@pytest.mark.parametrize("order,trans_a,trans_b", list(itertools.product(["col", "row"], [False, True], [False, True])))
@pytest.mark.parametrize("case", CASES, ids=lambda c: "M%dN%dK%d_pad%d%d%d_a%g_b%g" % c)
def test_gemm(ps, ctx, order, trans_a, trans_b, case):
    M, N, K, pa, pb, pc, alpha, beta = case
    rng = np.random.default_rng(M * 1000 + N * 10 + K)
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    tight = lambda s: s[0] if order == "col" else s[1]
    lda = tight(a_shape) + pa if pa else 0
    ldb = tight(b_shape) + pb if pb else 0
    ldc = tight((M, N)) + pc if pc else 0
    a, _ = stored(rng, *a_shape, order, lda)
    b, _ = stored(rng, *b_shape, order, ldb)
    c, cbase = stored(rng, M, N, order, ldc)
    c0 = c.copy()
    if beta == 0:
        c[...] = np.nan  # with beta == 0 C must not be read
    cbase_before = cbase.copy()
    a_before, b_before = a.copy(), b.copy()
    d = ps.GemmDesc(M, N, K, order=order, trans_a=trans_a, trans_b=trans_b,
                    lda=lda, ldb=ldb, ldc=ldc, alpha=alpha, beta=beta)
    assert d.a_shape == a_shape and d.b_shape == b_shape
    plan = ctx.plan(d)
    got = plan.gemm(a, b, c)
    assert got is c
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)
    a_op = a.T if trans_a else a
    b_op = b.T if trans_b else b
    ref, mag = gemm_ref(a_op, b_op, alpha, beta, c0)
    assert_close(c, ref, mag, K + (1 if beta else 0), what=str(d))
    # The ldc gap around C is untouched.
    mask = np.ones(cbase.shape, bool)
    if order == "col":
        mask[:M, :] = False
    else:
        mask[:, :N] = False
    np.testing.assert_array_equal(cbase[mask], cbase_before[mask])


def test_gemm_allocates_c(ps, ctx):
    rng = np.random.default_rng(9)
    for order in ("row", "col"):
        d = ps.GemmDesc(12, 7, 5, order=order, ldc=(10 if order == "row" else 15), alpha=1.5)
        plan = ctx.plan(d)
        a, _ = stored(rng, 12, 5, order)
        b, _ = stored(rng, 5, 7, order)
        c = plan(a, b)  # __call__ dispatches to gemm
        assert c.shape == (12, 7)
        assert c.strides == ((4, 15 * 4) if order == "col" else (10 * 4, 4))  # the plan's ldc
        ref, mag = gemm_ref(a, b, 1.5, 0.0)
        assert_close(c, ref, mag, 5)


def test_gemm_beta_needs_c(ps, ctx):
    plan = ctx.plan(ps.GemmDesc(4, 4, 4, order="row", beta=1.0))
    a = np.ones((4, 4), np.float32)
    with pytest.raises(ps.ArgumentError, match="beta"):
        plan.gemm(a, a)


def test_gemm_wrong_memory_order(ps, ctx):
    plan = ctx.plan(ps.GemmDesc(6, 5, 4, order="col"))
    a_c = np.ones((6, 4), np.float32)              # C-ordered, but the plan is column-major
    b_f = np.asfortranarray(np.ones((4, 5), np.float32))
    with pytest.raises(ps.ArgumentError, match="column-major"):
        plan.gemm(a_c, b_f)
    # Padded ld: a tight array is rejected, a view of a padded one accepted.
    plan = ctx.plan(ps.GemmDesc(6, 5, 4, order="row", lda=7))
    with pytest.raises(ps.ArgumentError, match="leading dimension 7"):
        plan.gemm(np.ones((6, 4), np.float32), np.ones((4, 5), np.float32))
    c = plan.gemm(np.ones((6, 7), np.float32)[:, :4], np.ones((4, 5), np.float32))
    np.testing.assert_array_equal(c, np.full((6, 5), 4, np.float32))


def test_gemm_desc_properties(ps):
    d = ps.GemmDesc(3, 4, 5, order="row", trans_a=True, ldb=9, alpha=2, beta=0.5)
    assert d.a_shape == (5, 3) and d.b_shape == (5, 4) and d.c_shape == (3, 4)
    assert d.effective_ld == (3, 9, 4)
    assert d.flops == 2 * 3 * 4 * 5
    assert d.order == ps.MatrixOrder.ROW_MAJOR and d.trans_a and not d.trans_b
    assert eval(repr(d), {"polysci": ps}) == d
    assert ps.GemmDesc(3, 4, 5).effective_ld == (3, 5, 3)
