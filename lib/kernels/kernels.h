/* Internal: row kernels of the stage-graph executor.
 *
 * Execution computes every stage of a tile one output row (of one channel)
 * at a time, in contiguous float rows held in L1/L2; these are the only
 * loops that touch elements. One source (rows_isa.c) is compiled once per
 * instruction set (AVX-512, AVX2 + FMA, baseline x86-64) and the planner
 * picks the table the machine model's vector width calls for, so nothing is
 * decided per element and the library still runs on machines without
 * AVX-512.
 *
 * Arithmetic: taps are accumulated in the order given, each as a fused
 * multiply-add where the instruction set has one (-ffp-contract=fast); no
 * reassociation, so every tiling of the same stage gives bit-identical rows. */
#ifndef PS_KERNELS_H
#define PS_KERNELS_H

#include <stdint.h>

#include "polysci/expr.h"

/* Floats per pointwise chunk: the registers of an expression program
 * (ps_vprog) hold this many values each, so a program of R registers
 * keeps R KiB in L1. */
#define PS_VCHUNK 256

/* Output pixels of one batch-reduce GEMM call of a convolution on pixel
 * rows (the executor's register-blocked n; each call streams all the
 * convolution's weights, which the fusion cost model charges). */
#define PS_CONV_NB 16

/* One operation of a lowered pointwise expression. Operands are registers
 * (>= 0), the expression's inputs (PS_VOP_INPUT(i)) or constants
 * (PS_VOP_CONST, value in k[]). dst is a register, or PS_VOP_OUT for the
 * stage's output row. */
#define PS_VOP_CONST (-1)
#define PS_VOP_OUT (-2)
#define PS_VOP_INPUT(i) (-16 - (i))
#define PS_VOP_IS_INPUT(a) ((a) <= -16)
#define PS_VOP_INPUT_INDEX(a) (-16 - (a))

/* Fused operations lowering forms from common subtrees, one pass over a
 * chunk where the tree takes two or three (a product whose only reader is
 * a sum, a comparison whose only reader is a select): codes beyond
 * ps_expr_op's. Their constant operands are registers filled once per
 * call (ps_vprog.consts). */
enum {
    PS_VOP_FMA = 100,    /* a * b + c */
    PS_VOP_FMS = 101,    /* a * b - c */
    PS_VOP_FNMA = 102,   /* c - a * b */
    PS_VOP_MAM = 103,    /* a * b + c * d */
    PS_VOP_MSM = 104,    /* a * b - c * d */
    PS_VOP_SELCMP = 105, /* cmp(a, b) ? c : d, cmp = the ps_expr_op comparison in ps_vop.cmp */
    PS_VOP_ABSDIFF = 106 /* |a - b| */
};

typedef struct ps_vop {
    int op;              /* a ps_expr_op, or a PS_VOP_* fused operation */
    int dst;
    int a[4];
    float k[4];
    int cmp;             /* PS_VOP_SELCMP: the comparison */
} ps_vop;

/* A program compiled to straight-line code (lib/codegen): out[i] for i < n. */
typedef void (*ps_vprog_fn)(float *restrict out, const float *const *in, int64_t n);

typedef struct ps_vprog {
    ps_vprog_fn fn;      /* compiled at plan time, or NULL: the kernels interpret ops */
    int n_ops;
    int n_regs;          /* registers, the constant registers included */
    ps_vop *ops;
    int n_consts;        /* registers holding a constant, filled once per call */
    int *const_reg;
    float *const_val;
} ps_vprog;

/* Taps of sum_runs: at most this many in all (its fallback expands them),
 * and at most PS_SUM_RUNS_MAX_TRIPLES triples. */
#define PS_SUM_RUNS_MAX_TAPS 32
#define PS_SUM_RUNS_MAX_TRIPLES 3
/* Taps of sum_pair: at most this many. */
#define PS_SUM_PAIR_MAX_TAPS 64

/* Input channels up to which 1 x 1 convolutions run ps_row_kernels.px_small_gemm
 * (the layer executor's small_1x1, a fused convolution's pixel rows). */
#define PS_SMALL_GEMM_MAX_C 64

typedef struct ps_row_kernels {
    const char *isa;
    int vector_floats;  /* floats per vector register */
    /* out[i] = init + sum_t w[t] * src[t][i * step], i < n */
    void (*sum)(float *restrict out, int64_t n, const float *const *src, const float *w, int n_taps, int step,
                float init);
    /* out[i] = max (or min) over t of w[t] * src[t][i * step] */
    void (*maxmin)(float *restrict out, int64_t n, const float *const *src, const float *w, int n_taps, int step,
                   int is_max);
    /* Runs prog over n points: in[j] is input j's row, out the output row;
     * regs: prog->n_regs buffers of PS_VCHUNK floats. */
    void (*vprog)(const ps_vprog *prog, float *restrict out, const float *const *in, int64_t n, float *regs);
    /* out[i] = src[(first + i) >> 1] - src[first >> 1] indexing: out[i] = src[((parity + i) >> 1)], i < n */
    void (*up2_nearest)(float *restrict out, int64_t n, const float *src, int parity);
    /* Vertical half of bilinear x2: out[i] = 0.75 a[i] + 0.25 f[i] (a the
     * nearer coarse row), contracted where the table contracts. */
    void (*up2_bilinear_v)(float *restrict out, int64_t n, const float *a, const float *f);
    /* Horizontal half of bilinear x2: for output columns 2j (parity 0) the
     * value 0.75 v[j] + 0.25 v[j - 1], for 2j + 1 0.75 v[j] + 0.25 v[j + 1];
     * out[i] is column first + i where first = 2 j0 + parity and v points at
     * v[j0] (v[j0 - 1] and v[j0 + n/2 + 1] are readable). */
    void (*up2_bilinear_h)(float *restrict out, int64_t n, const float *v, int parity);
    /* out[i] = 0.25 * ((a[2i] + a[2i+1]) + (b[2i] + b[2i+1])) */
    void (*down2_average)(float *restrict out, int64_t n, const float *a, const float *b);
    /* dst[i] = src[i] with non-temporal stores where dst is vector-aligned:
     * for outputs far larger than the last-level cache, a streamed line
     * costs one write to memory instead of a read for ownership and a
     * write-back. */
    void (*stream_copy)(float *restrict dst, const float *restrict src, int64_t n);
    /* Orders this thread's streamed stores before what follows (a barrier). */
    void (*stream_fence)(void);
    /* sum with step 1 for an out row that overlaps no src row (the
     * iterated-stencil executor's double buffers): the same operations per
     * element as sum, so the same values, without a scalar remainder: the
     * stores are aligned after a head vector that ends at the first
     * aligned address, and a last vector ends at n. With AVX-512 head and
     * last vector are masked (each value stored once: a load spanning two
     * overlapping stores of a row just written waits for both to retire);
     * elsewhere they are whole vectors at 0 and n - 16 that rewrite up to 15
     * values (rows of fewer than 16 points run sum's scalar loop). */
    void (*sum_disjoint)(float *restrict out, int64_t n, const float *const *src, const float *w, int n_taps,
                         float init);
    /* sum_disjoint for taps in runs: s0 single taps, then n3 triples (the
     * columns x - 1, x, x + 1 of one row, in that order), then s1 single
     * taps; ctr[] holds one pointer per run member at column x (a single
     * tap's own, a triple's middle one), w[] the weights in tap order. The
     * values are sum_disjoint's for the taps {ctr singles, ctr - 1, ctr,
     * ctr + 1, ...} bit for bit (the same multiply-adds in the same order).
     * With AVX-512, where every ctr row has out's alignment modulo the
     * vector and n3 is 1 to PS_SUM_RUNS_MAX_TRIPLES, the triples' shifted
     * operands come from aligned loads and lane shifts (VALIGND), not from
     * loads that straddle cache lines, which cost two; elsewhere, and at
     * the ends of the row, it runs sum_disjoint. n_rows rows at once: row
     * r from ctr[k] + r * in_rs into out + r * out_rs (one call per box of
     * rows, the set-up of a row paid once). */
    void (*sum_runs)(float *restrict out, int64_t n, const float *const *ctr, int s0, int n3, int s1, const float *w,
                     float init, int64_t n_rows, int64_t in_rs, int64_t out_rs);
    /* Two rows of a stencil whose taps are n_taps consecutive rows of one
     * column (a vertical line, as blur_y): out0[i] = init + sum_t w[t] *
     * rows[t][i] and out1[i] = init + sum_t w[t] * rows[t + 1][i], i < n,
     * rows[] holding n_taps + 1 rows: sum's values for both rows bit for bit
     * (the same multiply-adds in the same order), each input row loaded once
     * for the two outputs instead of once per output row. */
    void (*sum_pair)(float *restrict out0, float *restrict out1, int64_t n, const float *const *rows, const float *w,
                     int n_taps, float init);
    /* A unit-weight box sum of n_rows x n_cols taps, as a separable sum:
     * out[i] = init + c[i][0] + ... + c[i][n_cols - 1], added in that order,
     * where c[i][s] = rows[0][i + s] + ... + rows[n_rows - 1][i + s] in row
     * order. This order is the box stage's definition (graph_exec.h,
     * ps_gx_stage.box_s): a compiled tap program computes each column sum
     * once for the outputs that share it and gets these values bit for bit. */
    void (*box_sum)(float *restrict out, int64_t n, const float *const *rows, int n_rows, int n_cols, float init);
    /* Pixel rows (channels last, C channels per pixel): pixel i of out (at
     * out + i * ops) = bias + sum over t of w[t * C + c] * src[t][i * step + c]
     * (bias may be NULL: 0); the depthwise convolution, average pooling and
     * per-channel affine maps of deep-learning graphs. */
    void (*px_sum)(float *restrict out, int64_t n, int64_t C, int64_t ops, const float *const *src, const float *w,
                   int n_taps, int64_t step, const float *bias);
    /* px_sum for taps on a full grid of R rows x S columns (S = 3 or 5),
     * stride step (1 or 2), tap (r, s)'s weights at w + (r * S + s) * C:
     * pixel i's tap (r, s) reads column j = step * i + s of row r, at
     * rows[r] + (j - j0) * C for j0 <= j < j1, zero outside them or where
     * rows[r] is NULL (zero padding without copies); where act the result
     * is clamped to [lo, hi]. Neighbouring pixels share their input vectors. */
    void (*px_grid)(float *restrict out, int64_t n, int64_t C, int64_t ops, const float *const *rows, const float *w,
                    int R, int S, int step, int64_t j0, int64_t j1, const float *bias, int act, float lo, float hi);
    /* A 1 x 1 convolution's output block with its epilogue (C up to
     * PS_SMALL_GEMM_MAX_C: the reduction that makes a separate epilogue pass
     * cost a fifth of the layer): out[j * ldo + i]
     * = act(bias[i] + sum over c < C of w[c * ldw + i] * x[j * ldx + c]
     * + res[j * ldo + i]) for i < 16 * mv (mv 1-4), j < n; bias, res may be
     * NULL; act: clamp to [lo, hi] */
    void (*px_small_gemm)(float *out, int64_t ldo, int64_t n, int mv, const float *w, int64_t ldw, int64_t C,
                          const float *x, int64_t ldx, const float *bias, const float *res, int act, float lo, float hi);
    /* out[i] = min(max(out[i], lo), hi), i < n */
    void (*clamp)(float *restrict out, int64_t n, float lo, float hi);
    /* n columns of m floats, ldo apart (column j at out + j * ldo, its sum
     * at sum + j * ldo): out[i] = min(max(out[i] + bias[i] + sum[i], lo), hi),
     * bias or sum NULL: + 0 (sum may be out itself) */
    void (*bias_clamp)(float *out, int64_t m, int64_t n, int64_t ldo, const float *bias, const float *sum, float lo,
                       float hi);
    /* the same with max (or min) over t of w[t * C + c] * src[t][i * step + c] */
    void (*px_maxmin)(float *restrict out, int64_t n, int64_t C, int64_t ops, const float *const *src, const float *w,
                      int n_taps, int64_t step, int is_max);
} ps_row_kernels;

extern const ps_row_kernels ps_row_kernels_avx512;
extern const ps_row_kernels ps_row_kernels_avx2;
extern const ps_row_kernels ps_row_kernels_generic;

/* __give prog->ops: e lowered to a register program (common subexpressions
 * merged, registers reused after their last read). */
#include "polysci/status.h"
ps_status ps_vprog_lower(const ps_expr *e, ps_vprog *prog);
/* Frees what lowering allocated; prog becomes empty. */
void ps_vprog_release(ps_vprog *prog);

/* The table for a machine with `simd_f32_lanes` lanes per vector (16:
 * AVX-512, 8: AVX2 + FMA), provided the running CPU has that instruction
 * set; else the baseline. */
const ps_row_kernels *ps_row_kernels_for(int simd_f32_lanes);

#endif
