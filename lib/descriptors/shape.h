/* Internal: derived sizes of validated descriptors. */
#ifndef PS_DESCRIPTORS_SHAPE_H
#define PS_DESCRIPTORS_SHAPE_H

#include <stdint.h>
#include "polysci/desc.h"

/* Convolution geometry in the canonical NHWC view used by the executor,
 * the variant space and the models: 1x1 stride-1 unpadded convolutions are
 * seen as one image row of H*W pixels (H = OH = 1). Strided 1x1 unpadded
 * convolutions with narrow output rows and many output channels (below) are seen
 * as the stride-1 1x1 over their subsampled input (sub_h, sub_w > 1: the
 * executor first copies pixel (y * sub_h, x * sub_w) of each image to
 * (y, x) of a dense OH x OW copy), so calls span several output rows
 * instead of one short row each. src_H x src_W is the user's input image. */
typedef struct ps_conv_shape {
    int64_t N, C, K, H, W, R, S, OH, OW;
    int64_t ldo;          /* floats from one output pixel to the next (NHWC): K, or the desc's dst_pixel_stride */
    int64_t sh, sw, pt, pl, dh, dw;
    int64_t src_H, src_W; /* the user's input image */
    int64_t sub_h, sub_w; /* > 1: the executor reads a subsampled copy (above); else 1 */
    int padded_copy;      /* the executor reads a zero-padded copy (ps_conv_merge_taps_view):
                             W is the copy's width, pl = 0 */
    int64_t copy_pl;      /* padded_copy: the copy's zero columns left of the user's image */
} ps_conv_shape;

/* Strided 1x1 convs whose output rows are narrower than PS_SUBSAMPLE_MAX_OW
 * and that compute at least 2 * PS_SUBSAMPLE_MIN_K flops per copied input
 * float run over a subsampled copy of their input (ps_conv_shape). Measured
 * on an Intel Xeon (2 threads), each layer's plan with and without the copy:
 * OW = 7 and 14 with K >= 512 gained 3-12%; OW = 28, or K = 128 / 256, lost
 * 3-12% to the copy (ResNet-50's strided 1x1 layers: `bash bench/ab.sh OLD
 * NEW 3 /tmp/ab -- conv --layers resnet50 --only resnet_1 --N 2`). */
#define PS_SUBSAMPLE_MAX_OW 28
#define PS_SUBSAMPLE_MIN_K 512

void ps_conv_shape_of(const ps_conv_desc *d, ps_conv_shape *s);
/* Few input channels and a wide filter. */
static inline int ps_conv_few_channels(const ps_conv_shape *s) { return s->C <= 16 && s->S > 1; }

/* Few channels, and the executor merges the taps of a filter row: one call
 * reduces over (valid taps x C) floats read in place, which adjacent taps
 * (no dilation) make contiguous, instead of C per tap (lib/execution/build.c;
 * it also needs the whole C in one kernel block). The price is q = ceil(S/sw)
 * calls per column block, each over every q-th column (engine.h). Measured
 * (VM, 2 threads; R*K/sh): merged wins on the first layers of ResNet-50,
 * AlexNet, OverFeat, Fast R-CNN, VGG-A (176-264) and loses on mobilenet_01
 * (3x3/2, K = 32: 48). The rule dates from an earlier form that copied the
 * taps side by side (copy cost ~ 1 / (R*K/sh)); docs/expert-rules.md. */
static inline int ps_conv_merges_taps(const ps_conv_shape *s)
{
    return ps_conv_few_channels(s) && s->dw == 1 && s->R * s->K >= 128 * s->sh;
}

/* Merged taps: calls per column block, q = ceil(S / sw) (each over every q-th
 * column, so that a column's S*C floats do not overlap the next one's). */
static inline int64_t ps_conv_tap_phases(const ps_conv_shape *s) { return (s->S + s->sw - 1) / s->sw; }

/* Merged taps with horizontal padding read a zero-padded copy of the input
 * (lib/execution/build.c): the copy's width, (OW - 1) * sw + S columns from
 * input column -pl, so that every column reduces over all S taps; 0 when the
 * taps of every column lie inside the image. Call only for merged taps. */
static inline int64_t ps_conv_hpad_width(const ps_conv_shape *s)
{
    return s->pl > 0 || (s->OW - 1) * s->sw - s->pl + s->S > s->W ? (s->OW - 1) * s->sw + s->S : 0;
}

/* Whether kernels with k-channel blocks merge the taps (the whole C in one
 * block, and ps_conv_merges_taps). If they do and the conv has horizontal
 * padding, *s becomes the conv the executor runs: the unpadded one over the
 * zero-padded copy (W its width, pl = 0, padded_copy). The one rule for the
 * executor (build.c), the analysis model and the test simulator. */
static inline int ps_conv_merge_taps_view(ps_conv_shape *s, int64_t k)
{
    if ((s->C + k - 1) / k != 1 || !ps_conv_merges_taps(s)) return 0;
    const int64_t width = ps_conv_hpad_width(s);
    if (width) {
        s->padded_copy = 1;
        s->copy_pl = s->pl;
        s->W = width;
        s->pl = 0;
    }
    return 1;
}

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

/* Fewest kernel blocks a band tile needs along a side it cuts for panels:
 * each chunk's panel of the other operand is packed once per tile and read
 * by that many kernel calls (1024x1024x32768 with 8 x 2 tiles ran at 0.65x
 * dnnl_sgemm with panels, 0.74-0.83x with the packing pass). A side the
 * tile spans whole is exempt: its operand's panel is packed once in all. */
#define PS_GEMM_PANEL_MIN_BLOCKS 8

/* Whether the executor packs per-thread panels instead of a packing pass
 * (ps_exec.panels, given a schedule that suits them), with the expert's
 * large band tiles (ps_expert_schedule): where both operands are larger
 * than the last-level cache (llc_bytes; 0 = unknown: no), or the larger one
 * is at least panel_bytes (ps_machine_panel_bytes; 0 = no). Then a copy made
 * ahead of the kernels cannot stay in cache until they read it: the pass
 * costs an operand a write and a re-read from memory, the panels one read.
 * Measured on 1024x1024x32768 (VM, 2 threads; 256 MB of operands, 32 MiB
 * L3) and on the Xeon VM's one-large-operand shapes: docs/expert-rules.md. */
static inline int ps_gemm_panels_pay(const ps_gemm_shape *g, size_t llc_bytes, size_t panel_bytes)
{
    const double a = (double)g->M * (double)g->K * sizeof(float), b = (double)g->K * (double)g->N * sizeof(float);
    if (llc_bytes && a > (double)llc_bytes && b > (double)llc_bytes) return 1;
    return panel_bytes && (a > b ? a : b) >= (double)panel_bytes;
}

/* Most column blocks of C (of the normalized problem) for which the executor
 * reads A in place instead of packing it: packing costs a full read and
 * write of A, and with few reuses the kernels read it faster where it is
 * (measured, row-major, 2 threads: 256x256x2048 (4 column blocks) 318 -> 397
 * GFLOP/s, 128x2048x4096 (2) 262 -> 282; with 5, 320x3072x4096, packing
 * still won, 308 to 280). */
#define PS_GEMM_A_IN_PLACE_MAX_COL_BLOCKS 4

/* Whether the executor's packing pass leaves the normalized A where the user
 * put it (per-thread panels, where ps_gemm_panels_pay and the schedule suit
 * them, pack it regardless). Transposes and alpha need the copy: LIBXSMM's
 * kernels take neither. col_blocks: C's column blocks under the kernel. */
static inline int ps_gemm_a_in_place(const ps_gemm_shape *g, int64_t col_blocks)
{
    return !g->trans_a && g->alpha == 1.0f && col_blocks <= PS_GEMM_A_IN_PLACE_MAX_COL_BLOCKS;
}

/* The canonical problem of a valid descriptor, formed once at the API
 * boundary (ps_problem_of) and handed down whole, the way a oneDNN primitive
 * descriptor is: the planner, the expert rules, the variant space, the
 * rankers and the executor take it and neither validate the descriptor again
 * nor recompute its shape. */
typedef struct ps_problem {
    ps_desc desc;       /* the user's descriptor: layouts, post-ops, a GEMM's rows and columns as the user sees them */
    ps_conv_shape conv; /* PS_OP_CONV_FWD: the canonical geometry (ps_conv_shape_of) */
    ps_gemm_shape gemm; /* PS_OP_GEMM: the normalized column-major problem (ps_gemm_shape_of) */
} ps_problem;

/* Validates desc (ps_desc_validate: the same checks, codes and messages) and
 * derives its canonical shape into *p; *p is written only on success. */
ps_status ps_problem_of(const ps_desc *desc, ps_problem *p);

/* Element counts (validated: they fit in int64 and size_t bytes). */
int64_t ps_conv_src_elems(const ps_conv_shape *s);
int64_t ps_conv_dst_elems(const ps_conv_shape *s);
int64_t ps_conv_weight_elems(const ps_conv_shape *s);

#endif
