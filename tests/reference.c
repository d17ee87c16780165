#include "reference.h"

#include <float.h>
#include <math.h>

/* ---------------------------------------------------------------- tolerance
 *
 * All inputs are f32 values and the reference is computed in double from
 * exactly those values, so the only error is the f32 arithmetic of the code
 * under test. A length-L reduction of terms t_i done in f32 (any order, any
 * blocking, with or without FMA, partial sums spilled to f32 memory between
 * reduction chunks) satisfies the classical bound
 *     |err| <= gamma_L * sum|t_i|,   gamma_L = L*u/(1 - L*u),  u = 2^-24,
 * which is far too loose to catch bugs (for L = 600 it is 3.6e-5 relative,
 * while dropping one of 600 similar terms is only ~1.7e-3). The rounding
 * errors of real summations behave like independent zero-mean variables, so
 * the error grows like sqrt(L)*u (Higham & Mary, "A new approach to
 * probabilistic rounding error analysis", SISC 2019: |err| <= lambda*sqrt(L)*u
 * * sum|t_i| with probability >= 1 - 2exp(-lambda^2/2)). We use
 *     tol(L) = 8 * u * sqrt(L) + 2 * u   ( = 4*FLT_EPSILON*sqrt(L) + FLT_EPSILON )
 * i.e. lambda = 8: a failure probability below 1e-13 per element for a
 * correct implementation (and the +2u covers the final roundings: the f32
 * product, alpha/beta scaling, bias add). With random mixed-sign data the
 * observed maximum normalized error over thousands of shapes is 0.1-0.3 of
 * this bound (the random tests print it). A real indexing bug (a missing, duplicated or misplaced term of
 * typical size) costs about sum|t_i|/L, i.e. a normalized error of
 * 1/(L*tol(L)) ~ 2e6/L^1.5: >= 60 for L <= 1000 (almost every test shape),
 * still >= 8 at L = 4000. */
double ref_tolerance(int64_t L)
{
    const double u = (double)FLT_EPSILON / 2.0;
    if (L < 1) L = 1;
    return 8.0 * u * sqrt((double)L) + 2.0 * u;
}

void ref_compare(const float *got, const double *ref, const double *mag, int64_t n,
                 int64_t L, ref_cmp *out)
{
    const double tol = ref_tolerance(L);
    out->max_norm_err = 0;
    out->max_rel_err = 0;
    out->n_bad = 0;
    out->first_bad = -1;
    out->first_got = 0;
    out->first_ref = 0;
    for (int64_t i = 0; i < n; i++) {
        const double g = (double)got[i];
        const double err = fabs(g - ref[i]);
        const double bound = tol * mag[i] + REF_TINY;
        double norm = err / bound;
        if (!(err <= bound)) { /* also catches NaN */
            if (isnan(norm) || isnan(g)) norm = INFINITY;
            if (out->first_bad < 0) {
                out->first_bad = i;
                out->first_got = g;
                out->first_ref = ref[i];
            }
            out->n_bad++;
        }
        if (norm > out->max_norm_err) out->max_norm_err = norm;
        if (mag[i] > 0 && err / mag[i] > out->max_rel_err) out->max_rel_err = err / mag[i];
    }
}

/* ---------------------------------------------------------------- conv */

int ref_conv_out_size(const ps_conv_desc *c, int64_t *OH, int64_t *OW)
{
    const int64_t eh = (c->R - 1) * c->dilation_h + 1;
    const int64_t ew = (c->S - 1) * c->dilation_w + 1;
    const int64_t ph = c->H + c->pad_top + c->pad_bottom - eh;
    const int64_t pw = c->W + c->pad_left + c->pad_right - ew;
    if (ph < 0 || pw < 0) return 0;
    *OH = ph / c->stride_h + 1;
    *OW = pw / c->stride_w + 1;
    return 1;
}

int64_t ref_act_index(ps_act_layout layout, int64_t CH, int64_t H, int64_t W,
                      int64_t n, int64_t ch, int64_t h, int64_t w)
{
    if (layout == PS_LAYOUT_NCHW) return ((n * CH + ch) * H + h) * W + w;
    return ((n * H + h) * W + w) * CH + ch; /* NHWC */
}

int64_t ref_weight_index(ps_weight_layout layout, int64_t K, int64_t C, int64_t R, int64_t S,
                         int64_t k, int64_t c, int64_t r, int64_t s)
{
    switch (layout) {
    case PS_WEIGHTS_KRSC: return ((k * R + r) * S + s) * C + c;
    case PS_WEIGHTS_RSCK: return ((r * S + s) * C + c) * K + k;
    case PS_WEIGHTS_KCRS:
    default: return ((k * C + c) * R + r) * S + s;
    }
}

void ref_conv_fwd(const ps_conv_desc *c, const float *src, const float *weights,
                  const float *bias, double *dst, double *mag, int64_t *L)
{
    int64_t OH = 0, OW = 0;
    if (!ref_conv_out_size(c, &OH, &OW)) return;
    const int use_bias = (c->post_ops & PS_POST_BIAS) != 0;
    const int use_relu = (c->post_ops & (PS_POST_RELU | PS_POST_RELU6)) != 0, use_relu6 = (c->post_ops & PS_POST_RELU6) != 0;
    if (L) *L = c->C * c->R * c->S + (use_bias ? 1 : 0);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t k = 0; k < c->K; k++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = 0, m = 0;
                    for (int64_t r = 0; r < c->R; r++) {
                        const int64_t ih = oh * c->stride_h - c->pad_top + r * c->dilation_h;
                        if (ih < 0 || ih >= c->H) continue;
                        for (int64_t s = 0; s < c->S; s++) {
                            const int64_t iw = ow * c->stride_w - c->pad_left + s * c->dilation_w;
                            if (iw < 0 || iw >= c->W) continue;
                            for (int64_t ch = 0; ch < c->C; ch++) {
                                const double x = src[ref_act_index(c->layout, c->C, c->H, c->W,
                                                                   n, ch, ih, iw)];
                                const double w = weights[ref_weight_index(c->weight_layout, c->K, c->C,
                                                                          c->R, c->S, k, ch, r, s)];
                                acc += x * w;
                                m += fabs(x * w);
                            }
                        }
                    }
                    if (use_bias) {
                        acc += bias[k];
                        m += fabs((double)bias[k]);
                    }
                    if (use_relu && acc < 0) acc = 0;
                    if (use_relu6 && acc > 6) acc = 6;
                    const int64_t o = ref_act_index(c->layout, c->K, OH, OW, n, k, oh, ow);
                    dst[o] = acc;
                    mag[o] = m;
                }
}

/* ---------------------------------------------------------------- gemm */

/* Stored shape of an operand: rows x cols of the matrix as it lies in memory
 * (before the order is applied). */
static void stored_dims(const ps_gemm_desc *g, char which, int64_t *rows, int64_t *cols)
{
    switch (which) {
    case 'a':
        *rows = g->trans_a ? g->K : g->M;
        *cols = g->trans_a ? g->M : g->K;
        break;
    case 'b':
        *rows = g->trans_b ? g->N : g->K;
        *cols = g->trans_b ? g->K : g->N;
        break;
    default:
        *rows = g->M;
        *cols = g->N;
        break;
    }
}

int64_t ref_gemm_min_ld(const ps_gemm_desc *g, char which)
{
    int64_t rows, cols;
    stored_dims(g, which, &rows, &cols);
    const int64_t ld = g->order == PS_ROW_MAJOR ? cols : rows;
    return ld < 1 ? 1 : ld;
}

int64_t ref_gemm_ld(const ps_gemm_desc *g, char which)
{
    const int64_t ld = which == 'a' ? g->lda : which == 'b' ? g->ldb : g->ldc;
    return ld == 0 ? ref_gemm_min_ld(g, which) : ld;
}

int64_t ref_gemm_buffer_elems(const ps_gemm_desc *g, char which, int64_t ld)
{
    int64_t rows, cols;
    stored_dims(g, which, &rows, &cols);
    if (g->order == PS_ROW_MAJOR) return ld * (rows - 1) + cols;
    return ld * (cols - 1) + rows;
}

int64_t ref_gemm_index(const ps_gemm_desc *g, char which, int64_t i, int64_t j)
{
    const int trans = which == 'a' ? g->trans_a : which == 'b' ? g->trans_b : 0;
    const int64_t r = trans ? j : i, c = trans ? i : j;
    const int64_t ld = ref_gemm_ld(g, which);
    return g->order == PS_ROW_MAJOR ? r * ld + c : r + c * ld;
}

void ref_gemm(const ps_gemm_desc *g, const float *a, const float *b, const float *c_in,
              double *ref, double *mag, int64_t *L)
{
    const double alpha = g->alpha, beta = g->beta;
    if (L) *L = g->K + 2;
    for (int64_t j = 0; j < g->N; j++)
        for (int64_t i = 0; i < g->M; i++) {
            double acc = 0, m = 0;
            for (int64_t p = 0; p < g->K; p++) {
                const double t = (double)a[ref_gemm_index(g, 'a', i, p)] *
                                 (double)b[ref_gemm_index(g, 'b', p, j)];
                acc += t;
                m += fabs(t);
            }
            double v = alpha * acc, mv = fabs(alpha) * m;
            if (beta != 0) {
                const double cv = beta * (double)c_in[ref_gemm_index(g, 'c', i, j)];
                v += cv;
                mv += fabs(cv);
            }
            ref[i + j * g->M] = v;
            mag[i + j * g->M] = mv;
        }
}
