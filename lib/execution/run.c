/* Execution: walk the schedule, call the kernels. Only pointer arithmetic
 * and kernel calls happen here; everything else was prepared by build.c. */
#include "execution/engine.h"
#include "kernels/kernels.h"

#include <omp.h>
#include <math.h>
#include <string.h>

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Per-thread GEMM panels (ps_exec.panels): the band tile the thread is
 * in and what its buffers hold. */
typedef struct gemm_panel {
    float *a, *b;                   /* panel_m x batch A blocks, panel_n x batch B blocks */
    int64_t m_lo, m_hi, n_lo, n_hi; /* the current band tile, in blocks */
    int64_t a_m_lo, a_cc;           /* A panel held: tile rows from a_m_lo, chunk a_cc (-1: none) */
    int64_t b_n_lo, b_cc;           /* B panel held */
} gemm_panel;

/* Per-thread state of one execution. */
typedef struct tile_ctx {
    const ps_exec *e;
    const float *src, *wei, *bias, *sum, *a, *b;
    int64_t src_shift;          /* floats of src before what it holds: the first copy row
                                   of this thread's input copy x its floats; else 0 */
    float *dst, *c;
    const float **abuf, **bbuf; /* batch address lists, batch_cap entries each; refilled
                                   before every call: LIBXSMM 1.17's address-batch
                                   kernels overwrite entries (checked: a call changed
                                   4 of its 8 entries) */
    gemm_panel *panel;           /* this thread's panels (ps_exec.panels), else NULL */
    float *cpad;                 /* conv: m_rows x n scratch block of padded kernels (ps_exec.m_rows) */
    int stream;                  /* ps_exec.stream_out and the output is 64-byte aligned */
} tile_ctx;

/* The kernel of a call: with stream set (an aligned output), a beta-0 call
 * stores non-temporally where the plan made such a kernel (only for calls
 * that are their blocks' only writes). */
static ps_brgemm kernel_for(const ps_kernel_set *ks, int mt, int part, int beta, int stream)
{
    return !beta && stream && ks->stream[mt][part] ? ks->stream[mt][part] : ks->fn[mt][part][beta];
}

/* One kernel call. LIBXSMM 1.17's kernels return with the upper halves of
 * the vector registers dirty, and the code between calls (this file) is
 * built for plain x86-64, i.e. with SSE instructions: on Intel cores each
 * of those then waits on the dirty state, ~700 cycles per call between
 * the calls of a 2048x4096x32 GEMM (0.4 ms of its 2.0 on an Intel Xeon VM;
 * tests/test_vector_state.c checks the state it leaves). A vzeroupper after
 * the call (where the CPU has AVX; the kernels reload all their registers)
 * removes it. The clobbers tell a compiler that keeps vector values in
 * registers across the asm (an AVX build) that they are gone; the call
 * clobbered them anyway. */
static inline void run_kernel(const tile_ctx *t, ps_brgemm kernel, const float **a, const float **b, float *c,
                              unsigned long long *cnt)
{
    kernel(a, b, c, cnt);
    if (t->e->clear_upper)
        __asm__ volatile("vzeroupper" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                         "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static void zero_tile(float *c, int64_t m, int64_t n, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++) memset(c + j * ldc, 0, (size_t)m * sizeof *c);
}

/* relu: 0 none, 1 max(x, 0), 2 min(max(x, 0), 6); sum: the residual's
 * block (ldc apart like c) or NULL; one vectorized pass over the output
 * block while it is in L1. */
static void epilogue(const ps_row_kernels *k, float *c, int64_t m, int64_t n, int64_t ldc, const float *bias,
                     const float *sum, int relu)
{
    const float lo = relu ? 0.0f : -INFINITY, hi = relu == 2 ? 6.0f : INFINITY;
    k->bias_clamp(c, m, n, ldc, bias, sum, lo, hi);
}

/* A padded kernel's result (m of its rows, n columns ls apart) into the
 * output block c (columns ldc apart): stored, or added where the kernel
 * would have accumulated. */
static void merge_padded(float *c, int64_t ldc, const float *s, int64_t ls, int64_t m, int64_t n, int accumulate)
{
    for (int64_t j = 0; j < n; j++) {
        float *col = c + j * ldc;
        const float *src = s + j * ls;
        if (accumulate)
            for (int64_t i = 0; i < m; i++) col[i] += src[i];
        else
            memcpy(col, src, (size_t)m * sizeof *col);
    }
}

/* One kernel call of a conv into C block ct (columns ldc apart, n of them),
 * through the scratch block where the block's kernels are padded. */
static void conv_call(const tile_ctx *t, const ps_kernel_set *ks, int mt, int part, int beta, float *ct, int64_t ldc,
                      int64_t n, unsigned long long *cnt)
{
    const ps_exec *e = t->e;
    if (!ps_exec_padded(e, mt)) {
        run_kernel(t, kernel_for(ks, mt, part, beta, t->stream), t->abuf, t->bbuf, ct, cnt);
        return;
    }
    run_kernel(t, ks->fn[mt][part][0], t->abuf, t->bbuf, t->cpad, cnt);
    merge_padded(ct, ldc, t->cpad, e->m_rows[mt], mt ? e->m_tail : e->ks.m, n, beta);
}

/* One microkernel step of a conv: output row oh, columns of ow-block owb,
 * channels of block kb, reduction chunk cc (its C blocks x valid taps). */
static void conv_tile(const tile_ctx *t, const int64_t idx[PS_DIM_COUNT])
{
    const ps_exec *e = t->e;
    const ps_conv_shape *c = &e->conv;
    const int64_t n = idx[PS_DIM_N], kb = idx[PS_DIM_K], oh = idx[PS_DIM_OH], owb = idx[PS_DIM_OW], cc = idx[PS_DIM_C];
    const int mt = kb == e->ext[PS_DIM_K] - 1;
    const int64_t mk = mt ? e->m_tail : e->ks.m, k = e->ks.k;
    const int first = cc == 0, last = cc == e->ext[PS_DIM_C] - 1;
    const int64_t cb0 = cc * e->ks.batch, cb1 = min64(cb0 + e->ks.batch, e->k_blocks);
    const int64_t full_hi = min64(cb1, e->k_full_blocks);
    const int has_tail = e->k_tail > 0 && cb1 == e->k_blocks;
    const int64_t r_lo = e->r_lo[oh], r_hi = e->r_hi[oh];
    const int64_t ih0 = oh * c->sh - c->pt;
    const int64_t rows = e->m_rows[mt]; /* the weight block's rows (lda) */
    const float *wblk = t->wei + kb * e->m_rows[0] * c->R * c->S * c->C;
    const int64_t row_floats = c->W * c->C, img = n * c->H * row_floats - t->src_shift; /* offsets in src */
    const float *bias = (e->post_ops & PS_POST_BIAS) ? t->bias + kb * e->ks.m : NULL;
    const int relu = (e->post_ops & PS_POST_RELU6) ? 2 : (e->post_ops & PS_POST_RELU) != 0;

    const int64_t ow_a = owb * e->ks.n, ow_w = min64(e->ks.n, c->OW - ow_a);
    float *cblk = t->dst + ((n * c->OH + oh) * c->OW + ow_a) * c->ldo + kb * e->ks.m;
    const float *sblk = t->sum ? t->sum + ((n * c->OH + oh) * c->OW + ow_a) * c->ldo + kb * e->ks.m : NULL;
    if (e->small_1x1 && mk % 16 == 0) {
        /* the block's pixels (unpadded 1x1: input pixel = output pixel) with the epilogue in registers */
        const float *x = t->src + img + (ih0 * row_floats + ow_a * c->C);
        e->rows->px_small_gemm(cblk, c->ldo, ow_w, (int)(mk / 16), wblk, rows, c->C, x, c->C, bias, sblk,
                               relu != 0, 0.0f, relu == 2 ? 6.0f : INFINITY);
        return;
    }
    const int empty = r_hi <= r_lo || e->seg_begin[owb] == e->seg_begin[owb + 1];
    /* Without a segment spanning the block, zero it once and accumulate. */
    int beta = !first;
    if (first && (empty || e->block_zero[owb])) {
        zero_tile(cblk, mk, ow_w, c->ldo);
        beta = 1;
    }
    for (int64_t si = e->seg_begin[owb]; si < e->seg_begin[owb + 1] && !empty; si++) {
        const ps_conv_segment *sg = &e->segs[si];
        float *ct = t->dst + ((n * c->OH + oh) * c->OW + sg->ow0) * c->ldo + kb * e->ks.m;
        const int64_t iw0 = sg->ow0 * c->sw - c->pl;
        for (int part = 0; part < 2; part++) {
            int64_t lo = part ? e->k_full_blocks : cb0, hi = part ? (has_tail ? e->k_blocks : lo) : full_hi;
            if (hi <= lo) continue;
            unsigned long long cnt = 0;
            if (e->merge_taps) {
                /* One C block; phase p covers columns ow0 + p, ow0 + p + q, ... */
                const int64_t q = e->tap_phases;
                for (int64_t p = 0; p < q && p < sg->width; p++) {
                    const int64_t at = img + (iw0 + sg->s_lo + p * c->sw) * c->C;
                    cnt = 0;
                    for (int64_t r = r_lo; r < r_hi; r++, cnt++) {
                        t->abuf[cnt] = wblk + (r * c->S + sg->s_lo) * c->C * rows;
                        t->bbuf[cnt] = t->src + (at + (ih0 + r * c->dh) * row_floats);
                    }
                    const ps_kernel_set *ks = p < sg->wide_phases ? &sg->kernels : &sg->kernels_narrow;
                    conv_call(t, ks, mt, part, beta, ct + p * c->ldo, q * c->ldo, (sg->width - p + q - 1) / q, &cnt);
                }
                beta = 1;
                continue;
            }
            for (int64_t r = r_lo; r < r_hi; r++) {
                const int64_t row = img + (ih0 + r * c->dh) * row_floats;
                for (int64_t s = sg->s_lo; s < sg->s_hi; s++) {
                    const float *pix = t->src + (row + (iw0 + s * c->dw) * c->C);
                    const float *wtap = wblk + (r * c->S + s) * c->C * rows;
                    for (int64_t cb = lo; cb < hi; cb++) {
                        t->abuf[cnt] = wtap + cb * k * rows;
                        t->bbuf[cnt] = pix + cb * k;
                        cnt++;
                    }
                }
            }
            conv_call(t, &sg->kernels, mt, part, beta, ct, c->ldo, sg->width, &cnt);
            beta = 1;
        }
    }
    if (last && (bias || relu || sblk)) epilogue(e->rows, cblk, mk, ow_w, c->ldo, bias, sblk, relu);
}

/* Packs A's blocks [mb0, mb1) x [kb0, kb1) (A normalized M x K, stored K x M
 * when trans_a), scaled by alpha, into m x k blocks: block (mb, kb) at
 * dst + ((mb - mb0) * stride + kb - kb0) * m * k. The inner loops walk the
 * source contiguously, across all blocks of the range. */
static void pack_a_blocks(const ps_exec *e, const float *ua, float *dst, int64_t mb0, int64_t mb1, int64_t kb0,
                          int64_t kb1, int64_t stride)
{
    const ps_gemm_shape *g = &e->gemm;
    const int64_t M = g->M, K = g->K, lda = g->lda, m = e->ks.m, k = e->ks.k;
    const float alpha = g->alpha;
    for (int64_t kb = kb0; kb < kb1; kb++) {
        const int64_t k0 = kb * k, ki = min64(k, K - k0);
        float *row = dst + (kb - kb0) * m * k; /* block (mb0, kb) */
        if (g->trans_a) {
            for (int64_t mb = mb0; mb < mb1; mb++) {
                float *blk = row + (mb - mb0) * stride * m * k;
                const int64_t i0 = mb * m, mi = min64(m, M - i0);
                for (int64_t i = 0; i < mi; i++) {
                    const float *src = ua + k0 + (i0 + i) * lda;
                    for (int64_t kk = 0; kk < ki; kk++) blk[kk * m + i] = alpha * src[kk];
                }
            }
        } else {
            for (int64_t kk = 0; kk < ki; kk++) {
                const float *src = ua + (k0 + kk) * lda;
                for (int64_t mb = mb0; mb < mb1; mb++) {
                    float *col = row + (mb - mb0) * stride * m * k + kk * m;
                    const int64_t i0 = mb * m, mi = min64(m, M - i0);
                    for (int64_t i = 0; i < mi; i++) col[i] = alpha * src[i0 + i];
                }
            }
        }
    }
}

/* Packs B's blocks [kb0, kb1) x [nb0, nb1) (B normalized K x N, stored N x K
 * when trans_b) into k x n blocks: block (kb, nb) at
 * dst + ((nb - nb0) * stride + kb - kb0) * k * n. */
static void pack_b_blocks(const ps_exec *e, const float *ub, float *dst, int64_t nb0, int64_t nb1, int64_t kb0,
                          int64_t kb1, int64_t stride)
{
    const ps_gemm_shape *g = &e->gemm;
    const int64_t N = g->N, K = g->K, ldb = g->ldb, n = e->ks.n, k = e->ks.k;
    for (int64_t kb = kb0; kb < kb1; kb++) {
        const int64_t k0 = kb * k, ki = min64(k, K - k0);
        float *row = dst + (kb - kb0) * k * n; /* block (kb, nb0) */
        if (g->trans_b) {
            for (int64_t kk = 0; kk < ki; kk++) {
                const float *src = ub + (k0 + kk) * ldb;
                for (int64_t nb = nb0; nb < nb1; nb++) {
                    float *blk = row + (nb - nb0) * stride * k * n;
                    const int64_t j0 = nb * n, nj = min64(n, N - j0);
                    for (int64_t j = 0; j < nj; j++) blk[j * k + kk] = src[j0 + j];
                }
            }
        } else {
            for (int64_t nb = nb0; nb < nb1; nb++) {
                float *blk = row + (nb - nb0) * stride * k * n;
                const int64_t j0 = nb * n, nj = min64(n, N - j0);
                for (int64_t j = 0; j < nj; j++)
                    memcpy(blk + j * k, ub + k0 + (j0 + j) * ldb, (size_t)ki * sizeof(float));
            }
        }
    }
}

/* One microkernel step of a GEMM: C block (mb, nb), reduction chunk cc. */
static void gemm_tile(const tile_ctx *t, const int64_t idx[PS_DIM_COUNT])
{
    const ps_exec *e = t->e;
    const ps_gemm_shape *g = &e->gemm;
    const int64_t mb = idx[PS_DIM_K], nb = idx[PS_DIM_OW], cc = idx[PS_DIM_C];
    const int mt = mb == e->ext[PS_DIM_K] - 1, nt = nb == e->ext[PS_DIM_OW] - 1;
    const int64_t mk = mt ? e->m_tail : e->ks.m, nw = nt ? e->n_tail : e->ks.n, k = e->ks.k;
    const int64_t cb0 = cc * e->ks.batch, cb1 = min64(cb0 + e->ks.batch, e->k_blocks);
    const int64_t full_hi = min64(cb1, e->k_full_blocks);
    const int has_tail = e->k_tail > 0 && cb1 == e->k_blocks;
    /* Packed operands: block (mb, kb) of A at a0 + a_base + kb * a_step, of B
     * at b0 + b_base + kb * b_step; A read in place: columns lda apart. */
    const float *a0 = t->a, *b0 = t->b;
    int64_t a_base = e->pack_a ? mb * e->k_blocks * e->ks.m * k : mb * e->ks.m;
    int64_t b_base = nb * e->k_blocks * k * e->ks.n;
    const int64_t a_step = e->pack_a ? e->ks.m * k : k * e->lda, b_step = k * e->ks.n;
    if (t->panel) {
        gemm_panel *p = t->panel;
        const int64_t cap = e->batch_cap;
        if (p->a_cc != cc || p->a_m_lo != p->m_lo) {
            pack_a_blocks(e, t->a, p->a, p->m_lo, p->m_hi, cb0, cb1, cap);
            p->a_m_lo = p->m_lo;
            p->a_cc = cc;
        }
        if (p->b_cc != cc || p->b_n_lo != p->n_lo) {
            pack_b_blocks(e, t->b, p->b, p->n_lo, p->n_hi, cb0, cb1, cap);
            p->b_n_lo = p->n_lo;
            p->b_cc = cc;
        }
        a0 = p->a;
        b0 = p->b;
        a_base = ((mb - p->m_lo) * cap - cb0) * a_step;
        b_base = ((nb - p->n_lo) * cap - cb0) * b_step;
    }
    float *ct = t->c + mb * e->ks.m + nb * e->ks.n * g->ldc;
    int beta = 1;
    if (cc == 0) {
        if (g->beta == 0.0f) {
            beta = 0;
        } else if (g->beta != 1.0f) {
            for (int64_t j = 0; j < nw; j++)
                for (int64_t i = 0; i < mk; i++) ct[i + j * g->ldc] *= g->beta;
        }
    }
    const ps_kernel_set *ks = &e->gemm_kernels[nt];
    for (int part = 0; part < 2; part++) {
        int64_t lo = part ? e->k_full_blocks : cb0, hi = part ? (has_tail ? e->k_blocks : lo) : full_hi;
        if (hi <= lo) continue;
        unsigned long long cnt = 0;
        for (int64_t kb = lo; kb < hi; kb++, cnt++) {
            t->abuf[cnt] = a0 + (a_base + kb * a_step);
            t->bbuf[cnt] = b0 + (b_base + kb * b_step);
        }
        run_kernel(t, kernel_for(ks, mt, part, beta, t->stream), t->abuf, t->bbuf, ct, &cnt);
        beta = 1;
    }
}

typedef void (*tile_fn)(const tile_ctx *, const int64_t idx[PS_DIM_COUNT]);

/* Sequential walk of loops[li ..] over the box [lo, hi). */
static void walk(const tile_ctx *t, tile_fn fn, int li, int64_t lo[PS_DIM_COUNT], int64_t hi[PS_DIM_COUNT])
{
    const ps_exec *e = t->e;
    if (li == e->n_loops) {
        fn(t, lo);
        return;
    }
    const ps_loop *l = &e->loops[li];
    const int d = l->dim;
    const int64_t plo = lo[d], phi = hi[d];
    for (int64_t x = plo; x < phi; x += l->tile) {
        lo[d] = x;
        hi[d] = min64(x + l->tile, phi);
        walk(t, fn, li + 1, lo, hi);
    }
    lo[d] = plo;
    hi[d] = phi;
}

int ps_exec_band_box(const ps_exec *e, int64_t it, int64_t lo[PS_DIM_COUNT], int64_t hi[PS_DIM_COUNT])
{
    return ps_band_box(e->loops, e->n_parallel, e->band_trips, e->ext, it, lo, hi);
}

/* Runs part `part` of the band's e->team parts (ps_exec_band_box). */
static void run_part(const tile_ctx *t, tile_fn fn, int part)
{
    const ps_exec *e = t->e;
    int64_t lo[PS_DIM_COUNT], hi[PS_DIM_COUNT], begin, end;
    ps_exec_part_range(e, part, &begin, &end);
    for (int64_t it = begin; it < end; it++) {
        if (!ps_exec_band_box(e, it, lo, hi)) continue;
        if (t->panel) {
            t->panel->m_lo = lo[PS_DIM_K];
            t->panel->m_hi = hi[PS_DIM_K];
            t->panel->n_lo = lo[PS_DIM_OW];
            t->panel->n_hi = hi[PS_DIM_OW];
        }
        walk(t, fn, e->n_parallel, lo, hi);
    }
}

static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

size_t ps_exec_workspace_bytes(const ps_exec *e)
{
    size_t floats = 0;
    if (e->kind == PS_OP_CONV_FWD && e->nchw)
        floats = (size_t)(ps_conv_src_elems(&e->conv) + ps_conv_dst_elems(&e->conv));
    if (e->kind == PS_OP_GEMM) /* operands packed in the pass, blocks padded to full size */
        floats = e->panels ? 0
                           : (size_t)(e->k_blocks * e->ks.k *
                                      ((e->pack_a ? e->ext[PS_DIM_K] * e->ks.m : 0) + e->ext[PS_DIM_OW] * e->ks.n));
    /* 64 bytes of slack to align the regions of a caller's buffer. */
    return 64 + align64(floats * sizeof(float)) + (size_t)e->nthreads * e->thread_bytes;
}

/* Row i of the input copy (ps_exec.copy_rows) from the user's (NHWC) input
 * into dst. Padded: input row i with copy_pl zero columns left of it and
 * zeros right of it. Subsampled: output row y of image n, i = n * OH + y,
 * pixel x <- input pixel (y * sub_h, x * sub_w). */
static void fill_copy_row(const ps_exec *e, const float *src, float *dst, int64_t i)
{
    const ps_conv_shape *c = &e->conv;
    const int64_t C = c->C, row_floats = e->copy_row_floats;
    if (c->padded_copy) {
        const int64_t x0 = clamp64(c->copy_pl, 0, c->W), x1 = clamp64(c->copy_pl + c->src_W, x0, c->W);
        memset(dst, 0, (size_t)(x0 * C) * sizeof *dst);
        memcpy(dst + x0 * C, src + i * c->src_W * C, (size_t)((x1 - x0) * C) * sizeof *dst);
        memset(dst + x1 * C, 0, (size_t)((c->W - x1) * C) * sizeof *dst);
        return;
    }
    const int64_t oh = e->copy_rows / c->N, n = i / oh, y = i % oh, ow = row_floats / C;
    const float *row = src + (n * c->src_H + y * c->sub_h) * c->src_W * C;
    for (int64_t x = 0; x < ow; x++) memcpy(dst + x * C, row + x * c->sub_w * C, (size_t)C * sizeof *dst);
}

/* NCHW <-> NHWC for the activations of one execution. */
static void nchw_to_nhwc(const float *in, float *out, int64_t N, int64_t C, int64_t HW, int nt)
{
#pragma omp parallel for collapse(2) num_threads(nt) schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int64_t p = 0; p < HW; p++)
            for (int64_t c = 0; c < C; c++) out[(n * HW + p) * C + c] = in[(n * C + c) * HW + p];
}

static void nhwc_to_nchw(const float *in, float *out, int64_t N, int64_t C, int64_t HW, int nt)
{
#pragma omp parallel for collapse(2) num_threads(nt) schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) out[(n * C + c) * HW + p] = in[(n * HW + p) * C + c];
}

void ps_exec_run(const ps_exec *e, const ps_exec_operands *ops, ps_exec_profile *prof)
{
    const double t_start = prof ? omp_get_wtime() : 0.0;
    char *ws = (char *)(((uintptr_t)ops->workspace + 63) & ~(uintptr_t)63);
    float *scratch = (float *)ws;
    tile_ctx base = {.e = e, .src = ops->src, .wei = ops->weights, .bias = ops->bias, .sum = ops->sum, .dst = ops->dst};
    tile_fn fn = conv_tile;
    size_t scratch_floats = 0;
    if (e->kind == PS_OP_CONV_FWD && e->nchw) {
        const ps_conv_shape *c = &e->conv;
        float *src_nhwc = scratch, *dst_nhwc = scratch + ps_conv_src_elems(c);
        nchw_to_nhwc(ops->src, src_nhwc, c->N, c->C, c->src_H * c->src_W, e->nthreads);
        base.src = src_nhwc;
        base.dst = dst_nhwc;
        scratch_floats = (size_t)(ps_conv_src_elems(c) + ps_conv_dst_elems(c));
    }
    const float *copy_src = base.src; /* what the threads' input copies read */
    float *pack_a_dst = NULL, *pack_b_dst = NULL; /* GEMM operands packed inside the parallel region */
    if (e->kind == PS_OP_GEMM) {
        const ps_gemm_shape *g = &e->gemm;
        if (g->alpha == 0.0f) {
            /* C = beta * C: no product to compute, nothing to pack. */
            const int64_t M = g->M, N = g->N, ldc = g->ldc;
            const float beta = g->beta;
            float *cm = ops->c;
#pragma omp parallel for num_threads(e->nthreads) schedule(static)
            for (int64_t j = 0; j < N; j++)
                for (int64_t i = 0; i < M; i++) cm[i + j * ldc] = beta == 0.0f ? 0.0f : beta * cm[i + j * ldc];
            if (prof) *prof = (ps_exec_profile){.kernels_ms = (omp_get_wtime() - t_start) * 1e3};
            return;
        }
        fn = gemm_tile;
        base.a = ops->a;
        base.b = ops->b;
        base.c = ops->c;
        /* Without panels, A (scaled by alpha) is packed into m x k blocks,
         * block (mb, kb) at (mb * KB + kb) * m * k, and B into k x n blocks,
         * block (kb, nb) at (nb * KB + kb) * k * n, by all threads at the start
         * of the kernels' parallel region: one fork instead of three, which
         * counts where a whole GEMM takes tens of microseconds (128^3: 0.85 ->
         * 0.88x dnnl_sgemm; `bash bench/ab.sh OLD NEW 3 /tmp/ab -- gemm
         * --layers FILE` with a layers file holding `g128 128 128 128`). */
        float *next = scratch;
        if (!e->panels) {
            if (e->pack_a) {
                pack_a_dst = next;
                base.a = next;
                next += e->ext[PS_DIM_K] * e->k_blocks * e->ks.m * e->ks.k;
            }
            pack_b_dst = next;
            base.b = next;
            next += e->ext[PS_DIM_OW] * e->k_blocks * e->ks.k * e->ks.n;
        }
        scratch_floats = (size_t)(next - scratch);
    }
    base.stream = e->stream_out && (uintptr_t)(e->kind == PS_OP_GEMM ? (void *)base.c : (void *)base.dst) % 64 == 0;
    const double t_kernels = prof ? omp_get_wtime() : 0.0;
    char *per_thread = ws + align64(scratch_floats * sizeof(float));
    double t_packed = t_kernels;
#pragma omp parallel num_threads(e->team) if (e->team > 1)
    {
        int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        tile_ctx t = base;
        char *mine = per_thread + (size_t)tid * e->thread_bytes;
        t.abuf = (const float **)mine;
        t.bbuf = t.abuf + e->batch_cap;
        t.cpad = (float *)(mine + e->cpad_offset);
        gemm_panel panel;
        if (e->panels) {
            panel = (gemm_panel){.a_cc = -1, .b_cc = -1};
            panel.a = (float *)(mine + e->panel_offset);
            panel.b = panel.a + e->panel_a_floats;
            t.panel = &panel;
        }
        if (pack_b_dst) {
            /* Every thread packs a share of both operands; the barrier keeps
             * every call after the packing. */
            const int64_t KB = e->k_blocks, MB = pack_a_dst ? e->ext[PS_DIM_K] : 0, NB = e->ext[PS_DIM_OW];
#pragma omp for collapse(2) schedule(static) nowait
            for (int64_t mb = 0; mb < MB; mb++)
                for (int64_t kb = 0; kb < KB; kb++)
                    pack_a_blocks(e, ops->a, pack_a_dst + (mb * KB + kb) * e->ks.m * e->ks.k, mb, mb + 1, kb, kb + 1, 1);
#pragma omp for collapse(2) schedule(static) nowait
            for (int64_t nb = 0; nb < NB; nb++)
                for (int64_t kb = 0; kb < KB; kb++)
                    pack_b_blocks(e, ops->b, pack_b_dst + (nb * KB + kb) * e->ks.k * e->ks.n, nb, nb + 1, kb, kb + 1, 1);
#pragma omp barrier
            if (prof && tid == 0) t_packed = omp_get_wtime();
        }
        /* One part per thread, unless the runtime started fewer threads. */
        for (int part = tid; part < e->team; part += nt) {
            if (e->copy_rows) {
                /* The rows this part's calls read, into this thread's copy. */
                float *copy = (float *)(mine + e->copy_offset);
                const int64_t lo = e->copy_lo[part], hi = e->copy_hi[part];
                for (int64_t i = lo; i < hi; i++) fill_copy_row(e, copy_src, copy + (i - lo) * e->copy_row_floats, i);
                t.src = copy;
                t.src_shift = lo * e->copy_row_floats;
            }
            run_part(&t, fn, part);
        }
        /* Streaming stores are weakly ordered: drain them before the join. */
        if (t.stream) __builtin_ia32_sfence();
    }
    const double t_finish = prof ? omp_get_wtime() : 0.0;
    if (e->kind == PS_OP_CONV_FWD && e->nchw) {
        const ps_conv_shape *c = &e->conv;
        nhwc_to_nchw(base.dst, ops->dst, c->N, c->K, c->OH * c->OW, e->nthreads);
    }
    if (prof) {
        prof->prepare_ms = (t_packed - t_start) * 1e3;
        prof->kernels_ms = (t_finish - t_packed) * 1e3;
        prof->finish_ms = (omp_get_wtime() - t_finish) * 1e3;
    }
}

int64_t ps_exec_packed_weight_elems(const ps_exec *e)
{
    const ps_conv_shape *c = &e->conv;
    return ((e->ext[PS_DIM_K] - 1) * e->m_rows[0] + e->m_rows[1]) * c->R * c->S * c->C;
}

void ps_exec_pack_weights(const ps_exec *e, ps_weight_layout layout, const float *w, float *packed)
{
    const ps_conv_shape *c = &e->conv;
    const int64_t K = c->K, C = c->C, R = c->R, S = c->S, m = e->ks.m;
    /* Strides of the user's layout for (k, c, r, s). */
    int64_t sk, sc, sr, ss;
    switch (layout) {
    case PS_WEIGHTS_KRSC: sk = R * S * C; sr = S * C; ss = C; sc = 1; break;
    case PS_WEIGHTS_RSCK: sr = S * C * K; ss = C * K; sc = K; sk = 1; break;
    case PS_WEIGHTS_KCRS:
    default: sk = C * R * S; sc = R * S; sr = S; ss = 1; break;
    }
#pragma omp parallel for num_threads(e->nthreads) schedule(static)
    for (int64_t kb = 0; kb < e->ext[PS_DIM_K]; kb++) {
        const int mt = kb == e->ext[PS_DIM_K] - 1;
        const int64_t mk = mt ? e->m_tail : m, rows = e->m_rows[mt];
        float *blk = packed + kb * e->m_rows[0] * R * S * C;
        for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t ci = 0; ci < C; ci++) {
                    float *col = blk + ((r * S + s) * C + ci) * rows;
                    for (int64_t kk = 0; kk < mk; kk++) col[kk] = w[(kb * m + kk) * sk + ci * sc + r * sr + s * ss];
                    for (int64_t kk = mk; kk < rows; kk++) col[kk] = 0.0f;
                }
    }
}
