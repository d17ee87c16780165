/* Internal: derived sizes of validated descriptors. */
#ifndef PS_DESCRIPTORS_SHAPE_H
#define PS_DESCRIPTORS_SHAPE_H

#include <stdint.h>
#include "polysci/desc.h"

/* Convolution geometry in the canonical NHWC view used by the executor,
 * the variant space and the models: 1x1 stride-1 unpadded convolutions are
 * seen as one image row of H*W pixels (H = OH = 1). */
typedef struct ps_conv_shape {
    int64_t N, C, K, H, W, R, S, OH, OW;
    int64_t sh, sw, pt, pl, dh, dw;
} ps_conv_shape;

void ps_conv_shape_of(const ps_conv_desc *d, ps_conv_shape *s);
/* Few input channels and a wide filter: the executor expands each input row
 * so one call reduces over S*C (filter taps x channels) instead of C alone
 * (lib/execution/build.c; it also needs the whole C in one kernel block). */
static inline int ps_conv_few_channels(const ps_conv_shape *s) { return s->C <= 16 && s->S > 1; }

/* The user-visible output size (no canonical reshaping). */
void ps_conv_output_dims(const ps_conv_desc *d, int64_t *OH, int64_t *OW);

/* A GEMM normalized to column-major C[M x N] += A[M x K] * B[K x N]:
 * row-major problems are transposed (C^T = B^T A^T), so `swap` says whether
 * the user's A and B trade places. trans_a/trans_b are then relative to the
 * normalized operands. */
typedef struct ps_gemm_shape {
    int64_t M, N, K, lda, ldb, ldc;
    int trans_a, trans_b, swap;
    float alpha, beta;
} ps_gemm_shape;

void ps_gemm_shape_of(const ps_gemm_desc *d, ps_gemm_shape *s);

/* Element counts (validated: they fit in int64 and size_t bytes). */
int64_t ps_conv_src_elems(const ps_conv_shape *s);
int64_t ps_conv_dst_elems(const ps_conv_shape *s);
int64_t ps_conv_weight_elems(const ps_conv_shape *s);

#endif
