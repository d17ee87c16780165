/* polysci CLI — plain double-precision references for conv and GEMM.
 *
 * Written independently of the library (only the public descriptor structs
 * are shared) so that the CLI can check any plan. Products of two floats are
 * exact in double, and sums are accumulated in double, so the reference is
 * accurate to ~1e-16 relative to the sum of |terms|.
 *
 * Speed: inner loops run over contiguous output channels (conv) / columns
 * (gemm) with register/L1 blocking over several output pixels (rows), OpenMP
 * over independent output blocks; the hot loops are compiled for AVX-512,
 * AVX2 and baseline x86-64 and picked at run time. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define REF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define REF_CLONES
#endif

#define CONV_OWB 8   /* output pixels per block */
#define CONV_KB 256  /* output channels per block */
#define GEMM_IB 16   /* rows of C per block */
#define GEMM_JB 256  /* columns of C per block */

void ref_conv_out_size(const ps_conv_desc *d, int64_t *OH, int64_t *OW)
{
    int64_t eh = d->dilation_h * (d->R - 1) + 1, ew = d->dilation_w * (d->S - 1) + 1;
    *OH = (d->H + d->pad_top + d->pad_bottom - eh) / d->stride_h + 1;
    *OW = (d->W + d->pad_left + d->pad_right - ew) / d->stride_w + 1;
}

/* acc[o][kk] += sum_c x[o][c] * w[c][kk] for the n_o valid pixels. */
REF_CLONES
static void conv_block(double *restrict acc, const float *const *x, const int *o_idx, int n_o,
                       const float *restrict w, int64_t C, int64_t K, int kb)
{
    for (int64_t c = 0; c < C; c++) {
        const float *restrict wc = w + c * K;
        for (int q = 0; q < n_o; q++) {
            double xv = (double)x[q][c];
            double *restrict a = acc + (size_t)o_idx[q] * CONV_KB;
            for (int kk = 0; kk < kb; kk++) a[kk] += xv * (double)wc[kk];
        }
    }
}

int ref_conv_fwd(const ps_conv_desc *d, const float *src, const float *weights,
                 const float *bias, double *dst)
{
    const int64_t N = d->N, C = d->C, K = d->K, H = d->H, W = d->W, R = d->R, S = d->S;
    int64_t OH, OW;
    ref_conv_out_size(d, &OH, &OW);

    /* Weights to RSCK (K contiguous). */
    size_t wn = (size_t)K * (size_t)C * (size_t)R * (size_t)S;
    float *wr = malloc(wn * sizeof *wr);
    if (!wr) return -1;
    #pragma omp parallel for collapse(2)
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t s = 0; s < S; s++) {
                    size_t from;
                    switch (d->weight_layout) {
                    case PS_WEIGHTS_KRSC: from = (size_t)(((k * R + r) * S + s) * C + c); break;
                    case PS_WEIGHTS_RSCK: from = (size_t)(((r * S + s) * C + c) * K + k); break;
                    case PS_WEIGHTS_KCRS:
                    default: from = (size_t)(((k * C + c) * R + r) * S + s); break;
                    }
                    wr[(size_t)(((r * S + s) * C + c) * K + k)] = weights[from];
                }

    /* Source to NHWC (C contiguous). */
    const float *in = src;
    float *in_copy = NULL;
    if (d->layout == PS_LAYOUT_NCHW) {
        in_copy = malloc((size_t)N * (size_t)H * (size_t)W * (size_t)C * sizeof *in_copy);
        if (!in_copy) {
            free(wr);
            return -1;
        }
        #pragma omp parallel for collapse(2)
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++)
                    for (int64_t c = 0; c < C; c++)
                        in_copy[(size_t)(((n * H + h) * W + w) * C + c)] =
                            src[(size_t)(((n * C + c) * H + h) * W + w)];
        in = in_copy;
    }

    int failed = 0;
    #pragma omp parallel
    {
        double *acc = malloc((size_t)CONV_OWB * CONV_KB * sizeof *acc);
        if (!acc) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for collapse(2) schedule(dynamic)
        for (int64_t n = 0; n < N; n++)
            for (int64_t oh = 0; oh < OH; oh++) {
                if (!acc) continue;
                for (int64_t ow0 = 0; ow0 < OW; ow0 += CONV_OWB) {
                    int ob = (int)(OW - ow0 < CONV_OWB ? OW - ow0 : CONV_OWB);
                    for (int64_t k0 = 0; k0 < K; k0 += CONV_KB) {
                        int kb = (int)(K - k0 < CONV_KB ? K - k0 : CONV_KB);
                        memset(acc, 0, (size_t)CONV_OWB * CONV_KB * sizeof *acc);
                        for (int64_t r = 0; r < R; r++) {
                            int64_t ih = oh * d->stride_h - d->pad_top + r * d->dilation_h;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t s = 0; s < S; s++) {
                                const float *x[CONV_OWB];
                                int o_idx[CONV_OWB], n_o = 0;
                                for (int o = 0; o < ob; o++) {
                                    int64_t iw = (ow0 + o) * d->stride_w - d->pad_left + s * d->dilation_w;
                                    if (iw < 0 || iw >= W) continue;
                                    x[n_o] = in + (size_t)(((n * H + ih) * W + iw) * C);
                                    o_idx[n_o++] = o;
                                }
                                if (n_o)
                                    conv_block(acc, x, o_idx, n_o, wr + (size_t)((r * S + s) * C * K + k0),
                                               C, K, kb);
                            }
                        }
                        for (int o = 0; o < ob; o++) {
                            int64_t ow = ow0 + o;
                            for (int kk = 0; kk < kb; kk++) {
                                int64_t k = k0 + kk;
                                double v = acc[(size_t)o * CONV_KB + (size_t)kk];
                                if (d->post_ops & PS_POST_BIAS) v += (double)bias[k];
                                if ((d->post_ops & (PS_POST_RELU | PS_POST_RELU6)) && v < 0.0) v = 0.0;
                                if ((d->post_ops & PS_POST_RELU6) && v > 6.0) v = 6.0;
                                size_t at = d->layout == PS_LAYOUT_NCHW
                                                ? (size_t)(((n * K + k) * OH + oh) * OW + ow)
                                                : (size_t)(((n * OH + oh) * OW + ow) * K + k);
                                dst[at] = v;
                            }
                        }
                    }
                }
            }
        free(acc);
    }
    free(in_copy);
    free(wr);
    return failed ? -1 : 0;
}

static size_t span(ps_matrix_order order, int64_t rows, int64_t cols, int64_t ld)
{
    if (rows == 0 || cols == 0) return 0;
    return order == PS_COL_MAJOR ? (size_t)(ld * (cols - 1) + rows) : (size_t)(ld * (rows - 1) + cols);
}

int ref_gemm_geometry(const ps_gemm_desc *g, ref_gemm_geom *geom)
{
    /* Stored shapes: A is M x K (K x M when transposed), B is K x N (N x K), C is M x N. */
    int64_t ar = g->trans_a ? g->K : g->M, ac = g->trans_a ? g->M : g->K;
    int64_t br = g->trans_b ? g->N : g->K, bc = g->trans_b ? g->K : g->N;
    int64_t dims[3][2] = {{ar, ac}, {br, bc}, {g->M, g->N}};
    int64_t lds[3] = {g->lda, g->ldb, g->ldc};
    int64_t eff[3];
    size_t elems[3];
    for (int i = 0; i < 3; i++) {
        int64_t rows = dims[i][0], cols = dims[i][1];
        int64_t tight = g->order == PS_COL_MAJOR ? rows : cols;
        int64_t ld = lds[i] ? lds[i] : tight;
        if (ld < tight || ld < 1) return -1;
        int64_t outer = g->order == PS_COL_MAJOR ? cols : rows;
        int64_t f[2] = {ld, outer};
        size_t total;
        if (!cli_mul_size(&total, f, 2)) return -1;
        eff[i] = ld;
        elems[i] = span(g->order, rows, cols, ld);
    }
    geom->lda = eff[0];
    geom->ldb = eff[1];
    geom->ldc = eff[2];
    geom->a_elems = elems[0];
    geom->b_elems = elems[1];
    geom->c_elems = elems[2];
    return 0;
}

/* acc[ii][jj] += A(i0+ii, p) * Bt[p][j0+jj] over p. */
REF_CLONES
static void gemm_block(double *restrict acc, const float *restrict a, int64_t sai, int64_t sap,
                       const float *restrict bt, int64_t N, int64_t K, int ib, int jb)
{
    for (int64_t p = 0; p < K; p++) {
        const float *restrict brow = bt + p * N;
        for (int ii = 0; ii < ib; ii++) {
            double av = (double)a[ii * sai + p * sap];
            double *restrict arow = acc + (size_t)ii * GEMM_JB;
            for (int jj = 0; jj < jb; jj++) arow[jj] += av * (double)brow[jj];
        }
    }
}

int ref_gemm(const ps_gemm_desc *g, const float *a, const float *b, const float *c0, double *c)
{
    ref_gemm_geom geom;
    if (ref_gemm_geometry(g, &geom)) return -1;
    const int64_t M = g->M, N = g->N, K = g->K;
    const int col = g->order == PS_COL_MAJOR;
    /* Element (r, c) of a stored matrix: col-major r + c*ld, row-major r*ld + c.
     * op(X)(i, j) = X(i, j), or X(j, i) when transposed. */
    int64_t sai, sap, sbp, sbj, sci, scj;
    if (col != !!g->trans_a) { sai = 1; sap = geom.lda; } else { sai = geom.lda; sap = 1; }
    if (col != !!g->trans_b) { sbp = 1; sbj = geom.ldb; } else { sbp = geom.ldb; sbj = 1; }
    if (col) { sci = 1; scj = geom.ldc; } else { sci = geom.ldc; scj = 1; }

    /* op(B) row-major with N contiguous. */
    const float *bt = b;
    float *b_copy = NULL;
    if (!(sbj == 1 && sbp == N)) {
        int64_t f[2] = {K, N};
        size_t n;
        if (!cli_mul_size(&n, f, 2) || !(b_copy = malloc((n ? n : 1) * sizeof *b_copy))) return -1;
        #pragma omp parallel for
        for (int64_t p = 0; p < K; p++)
            for (int64_t j = 0; j < N; j++) b_copy[(size_t)(p * N + j)] = b[(size_t)(p * sbp + j * sbj)];
        bt = b_copy;
    }

    for (size_t i = 0; i < geom.c_elems; i++) c[i] = (double)c0[i];

    int failed = 0;
    #pragma omp parallel
    {
        double *acc = malloc((size_t)GEMM_IB * GEMM_JB * sizeof *acc);
        if (!acc) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for collapse(2) schedule(dynamic)
        for (int64_t i0 = 0; i0 < M; i0 += GEMM_IB)
            for (int64_t j0 = 0; j0 < N; j0 += GEMM_JB) {
                if (!acc) continue;
                int ib = (int)(M - i0 < GEMM_IB ? M - i0 : GEMM_IB);
                int jb = (int)(N - j0 < GEMM_JB ? N - j0 : GEMM_JB);
                memset(acc, 0, (size_t)GEMM_IB * GEMM_JB * sizeof *acc);
                gemm_block(acc, a + i0 * sai, sai, sap, bt + j0, N, K, ib, jb);
                for (int ii = 0; ii < ib; ii++)
                    for (int jj = 0; jj < jb; jj++) {
                        size_t at = (size_t)((i0 + ii) * sci + (j0 + jj) * scj);
                        double v = (double)g->alpha * acc[(size_t)ii * GEMM_JB + (size_t)jj];
                        if (g->beta != 0.0f) v += (double)g->beta * (double)c0[at];
                        c[at] = v;
                    }
            }
        free(acc);
    }
    free(b_copy);
    return failed ? -1 : 0;
}

void ref_compare(const float *out, const double *ref, size_t n, ref_cmp *res)
{
    double max_err = 0.0, max_ref = 0.0;
    size_t worst = 0, nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs(ref[i]);
        if (r > max_ref) max_ref = r;
        double o = (double)out[i];
        double e;
        if (!isfinite(o)) {
            nonfinite++;
            e = INFINITY;
        } else {
            e = fabs(o - ref[i]);
        }
        if (e > max_err) {
            max_err = e;
            worst = i;
        }
    }
    res->max_abs_err = max_err;
    res->max_abs_ref = max_ref;
    res->rel_err = max_err / (max_ref > 0.0 ? max_ref : 1.0);
    res->worst = worst;
    res->n_nonfinite = nonfinite;
}
