/* Plan-time part of the executor: JIT dispatch and padding geometry. */
#include "execution/engine.h"
#include "core/intmath.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/kernels.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

int64_t ps_exec_kernel_rows(int64_t m)
{
    if (m >= 16 || m == 1 || m == 4 || m == 8) return m;
    return m < 4 ? 4 : m < 8 ? 8 : 16;
}

/* Floor division for possibly negative numerators. */

/* What a kernel does with C. */
typedef enum c_update {
    C_OVERWRITE,  /* beta 0 */
    C_ACCUMULATE, /* beta 1 */
    C_STREAM      /* beta 0 with non-temporal stores (C 64-byte aligned at
                     every call: m and ldc multiples of 16, and the executor
                     checks the base pointer) */
} c_update;

static ps_status dispatch(ps_brgemm *out, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                          c_update update)
{
    const libxsmm_blasint bm = (libxsmm_blasint)m, bn = (libxsmm_blasint)n, bk = (libxsmm_blasint)k;
    const libxsmm_blasint la = (libxsmm_blasint)lda, lb = (libxsmm_blasint)ldb, lc = (libxsmm_blasint)ldc;
    const float alpha = 1.0f, fbeta = update == C_ACCUMULATE ? 1.0f : 0.0f;
    const int flags = LIBXSMM_GEMM_FLAGS('N', 'N') | (update == C_STREAM ? LIBXSMM_GEMM_FLAG_ALIGN_C_NTS_HINT : 0);
    const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    if ((int64_t)la != lda || (int64_t)lb != ldb || (int64_t)lc != ldc)
        return ps_error(PS_ERR_UNSUPPORTED, "leading dimension too large for LIBXSMM (lda %lld, ldb %lld, ldc %lld)",
                        (long long)lda, (long long)ldb, (long long)ldc);
    *out = libxsmm_smmdispatch_reducebatch_addr(bm, bn, bk, &la, &lb, &lc, &alpha, &fbeta, &flags, &prefetch);
    if (!*out)
        return ps_error(PS_ERR_BACKEND, "LIBXSMM could not JIT a %lldx%lldx%lld batch-reduce kernel (lda %lld, ldb %lld, ldc %lld)",
                        (long long)m, (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)ldc);
    return PS_SUCCESS;
}

/* Kernels for one tile width n. Index [1] of m is used by the last
 * output-channel block (size m_tail, which may equal m), index [1] of k by the
 * remainder reduction block; variants for blocks that do not exist stay NULL.
 * stream: the calls of this set are their blocks' only writes and the plan
 * streams its output (ps_exec.stream_out): add the streaming variants. */
/* Kernels of a padded block (m_rows above its real rows) write the
 * executor's scratch block: ldc = m_rows, never streamed. */
static ps_status dispatch_set(ps_kernel_set *ks, const ps_exec *e, int64_t n, int64_t k_mult, int64_t lda_full,
                              int64_t lda_tail, int64_t ldb, int64_t ldc, int stream)
{
    const int64_t ms[2] = {e->m_rows[0], e->m_rows[1]}, kk[2] = {e->ks.k * k_mult, e->k_tail * k_mult};
    const int64_t ldas[2] = {lda_full, lda_tail};
    const int padded[2] = {ps_exec_padded(e, 0), ps_exec_padded(e, 1)};
    const int64_t ldcs[2] = {padded[0] ? ms[0] : ldc, padded[1] ? ms[1] : ldc};
    const int need_m[2] = {e->ext[PS_DIM_K] > 1, 1}, need_k[2] = {e->k_full_blocks > 0, e->k_tail > 0};
    ps_status st;
    memset(ks, 0, sizeof *ks);
    for (int mt = 0; mt < 2; mt++)
        for (int kt = 0; kt < 2; kt++)
            for (int beta = 0; beta < 2; beta++)
                if (need_m[mt] && need_k[kt] &&
                    (st = dispatch(&ks->fn[mt][kt][beta], ms[mt], n, kk[kt], ldas[mt], ldb, ldcs[mt],
                                   beta ? C_ACCUMULATE : C_OVERWRITE)))
                    return st;
    for (int mt = 0; mt < 2; mt++)
        for (int kt = 0; kt < 2; kt++)
            if (stream && need_m[mt] && need_k[kt] && !padded[mt] && ms[mt] % 16 == 0 && ldc % 16 == 0 &&
                (st = dispatch(&ks->stream[mt][kt], ms[mt], n, kk[kt], ldas[mt], ldb, ldc, C_STREAM)))
                return st;
    return PS_SUCCESS;
}

/* Whether the output (out_bytes) is written with streaming stores
 * (ps_exec.stream_out): each block by one call, so nothing reads a streamed
 * line back during the execution, and at least stream_bytes large
 * (ps_machine_stream_bytes: too large to be worth keeping in cache). */
static int stream_output(const ps_exec *e, double out_bytes, size_t stream_bytes)
{
    return stream_bytes && e->ext[PS_DIM_C] == 1 && !(e->k_full_blocks > 0 && e->k_tail > 0) &&
           out_bytes >= (double)stream_bytes;
}

/* The input-copy rows each band part's calls read (ps_exec.copy_lo/hi): the
 * rows of its boxes' images, and in them the input rows their output rows
 * read (with taps) or, subsampled, all of them. Each part's thread copies
 * those rows into its own region before its calls. Against one copy that
 * all threads fill and then read (a barrier, and each core reading the
 * lines the other wrote), resnet_16 (1x1/2, 1024 -> 512) at N = 1, where
 * both threads read the whole image, ran 0.90 -> 0.99x oneDNN, resnet_10
 * 0.96 -> 0.99 (Intel Xeon VM, 2 threads; `bash bench/ab.sh OLD NEW 3
 * /tmp/ab -- conv --layers resnet50 --only resnet_1 --N 1`). */
static ps_status copy_parts(ps_exec *e)
{
    const ps_conv_shape *c = &e->conv;
    const int64_t per_row = e->copy_rows / (c->N * c->H); /* copy rows per row of the view */
    e->copy_lo = malloc((size_t)e->team * sizeof *e->copy_lo);
    e->copy_hi = malloc((size_t)e->team * sizeof *e->copy_hi);
    if (!e->copy_lo || !e->copy_hi) return ps_error(PS_ERR_OUT_OF_MEMORY, "conv plan: out of memory for the input copy");
    e->copy_cap = 0;
    for (int p = 0; p < e->team; p++) {
        int64_t lo = INT64_MAX, hi = 0, box_lo[PS_DIM_COUNT], box_hi[PS_DIM_COUNT], begin, end;
        ps_exec_part_range(e, p, &begin, &end);
        for (int64_t it = begin; it < end; it++) {
            if (!ps_exec_band_box(e, it, box_lo, box_hi)) continue;
            int64_t first = INT64_MAX, last = -1; /* input rows of the box's output rows */
            for (int64_t oh = box_lo[PS_DIM_OH]; oh < box_hi[PS_DIM_OH]; oh++) {
                if (e->r_hi[oh] <= e->r_lo[oh]) continue;
                const int64_t ih0 = oh * c->sh - c->pt;
                first = min64(first, ih0 + e->r_lo[oh] * c->dh);
                last = max64(last, ih0 + (e->r_hi[oh] - 1) * c->dh);
            }
            if (last < 0) continue;
            lo = min64(lo, (box_lo[PS_DIM_N] * c->H + first) * per_row);
            hi = max64(hi, ((box_hi[PS_DIM_N] - 1) * c->H + last + 1) * per_row);
        }
        if (hi <= lo) lo = hi = 0;
        e->copy_lo[p] = lo;
        e->copy_hi[p] = hi;
        e->copy_cap = max64(e->copy_cap, hi - lo);
    }
    return PS_SUCCESS;
}

static ps_status build_conv(ps_exec *e, const ps_problem *p, size_t stream_bytes)
{
    e->conv = p->conv;
    const ps_conv_shape *c = &e->conv;
    e->post_ops = p->desc.u.conv.post_ops;
    /* the widest vectors this CPU runs (the epilogue's results do not
     * depend on the table) */
    e->rows = ps_row_kernels_for(16);
    e->nchw = p->desc.u.conv.layout == PS_LAYOUT_NCHW;
    e->m_tail = c->K - (e->ext[PS_DIM_K] - 1) * e->ks.m;
    e->m_rows[0] = ps_exec_kernel_rows(e->ks.m);
    e->m_rows[1] = ps_exec_kernel_rows(e->m_tail);
    e->k_full_blocks = c->C / e->ks.k;
    e->k_tail = c->C % e->ks.k;
    e->k_blocks = ceil_div(c->C, e->ks.k);
    e->batch_cap = min64(e->ks.batch, e->k_blocks) * c->R * c->S;

    e->r_lo = malloc((size_t)c->OH * sizeof *e->r_lo);
    e->r_hi = malloc((size_t)c->OH * sizeof *e->r_hi);
    e->seg_begin = malloc((size_t)(e->ext[PS_DIM_OW] + 1) * sizeof *e->seg_begin);
    /* Merged taps turn k = C into k = taps x C (ps_conv_merges_taps says when
     * that pays); they need the whole C in one block and adjacent taps. */
    e->merge_taps = ps_conv_merge_taps_view(&e->conv, e->ks.k);
    if (e->merge_taps) {
        e->batch_cap = c->R;
        e->tap_phases = ps_conv_tap_phases(c);
        /* Columns that reach into the left or right padding read a copy of
         * the input padded with zeros instead (the view above: c is now the
         * unpadded conv over that copy). Without it such a column
         * reduces over fewer taps, and a block holding one was split by taps
         * (2-3 passes of short reductions over nearly all its columns:
         * resnet_00 ran every block with k = 3-15 instead of 21) or by
         * columns (a one-column call per edge column, at half speed or less).
         * The copy writes one float per input float, against >= 256 flops
         * per input float for merged taps (R*K >= 128*sh). Measured (VM, 2
         * threads, old and new binary alternating, four pairs per batch
         * size): resnet_00 0.925-0.938 -> 0.947-0.961x oneDNN at N = 2,
         * vgga_01 0.834-0.845 -> 0.845-0.869; copying all columns ran
         * 1.3-5% faster than copying the edge blocks or edge strips only
         * (prototypes, timed with bench/ab.sh). */
    }
    /* The input copy each execution makes (padded, or subsampled for a
     * strided 1x1: ps_conv_shape), row by row: input rows, or output rows. */
    if (c->padded_copy || c->sub_h > 1 || c->sub_w > 1) {
        int64_t floats;
        if (!ps_mul_ok(c->N * c->H, c->W * c->C, &floats))
            return ps_error(PS_ERR_OVERFLOW, "conv plan: input copy too large");
        e->copy_rows = c->N * (c->padded_copy ? c->H : (c->src_H - 1) / c->sub_h + 1);
        e->copy_row_floats = floats / e->copy_rows;
    }
    /* Few input channels, one reduction block, post-ops: the epilogue as a
     * pass of its own (a load and a store per output vector, against C
     * FMAs) would cost a fifth of the layer; the row kernels' small GEMM
     * applies it in registers (blocks of whole vectors; a tail block of
     * other rows keeps LIBXSMM). */
    e->small_1x1 = e->post_ops && !e->nchw && !e->merge_taps && c->R == 1 && c->S == 1 && c->sh == 1 && c->sw == 1 &&
                   c->pt == 0 && c->pl == 0 && c->C <= PS_SMALL_GEMM_MAX_C && e->k_blocks == 1 && e->ext[PS_DIM_C] == 1 &&
                   e->ks.m % 16 == 0 && e->ks.m <= 64;
    /* a slice of a wider tensor (ldo > K) is written in parts of lines: never streamed */
    e->stream_out = stream_output(e, (double)ps_conv_dst_elems(c) * sizeof(float), stream_bytes) && !e->post_ops && !e->nchw &&
                    c->ldo == c->K;
    /* Segments: one per block (merged taps), else at most one per filter
     * column and block. */
    e->segs = malloc((size_t)(e->ext[PS_DIM_OW] * (e->merge_taps ? 1 : c->S)) * sizeof *e->segs);
    e->block_zero = malloc((size_t)e->ext[PS_DIM_OW]);
    if (!e->r_lo || !e->r_hi || !e->seg_begin || !e->segs || !e->block_zero)
        return ps_error(PS_ERR_OUT_OF_MEMORY, "conv plan: out of memory for the padding geometry");

    /* Valid filter rows of output row oh: 0 <= oh*sh - pt + r*dh < H. */
    for (int64_t oh = 0; oh < c->OH; oh++) {
        int64_t ih0 = oh * c->sh - c->pt;
        e->r_lo[oh] = max64(0, ceil_div(max64(0, -ih0), c->dh));
        e->r_hi[oh] = min64(c->R, ps_floor_div(c->H - 1 - ih0, c->dh) + 1);
        if (e->r_hi[oh] < e->r_lo[oh]) e->r_hi[oh] = e->r_lo[oh];
    }
    ps_status st;
    if (e->copy_rows && (st = copy_parts(e))) return st;
    /* Segments: per block, all its columns over all taps (merged taps: the
     * input is unpadded across or read from the padded copy), or else runs
     * of filter columns valid on the same output columns, the one spanning
     * the whole block (if any) first so it can initialise the tile. */
    const int64_t ldb = c->sw * c->C, ldc = c->ldo;
    int64_t ns = 0;
    for (int64_t b = 0; b < e->ext[PS_DIM_OW]; b++) {
        e->seg_begin[b] = ns;
        const int64_t a0 = b * e->ks.n, a1 = min64((b + 1) * e->ks.n, c->OW);
        if (e->merge_taps) {
            e->block_zero[b] = 0;
            e->segs[ns++] = (ps_conv_segment){.ow0 = a0, .width = a1 - a0, .s_lo = 0, .s_hi = c->S};
            continue;
        }
        e->block_zero[b] = 1;
        for (int64_t s = 0; s < c->S; s++) {
            /* Valid output columns of tap s: 0 <= ow*sw - pl + s*dw < W. */
            int64_t lo = max64(a0, ceil_div(max64(0, c->pl - s * c->dw), c->sw));
            int64_t hi = min64(a1, ps_floor_div(c->W - 1 + c->pl - s * c->dw, c->sw) + 1);
            if (hi <= lo) continue;
            ps_conv_segment *last = ns > e->seg_begin[b] ? &e->segs[ns - 1] : NULL;
            if (last && last->s_hi == s && last->ow0 == lo && last->width == hi - lo) {
                last->s_hi = s + 1;
            } else {
                e->segs[ns++] = (ps_conv_segment){.ow0 = lo, .width = hi - lo, .s_lo = s, .s_hi = s + 1};
            }
        }
        for (int64_t i = e->seg_begin[b]; i < ns; i++)
            if (e->segs[i].ow0 == a0 && e->segs[i].width == a1 - a0) {
                ps_conv_segment full = e->segs[i];
                memmove(&e->segs[e->seg_begin[b] + 1], &e->segs[e->seg_begin[b]],
                        (size_t)(i - e->seg_begin[b]) * sizeof full);
                e->segs[e->seg_begin[b]] = full;
                e->block_zero[b] = 0;
                break;
            }
    }
    e->seg_begin[e->ext[PS_DIM_OW]] = ns;
    e->n_segs = ns;
    for (int64_t b = 0; b < e->ext[PS_DIM_OW]; b++) {
        /* A block's calls are its only writes where one segment spans it. */
        const int sole = e->stream_out && e->seg_begin[b + 1] - e->seg_begin[b] == 1 && !e->block_zero[b];
        for (int64_t i = e->seg_begin[b]; i < e->seg_begin[b + 1]; i++) {
            /* Identical shapes share kernels: LIBXSMM's registry returns the same code. */
            ps_conv_segment *sg = &e->segs[i];
            if (e->merge_taps) {
                const int64_t q = e->tap_phases, taps = sg->s_hi - sg->s_lo;
                sg->wide_phases = sg->width % q ? sg->width % q : q;
                if ((st = dispatch_set(&sg->kernels, e, ceil_div(sg->width, q), taps, e->m_rows[0], e->m_rows[1], q * ldb,
                                       q * ldc, sole)))
                    return st;
                if (sg->width % q && sg->width / q > 0 &&
                    (st = dispatch_set(&sg->kernels_narrow, e, sg->width / q, taps, e->m_rows[0], e->m_rows[1], q * ldb,
                                       q * ldc, sole)))
                    return st;
            } else if ((st = dispatch_set(&sg->kernels, e, sg->width, 1, e->m_rows[0], e->m_rows[1], ldb, ldc, sole))) {
                return st;
            }
        }
    }
    return PS_SUCCESS;
}

/* Whether the walk suits per-thread panels: past the parallel band, the
 * reduction-chunk loop comes before every m and n loop, so a thread runs all
 * blocks of its band tile for one chunk before the next chunk, and panels
 * packed at the chunk's first call serve the whole chunk. Sets panel_m/n. */
static int gemm_panel_walk(ps_exec *e)
{
    int chunk_loops = 0, block_loop_seen = 0;
    e->panel_m = e->ext[PS_DIM_K];
    e->panel_n = e->ext[PS_DIM_OW];
    for (int i = 0; i < e->n_loops; i++) {
        const ps_loop *l = &e->loops[i];
        if (i < e->n_parallel) {
            if (l->dim == PS_DIM_C) return 0;
            if (l->dim == PS_DIM_K) e->panel_m = min64(e->panel_m, l->tile);
            if (l->dim == PS_DIM_OW) e->panel_n = min64(e->panel_n, l->tile);
        } else if (l->dim == PS_DIM_C) {
            if (block_loop_seen || l->tile != 1 || chunk_loops++) return 0;
        } else if (l->dim == PS_DIM_K || l->dim == PS_DIM_OW) {
            block_loop_seen = 1;
        }
    }
    return chunk_loops == 1 || e->ext[PS_DIM_C] == 1;
}

static ps_status build_gemm(ps_exec *e, const ps_problem *p, size_t llc_bytes, size_t panel_bytes, size_t stream_bytes)
{
    e->gemm = p->gemm;
    const ps_gemm_shape *g = &e->gemm;
    e->m_tail = g->M - (e->ext[PS_DIM_K] - 1) * e->ks.m;
    e->m_rows[0] = e->ks.m; /* not padded: A may be read in place */
    e->m_rows[1] = e->m_tail;
    e->n_tail = g->N - (e->ext[PS_DIM_OW] - 1) * e->ks.n;
    e->k_full_blocks = g->K / e->ks.k;
    e->k_tail = g->K % e->ks.k;
    e->k_blocks = ceil_div(g->K, e->ks.k);
    e->batch_cap = min64(e->ks.batch, e->k_blocks);
    /* Both operands are packed into contiguous blocks each execution (A: m x k
     * blocks, lda = m; B: k x n blocks, ldb = k), as BLAS does: unpacked,
     * the columns of one block sit lda floats apart and collide in the same
     * cache sets (2048 floats = 8 KiB apart: one L1 set). Packing also
     * applies transposes and alpha, which LIBXSMM's kernels do not take.
     * Except A when few column blocks reuse it (ps_gemm_a_in_place). */
    e->pack_a = !ps_gemm_a_in_place(g, e->ext[PS_DIM_OW]);
    e->pack_b = 1;
    /* Per-thread panels where they pay (ps_gemm_panels_pay) and the walk and
     * its tiles reuse each panel: a side the tiles cut has at least
     * PS_GEMM_PANEL_MIN_BLOCKS blocks per tile. */
    if (ps_gemm_panels_pay(g, llc_bytes, panel_bytes) && gemm_panel_walk(e) &&
        (e->panel_m >= PS_GEMM_PANEL_MIN_BLOCKS || e->panel_m == e->ext[PS_DIM_K]) &&
        (e->panel_n >= PS_GEMM_PANEL_MIN_BLOCKS || e->panel_n == e->ext[PS_DIM_OW]))
        e->panels = e->pack_a = 1;
    if (!e->panels) e->team = e->nthreads;
    e->lda = e->pack_a ? e->ks.m : g->lda;
    e->ldb = e->ks.k;
    e->stream_out = g->beta == 0.0f && stream_output(e, (double)g->N * (double)g->ldc * sizeof(float), stream_bytes);
    ps_status st;
    if (e->ext[PS_DIM_OW] > 1 && (st = dispatch_set(&e->gemm_kernels[0], e, e->ks.n, 1, e->lda, e->lda, e->ldb, g->ldc, e->stream_out)))
        return st;
    if ((st = dispatch_set(&e->gemm_kernels[1], e, e->n_tail, 1, e->lda, e->lda, e->ldb, g->ldc, e->stream_out))) return st;
    return PS_SUCCESS;
}

/* Per thread: the batch address lists, in regions a page apart. Lists of
 * the two threads in adjacent lines (one 128-byte pair) slowed whole layers
 * down although no line is shared, as when a core's prefetcher pulls in the
 * line the other keeps rewriting (vgga_01, DNN plan, 2 threads, one process
 * per run: 1.47 / 2.09 / 2.10 ms with 64-byte regions, 1.01-1.06 ms a page
 * apart; every other set 0.3-4% faster, bench/ab.sh). */
#define THREAD_REGION_ALIGN ((size_t)4096)
static size_t round_region(size_t b)
{
    return (b + THREAD_REGION_ALIGN - 1) / THREAD_REGION_ALIGN * THREAD_REGION_ALIGN;
}

/* A thread's region: the address lists, the padded kernels' scratch block
 * (the most rows a padded block computes x n), then (panels) the A and B
 * panel buffers; set once here, the executor only adds the offsets. */
static void layout_thread_region(ps_exec *e)
{
    int64_t cpad_rows = 0;
    for (int mt = 0; mt < 2; mt++)
        if (ps_exec_padded(e, mt) && e->m_rows[mt] > cpad_rows) cpad_rows = e->m_rows[mt];
    e->cpad_offset = round_region(2 * (size_t)e->batch_cap * sizeof(float *));
    e->panel_offset = e->cpad_offset + round_region((size_t)(cpad_rows * e->ks.n) * sizeof(float));
    e->panel_a_floats = e->panels ? (size_t)(e->panel_m * e->batch_cap * e->ks.m * e->ks.k) : 0;
    const size_t panel_b_floats = e->panels ? (size_t)(e->panel_n * e->batch_cap * e->ks.k * e->ks.n) : 0;
    e->copy_offset = e->panel_offset + round_region((e->panel_a_floats + panel_b_floats) * sizeof(float));
    e->thread_bytes = e->copy_offset + round_region((size_t)(e->copy_cap * e->copy_row_floats) * sizeof(float));
}

ps_status ps_exec_build(ps_exec *e, const ps_problem *p, const ps_schedule *sched, int nthreads, const ps_machine *m)
{
    memset(e, 0, sizeof *e);
    const ps_stage *sg = &sched->stages[0];
    e->kind = p->desc.kind;
    e->ks = sg->kernel;
    e->n_loops = sg->n_loops;
    memcpy(e->loops, sg->loops, sizeof e->loops);
    if (e->kind == PS_OP_GEMM && p->desc.u.gemm.order == PS_ROW_MAJOR) {
        /* The schedule speaks of the user's rows (m) and columns (n) of C;
         * the executor computes the transposed column-major problem. */
        e->ks.m = sg->kernel.n;
        e->ks.n = sg->kernel.m;
        for (int i = 0; i < e->n_loops; i++)
            e->loops[i].dim = e->loops[i].dim == PS_DIM_K ? PS_DIM_OW : e->loops[i].dim == PS_DIM_OW ? PS_DIM_K : e->loops[i].dim;
    }
    while (e->n_parallel < e->n_loops && e->loops[e->n_parallel].parallel) e->n_parallel++;
    e->clear_upper = __builtin_cpu_supports("avx");
    e->nthreads = nthreads < 1 ? 1 : nthreads;
    if (e->kind == PS_OP_GEMM) {
        /* The normalized problem's tile space (the kernel swapped above). */
        const ps_gemm_shape *g = &p->gemm;
        e->ext[PS_DIM_N] = e->ext[PS_DIM_OH] = 1;
        e->ext[PS_DIM_K] = (g->M + e->ks.m - 1) / e->ks.m;
        e->ext[PS_DIM_OW] = (g->N + e->ks.n - 1) / e->ks.n;
        e->ext[PS_DIM_C] = ((g->K + e->ks.k - 1) / e->ks.k + e->ks.batch - 1) / e->ks.batch;
    } else {
        ps_tile_space_extents(p, &e->ks, e->ext);
    }
    /* The parallel band's iterations, counted once here for every execution
     * (the same walk ps_rank_shape counts for the rankers). */
    int64_t left[PS_DIM_COUNT];
    memcpy(left, e->ext, sizeof left);
    e->band_total = 1;
    for (int i = 0; i < e->n_parallel; i++) e->band_total *= e->band_trips[i] = ps_loop_trips(&e->loops[i], left);
    /* No more threads than band iterations: a thread without any would only
     * cost the fork and join (a 1x1 image of 1024 -> 5 channels, one image:
     * 2.8 us on two threads, 2.2 us on one). GEMMs that pack their operands
     * in a pass give every thread a share of it (build_gemm). */
    e->team = (int)min64(e->nthreads, max64(e->band_total, 1));
    const size_t stream_bytes = ps_machine_stream_bytes(m);
    ps_status st = e->kind == PS_OP_GEMM ? build_gemm(e, p, ps_machine_cache_bytes(m, 3), ps_machine_panel_bytes(m),
                                                      stream_bytes)
                                         : build_conv(e, p, stream_bytes);
    if (st) {
        ps_exec_release(e);
        return st;
    }
    layout_thread_region(e);
    return PS_SUCCESS;
}

void ps_exec_release(ps_exec *e)
{
    free(e->r_lo);
    free(e->r_hi);
    free(e->seg_begin);
    free(e->segs);
    free(e->block_zero);
    free(e->copy_lo);
    free(e->copy_hi);
    e->block_zero = NULL;
    e->copy_lo = e->copy_hi = NULL;
    e->r_lo = e->r_hi = e->seg_begin = NULL;
    e->segs = NULL;
}
