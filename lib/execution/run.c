/* Execution: walk the schedule, call the kernels. Only pointer arithmetic
 * and kernel calls happen here; everything else was prepared by build.c. */
#include "execution/engine.h"

#include <omp.h>
#include <string.h>

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Per-thread state of one execution. */
typedef struct tile_ctx {
    const ps_exec *e;
    const float *src, *wei, *bias, *a, *b;
    float *dst, *c;
    const float **abuf, **bbuf; /* batch address lists, batch_cap entries each; refilled
                                   before every call: LIBXSMM 1.17's address-batch
                                   kernels overwrite entries (checked: a call changed
                                   4 of its 8 entries) */
} tile_ctx;

static void zero_tile(float *c, int64_t m, int64_t n, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++) memset(c + j * ldc, 0, (size_t)m * sizeof *c);
}

static void epilogue(float *c, int64_t m, int64_t n, int64_t ldc, const float *bias, int relu)
{
    for (int64_t j = 0; j < n; j++) {
        float *col = c + j * ldc;
        if (bias)
            for (int64_t i = 0; i < m; i++) col[i] += bias[i];
        if (relu)
            for (int64_t i = 0; i < m; i++) col[i] = col[i] > 0.0f ? col[i] : 0.0f;
    }
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
    const float *wblk = t->wei + kb * e->ks.m * c->R * c->S * c->C;
    const float *img = t->src + n * c->H * c->W * c->C;
    const float *bias = (e->post_ops & PS_POST_BIAS) ? t->bias + kb * e->ks.m : NULL;
    const int relu = (e->post_ops & PS_POST_RELU) != 0;

    const int64_t ow_a = owb * e->ks.n, ow_w = min64(e->ks.n, c->OW - ow_a);
    float *cblk = t->dst + ((n * c->OH + oh) * c->OW + ow_a) * c->K + kb * e->ks.m;
    const int empty = r_hi <= r_lo || e->seg_begin[owb] == e->seg_begin[owb + 1];
    /* Without a segment spanning the block, zero it once and accumulate. */
    int beta = !first;
    if (first && (empty || e->block_zero[owb])) {
        zero_tile(cblk, mk, ow_w, c->K);
        beta = 1;
    }
    for (int64_t si = e->seg_begin[owb]; si < e->seg_begin[owb + 1] && !empty; si++) {
        const ps_conv_segment *sg = &e->segs[si];
        float *ct = t->dst + ((n * c->OH + oh) * c->OW + sg->ow0) * c->K + kb * e->ks.m;
        const int64_t iw0 = sg->ow0 * c->sw - c->pl;
        for (int part = 0; part < 2; part++) {
            int64_t lo = part ? e->k_full_blocks : cb0, hi = part ? (has_tail ? e->k_blocks : lo) : full_hi;
            if (hi <= lo) continue;
            unsigned long long cnt = 0;
            if (e->merge_taps) {
                /* One C block; phase p covers columns ow0 + p, ow0 + p + q, ... */
                const int64_t q = e->tap_phases;
                for (int64_t p = 0; p < q && p < sg->width; p++) {
                    const float *at = img + (iw0 + p * c->sw + sg->s_lo) * c->C;
                    cnt = 0;
                    for (int64_t r = r_lo; r < r_hi; r++, cnt++) {
                        t->abuf[cnt] = wblk + (r * c->S + sg->s_lo) * c->C * mk;
                        t->bbuf[cnt] = at + (ih0 + r * c->dh) * c->W * c->C;
                    }
                    const ps_kernel_set *ks = p < sg->wide_phases ? &sg->kernels : &sg->kernels_narrow;
                    ks->fn[mt][part][beta](t->abuf, t->bbuf, ct + p * c->K, &cnt);
                }
                beta = 1;
                continue;
            }
            for (int64_t r = r_lo; r < r_hi; r++) {
                const float *row = img + (ih0 + r * c->dh) * c->W * c->C;
                for (int64_t s = sg->s_lo; s < sg->s_hi; s++) {
                    const float *pix = row + (iw0 + s * c->dw) * c->C;
                    const float *wtap = wblk + (r * c->S + s) * c->C * mk;
                    for (int64_t cb = lo; cb < hi; cb++) {
                        t->abuf[cnt] = wtap + cb * k * mk;
                        t->bbuf[cnt] = pix + cb * k;
                        cnt++;
                    }
                }
            }
            sg->kernels.fn[mt][part][beta](t->abuf, t->bbuf, ct, &cnt);
            beta = 1;
        }
    }
    if (last && (bias || relu)) epilogue(cblk, mk, ow_w, c->K, bias, relu);
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
    /* Packed operands: block (mb, kb) of A and (kb, nb) of B are contiguous. */
    const float *ablk = e->pack_a ? t->a + mb * e->k_blocks * e->ks.m * e->ks.k : t->a + mb * e->ks.m;
    const int64_t a_step = e->pack_a ? e->ks.m * k : k * e->lda;
    const float *bblk = t->b + nb * e->k_blocks * e->ks.k * e->ks.n;
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
            t->abuf[cnt] = ablk + kb * a_step;
            t->bbuf[cnt] = bblk + kb * k * e->ks.n;
        }
        ks->fn[mt][part][beta](t->abuf, t->bbuf, ct, &cnt);
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

/* Runs the share of thread `tid` of `nt`: the parallel band's iterations
 * are collapsed row-major and split into nt contiguous, equal parts. */
static void run_thread(const tile_ctx *t, tile_fn fn, int tid, int nt)
{
    const ps_exec *e = t->e;
    const int64_t *trips = e->band_trips, total = e->band_total;
    const int64_t begin = total * tid / nt, end = total * (tid + 1) / nt;
    int64_t lo[PS_DIM_COUNT], hi[PS_DIM_COUNT];
    for (int64_t it = begin; it < end; it++) {
        int64_t idx[PS_SCHEDULE_MAX_LOOPS], rem = it;
        for (int i = e->n_parallel - 1; i >= 0; i--) {
            idx[i] = rem % trips[i];
            rem /= trips[i];
        }
        for (int d = 0; d < PS_DIM_COUNT; d++) { lo[d] = 0; hi[d] = e->ext[d]; }
        int empty = 0;
        for (int i = 0; i < e->n_parallel && !empty; i++) {
            const ps_loop *l = &e->loops[i];
            int64_t x = lo[l->dim] + idx[i] * l->tile;
            if (x >= hi[l->dim]) empty = 1; /* partial parent tile: nothing here */
            else { lo[l->dim] = x; hi[l->dim] = min64(x + l->tile, hi[l->dim]); }
        }
        if (!empty) walk(t, fn, e->n_parallel, lo, hi);
    }
}

static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Per thread: the batch address lists, in regions a page apart. Lists of
 * the two threads in adjacent lines (one 128-byte pair) slowed whole layers
 * down although no line is shared, as when a core's prefetcher pulls in the
 * line the other keeps rewriting (vgga_01, DNN plan, 2 threads, one process
 * per run: 1.47 / 2.09 / 2.10 ms with 64-byte regions, 1.01-1.06 ms a page
 * apart; every other set 0.3-4% faster, docs/performance.md). */
#define THREAD_REGION_ALIGN ((size_t)4096)
static size_t thread_bytes(const ps_exec *e)
{
    const size_t b = 2 * (size_t)e->batch_cap * sizeof(float *);
    return (b + THREAD_REGION_ALIGN - 1) / THREAD_REGION_ALIGN * THREAD_REGION_ALIGN;
}

size_t ps_exec_workspace_bytes(const ps_exec *e)
{
    size_t floats = 0;
    if (e->kind == PS_OP_CONV_FWD && e->nchw)
        floats = (size_t)(ps_conv_src_elems(&e->conv) + ps_conv_dst_elems(&e->conv));
    if (e->kind == PS_OP_GEMM) /* packed A (if packed) and B, blocks padded to full size */
        floats = (size_t)(e->k_blocks * e->ks.k * ((e->pack_a ? e->ext[PS_DIM_K] * e->ks.m : 0) + e->ext[PS_DIM_OW] * e->ks.n));
    /* 64 bytes of slack to align the regions of a caller's buffer. */
    return 64 + align64(floats * sizeof(float)) + (size_t)e->nthreads * thread_bytes(e);
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
    tile_ctx base = {.e = e, .src = ops->src, .wei = ops->weights, .bias = ops->bias, .dst = ops->dst};
    tile_fn fn = conv_tile;
    size_t scratch_floats = 0;
    if (e->kind == PS_OP_CONV_FWD && e->nchw) {
        const ps_conv_shape *c = &e->conv;
        float *src_nhwc = scratch, *dst_nhwc = scratch + ps_conv_src_elems(c);
        nchw_to_nhwc(ops->src, src_nhwc, c->N, c->C, c->H * c->W, e->nthreads);
        base.src = src_nhwc;
        base.dst = dst_nhwc;
        scratch_floats = (size_t)(ps_conv_src_elems(c) + ps_conv_dst_elems(c));
    } else if (e->kind == PS_OP_GEMM) {
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
        float *next = scratch;
        if (e->pack_a) {
            /* A (normalized M x K, stored K x M when trans_a) into m x k blocks,
             * scaled by alpha; block (mb, kb) at (mb * KB + kb) * m * k. */
            float *pa = next;
            const float *ua = ops->a;
            const int64_t M = g->M, K = g->K, lda = g->lda, m = e->ks.m, k = e->ks.k, KB = e->k_blocks;
            const float alpha = g->alpha;
            const int tr = g->trans_a;
#pragma omp parallel for collapse(2) num_threads(e->nthreads) schedule(static)
            for (int64_t mb = 0; mb < e->ext[PS_DIM_K]; mb++)
                for (int64_t kb = 0; kb < KB; kb++) {
                    float *blk = pa + (mb * KB + kb) * m * k;
                    const int64_t i0 = mb * m, k0 = kb * k, mi = M - i0 < m ? M - i0 : m, ki = K - k0 < k ? K - k0 : k;
                    /* The inner loop walks the source contiguously (writes stay
                     * inside the block, which is in L1). */
                    if (tr)
                        for (int64_t i = 0; i < mi; i++) {
                            const float *src = ua + k0 + (i0 + i) * lda;
                            for (int64_t kk = 0; kk < ki; kk++) blk[kk * m + i] = alpha * src[kk];
                        }
                    else
                        for (int64_t kk = 0; kk < ki; kk++) {
                            const float *src = ua + i0 + (k0 + kk) * lda;
                            for (int64_t i = 0; i < mi; i++) blk[kk * m + i] = alpha * src[i];
                        }
                }
            base.a = pa;
            next += e->ext[PS_DIM_K] * m * KB * k;
        }
        {
            /* B (normalized K x N, stored N x K when trans_b) into k x n blocks;
             * block (kb, nb) at (nb * KB + kb) * k * n. */
            float *pb = next;
            const float *ub = ops->b;
            const int64_t N = g->N, K = g->K, ldb = g->ldb, n = e->ks.n, k = e->ks.k, KB = e->k_blocks;
            const int tr = g->trans_b;
#pragma omp parallel for collapse(2) num_threads(e->nthreads) schedule(static)
            for (int64_t nb = 0; nb < e->ext[PS_DIM_OW]; nb++)
                for (int64_t kb = 0; kb < KB; kb++) {
                    float *blk = pb + (nb * KB + kb) * k * n;
                    const int64_t j0 = nb * n, k0 = kb * k, nj = N - j0 < n ? N - j0 : n, ki = K - k0 < k ? K - k0 : k;
                    if (tr)
                        for (int64_t kk = 0; kk < ki; kk++) {
                            const float *src = ub + j0 + (k0 + kk) * ldb;
                            for (int64_t j = 0; j < nj; j++) blk[j * k + kk] = src[j];
                        }
                    else
                        for (int64_t j = 0; j < nj; j++)
                            memcpy(blk + j * k, ub + k0 + (j0 + j) * ldb, (size_t)ki * sizeof(float));
                }
            base.b = pb;
            next += e->ext[PS_DIM_OW] * n * KB * k;
        }
        scratch_floats = (size_t)(next - scratch);
    }
    const double t_kernels = prof ? omp_get_wtime() : 0.0;
    char *per_thread = ws + align64(scratch_floats * sizeof(float));
#pragma omp parallel num_threads(e->nthreads)
    {
        int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        tile_ctx t = base;
        char *mine = per_thread + (size_t)tid * thread_bytes(e);
        t.abuf = (const float **)mine;
        t.bbuf = t.abuf + e->batch_cap;
        run_thread(&t, fn, tid, nt);
    }
    const double t_finish = prof ? omp_get_wtime() : 0.0;
    if (e->kind == PS_OP_CONV_FWD && e->nchw) {
        const ps_conv_shape *c = &e->conv;
        nhwc_to_nchw(base.dst, ops->dst, c->N, c->K, c->OH * c->OW, e->nthreads);
    }
    if (prof) {
        prof->prepare_ms = (t_kernels - t_start) * 1e3;
        prof->kernels_ms = (t_finish - t_kernels) * 1e3;
        prof->finish_ms = (omp_get_wtime() - t_finish) * 1e3;
    }
}

int64_t ps_exec_packed_weight_elems(const ps_exec *e)
{
    return ps_conv_weight_elems(&e->conv);
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
        const int64_t mk = kb == e->ext[PS_DIM_K] - 1 ? e->m_tail : m;
        float *blk = packed + kb * m * R * S * C;
        for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t ci = 0; ci < C; ci++)
                    for (int64_t kk = 0; kk < mk; kk++)
                        blk[((r * S + s) * C + ci) * mk + kk] = w[(kb * m + kk) * sk + ci * sc + r * sr + s * ss];
    }
}
