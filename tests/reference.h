/* Test-only references: plain double-precision conv forward and GEMM, and a
 * comparison helper with a stated error bound.
 *
 * Every reference output comes with a "magnitude" array: for each output
 * element, the sum of |term| over everything that was added to make it
 * (|src*w| over the reduction, |bias|; for GEMM |alpha|*sum|a*b| + |beta*c|),
 * and the reduction length L. ref_compare() accepts
 *     |got - ref| <= ref_tolerance(L) * magnitude + REF_TINY.
 * See reference.c for why that bound is what a correct f32 implementation
 * meets and what a wrong one cannot. */
#ifndef PS_TESTS_REFERENCE_H
#define PS_TESTS_REFERENCE_H

#include <stddef.h>
#include <stdint.h>
#include "polysci/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Absolute slack for results that are exactly 0 in exact arithmetic
 * (e.g. an output that sees only padding and no bias). */
#define REF_TINY 1e-30

/* Output spatial size; returns 0 when the output would be empty. */
int ref_conv_out_size(const ps_conv_desc *c, int64_t *OH, int64_t *OW);

/* Index of element (n, ch, h, w) of an N x CH x H x W activation. */
int64_t ref_act_index(ps_act_layout layout, int64_t CH, int64_t H, int64_t W,
                      int64_t n, int64_t ch, int64_t h, int64_t w);
/* Index of weight (k, c, r, s) of a K x C x R x S filter in the given layout. */
int64_t ref_weight_index(ps_weight_layout layout, int64_t K, int64_t C, int64_t R, int64_t S,
                         int64_t k, int64_t c, int64_t r, int64_t s);

/* Conv forward in double. src, weights in the desc's layouts; bias (K) used
 * only when PS_POST_BIAS. dst and mag receive N*K*OH*OW values in desc
 * layout; *L (optional) receives the reduction length C*R*S (+1 with bias). */
void ref_conv_fwd(const ps_conv_desc *c, const float *src, const float *weights,
                  const float *bias, double *dst, double *mag, int64_t *L);

/* Extents of a GEMM operand as stored (rows, cols in storage order terms):
 * minimum legal leading dimension for A, B, C, and the element count a
 * buffer with leading dimension ld must hold. */
int64_t ref_gemm_min_ld(const ps_gemm_desc *g, char which);
int64_t ref_gemm_buffer_elems(const ps_gemm_desc *g, char which, int64_t ld);
/* Effective leading dimension (0 = tight). */
int64_t ref_gemm_ld(const ps_gemm_desc *g, char which);
/* Storage offset of logical element (i, j) of op(A) (which='a': M x K),
 * op(B) ('b': K x N) or C ('c': M x N). */
int64_t ref_gemm_index(const ps_gemm_desc *g, char which, int64_t i, int64_t j);

/* C = alpha*op(A)*op(B) + beta*C in double. c_in is the C buffer before the
 * call; ref and mag receive one value per logical element, column-major
 * M x N (index i + j*M), regardless of the desc's order. beta == 0 does not
 * read C (BLAS convention). *L receives K + 2. */
void ref_gemm(const ps_gemm_desc *g, const float *a, const float *b, const float *c_in,
              double *ref, double *mag, int64_t *L);

/* Relative tolerance for a reduction of length L, see reference.c. */
double ref_tolerance(int64_t L);

typedef struct ref_cmp {
    double max_norm_err;  /* max over elements of |got-ref| / (tol*mag + tiny) — <= 1 passes */
    double max_rel_err;   /* max of |got-ref| / mag (0 where mag == 0) */
    int64_t n_bad;        /* elements outside the bound (NaN counts as bad) */
    int64_t first_bad;    /* index of the first bad element, -1 if none */
    double first_got, first_ref;
} ref_cmp;

/* Compares n floats against references. */
void ref_compare(const float *got, const double *ref, const double *mag, int64_t n,
                 int64_t L, ref_cmp *out);

#ifdef __cplusplus
}
#endif
#endif
