/* Executing a planned stage graph (graph_exec.h): groups in order, the
 * tiles of a group in parallel, the members of a tile one after another,
 * each member one row (of one channel) at a time through a row kernel. */
#include "execution/graph_exec.h"
#include "core/intmath.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t ceil_div(int64_t a, int64_t b) { return -ps_floor_div(-a, b); }
static inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Element (c, y, x) of a stored tensor or region is at
 * base + c * cs + (y - y0) * rs + (x - x0) * ps. */
typedef struct view {
    float *base;
    int64_t cs, rs, ps;
    int64_t y0, x0;
    ps_box dom;           /* where the tensor is defined (reads outside use the boundary) */
    int64_t ring;         /* > 0: rows live at (y - y0) mod ring */
    /* a tensor in memory whose rows are requested ahead of their first
     * read: the rows and columns it stores; else NULL */
    const ps_box *prefetch;
    const ps_row_kernels *stream; /* destinations: rows go out with streaming stores */
} view;

static inline int64_t row_slot(const view *v, int64_t y)
{
    int64_t r = y - v->y0;
    return v->ring > 0 ? r % v->ring : r;
}

typedef struct thread_bufs {
    float *area;          /* scratch of the group's members */
    float *staging;
    float *temp;          /* rows on their way to a strided (NHWC) destination */
    float *vrow;          /* bilinear: the vertically interpolated row; temp + temp_floats */
    size_t temp_floats;   /* temp's length: a tap program's rows b use temp + b * temp_floats */
    float *regs;
    float *fused;         /* producer epilogues: one chunk per input of the reader */
    const float *zeros;
    const float *ninf, *pinf; /* rows of -inf and +inf: what IGNORE reads in a max and a min */
    const float *src[PS_STENCIL_MAX_TAPS];
    const float *rowp[PS_STENCIL_MAX_TAPS];
    const float *bptr[PS_CONV_MAX_TAPS];
} thread_bufs;

/* The row a read outside the domain gives under boundary bd (ZERO,
 * IGNORE): zeros, or for IGNORE in a max (min) -inf (+inf). */
static const float *fill_row(const ps_pstage *S, const thread_bufs *tb)
{
    if (S->boundary == PS_BOUNDARY_IGNORE && S->kind == PS_NODE_STENCIL && S->reduce != PS_REDUCE_SUM)
        return S->reduce == PS_REDUCE_MAX ? tb->ninf : tb->pinf;
    return tb->zeros;
}

static inline int outside_is_fill(ps_boundary bd) { return bd == PS_BOUNDARY_ZERO || bd == PS_BOUNDARY_IGNORE; }

/* Asks for rows [ya, yb) of channel c, columns [x0, x0 + n) (the part
 * inside the domain), of a planar tensor in memory to come into L2 before
 * their first read. A reader row first touches its input's newest rows,
 * and one thread's demand misses alone reach about half of the memory
 * bandwidth (18 of 37 GB/s on a Zen 4 VM), so those rows are requested one
 * reader row ahead: they stream in while the thread computes the group's
 * other members. Only tensors too large for the last-level cache
 * (ps_gx_stage.prefetch): for rows in cache the requests and the pieces
 * they split the row kernels' calls into cost 5-10%. */
static void prefetch_rows(const view *v, int64_t c, int64_t ya, int64_t yb, int64_t x0, int64_t n)
{
    if (!v->prefetch || v->ps != 1) return;
    const ps_box *d = v->prefetch;
    if (ya < d->y0) ya = d->y0;
    if (yb > d->y0 + d->h) yb = d->y0 + d->h;
    int64_t xa = x0 > d->x0 ? x0 : d->x0, xb = x0 + n < d->x0 + d->w ? x0 + n : d->x0 + d->w;
    if (xb <= xa) return;
    for (int64_t y = ya; y < yb; y++) {
        const char *row = (const char *)(v->base + c * v->cs + row_slot(v, y) * v->rs);
        uintptr_t a = (uintptr_t)(row + (xa - v->x0) * (int64_t)sizeof(float)) & ~(uintptr_t)63,
                  b = (uintptr_t)(row + (xb - v->x0) * (int64_t)sizeof(float));
        for (; a < b; a += 64) __builtin_prefetch((const void *)a, 0, 2);
    }
}

/* Row y, columns [x0, x0 + n) of channel c, with the boundary applied
 * outside the domain (zeros: the row ZERO and IGNORE read there): a
 * pointer into the tensor when the columns are inside and contiguous, else
 * a copy in `stage`. */
static const float *fetch(const view *v, int64_t c, int64_t y, int64_t x0, int64_t n, ps_boundary bd, float *stage,
                          const float *zeros)
{
    const ps_box *d = &v->dom;
    if (y < d->y0 || y >= d->y0 + d->h) {
        if (outside_is_fill(bd)) return zeros;
        y = clamp64(y, d->y0, d->y0 + d->h - 1);
    }
    const float *row = v->base + c * v->cs + row_slot(v, y) * v->rs;
    int64_t lo = d->x0, hi = d->x0 + d->w;
    if (x0 >= lo && x0 + n <= hi && v->ps == 1) return row + (x0 - v->x0);
    /* Columns before the domain, inside it (one copy), after it. */
    int64_t a = x0 < lo ? (lo - x0 < n ? lo - x0 : n) : 0;
    int64_t b = x0 + n > hi ? (x0 + n - hi < n - a ? x0 + n - hi : n - a) : 0;
    /* the edge pixels are stored only when a clamped read needs them */
    float left = !a ? 0.0f : outside_is_fill(bd) ? zeros[0] : row[(lo - v->x0) * v->ps];
    float right = !b ? 0.0f : outside_is_fill(bd) ? zeros[0] : row[(hi - 1 - v->x0) * v->ps];
    for (int64_t i = 0; i < a; i++) stage[i] = left;
    const float *src = row + (x0 + a - v->x0) * v->ps;
    if (v->ps == 1) memcpy(stage + a, src, (size_t)(n - a - b) * sizeof *stage);
    else
        for (int64_t i = a; i < n - b; i++) stage[i] = src[(i - a) * v->ps];
    for (int64_t i = n - b; i < n; i++) stage[i] = right;
    return stage;
}

/* Where row y of channel c (columns from x0) is written: the destination
 * itself when contiguous, else the temporary row, scattered by put_row. */
static float *dst_row(const view *o, int64_t c, int64_t y, int64_t x0, float *temp)
{
    if (o->ps != 1 || o->stream) return temp;
    return o->base + c * o->cs + row_slot(o, y) * o->rs + (x0 - o->x0);
}

static void put_row(const view *o, int64_t c, int64_t y, int64_t x0, int64_t n, const float *row)
{
    float *d = o->base + c * o->cs + row_slot(o, y) * o->rs + (x0 - o->x0) * o->ps;
    if (o->ps == 1) {
        if (o->stream) o->stream->stream_copy(d, row, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) d[i * o->ps] = row[i];
}

/* mix_row for more than PS_STENCIL_MAX_TAPS input channels: blocks of
 * channels, each block's sum starting from the last block's (a tap of
 * weight 1), alternating between dst and tb->vrow so that no call's output
 * is one of its inputs. */
static __attribute__((noinline)) void mix_row_blocked(const ps_graph_plan *pl, const ps_pstage *S, int64_t k,
                                                      float *dst, int64_t y, int64_t x0, int64_t w, const view *in,
                                                      thread_bufs *tb)
{
    const float *wk = S->mix_w + k * S->in_c;
    float wb[PS_STENCIL_MAX_TAPS];
    const int64_t blk = PS_STENCIL_MAX_TAPS - 1, nb = ceil_div(S->in_c, blk);
    const float *prev = NULL;
    for (int64_t b = 0; b < nb; b++) {
        int n = 0;
        if (prev) {
            tb->src[n] = prev;
            wb[n++] = 1.0f;
        }
        int64_t c0 = b * blk, c1 = c0 + blk < S->in_c ? c0 + blk : S->in_c;
        for (int64_t ci = c0; ci < c1; ci++) {
            tb->src[n] = fetch(in, ci, y, x0, w, PS_BOUNDARY_CLAMP, tb->staging + (ci - c0) * w, tb->zeros);
            wb[n++] = wk[ci];
        }
        float *o = (nb - 1 - b) & 1 ? tb->vrow : dst;
        pl->k->sum(o, w, tb->src, wb, n, 1, prev ? 0.0f : S->bias ? S->bias[k] : 0.0f);
        prev = o;
    }
    if (S->act) pl->k->clamp(dst, w, S->act_lo, S->act_hi);
}

/* Output channel k of a channel mix: row y, columns [x0, x0 + w), into dst.
 * Up to PS_STENCIL_MAX_TAPS input channels the caller has put the input
 * rows in tb->src (fetched once for every output channel; they are left
 * there as found); where `next` and the input is in memory, row y + 1 of
 * every input channel is requested a piece at a time (prefetch_rows). */
static void mix_row(const ps_graph_plan *pl, const ps_pstage *S, int64_t k, float *dst, int64_t y, int64_t x0,
                    int64_t w, const view *in, int next, thread_bufs *tb)
{
    if (S->in_c > PS_STENCIL_MAX_TAPS) {
        mix_row_blocked(pl, S, k, dst, y, x0, w, in, tb);
        return;
    }
    const ps_row_kernels *K = pl->k;
    const float *wk = S->mix_w + k * S->in_c;
    const float bias = S->bias ? S->bias[k] : 0.0f;
    const int n_in = (int)S->in_c;
    if (!next || !in->prefetch) {
        K->sum(dst, w, tb->src, wk, n_in, 1, bias);
        if (S->act) K->clamp(dst, w, S->act_lo, S->act_hi);
        return;
    }
    const int64_t piece = pl->prefetch_piece;
    int64_t off = 0;
    for (; off < w; off += piece) {
        int64_t n = w - off < piece ? w - off : piece;
        K->sum(dst + off, n, tb->src, wk, n_in, 1, bias);
        if (S->act) K->clamp(dst + off, n, S->act_lo, S->act_hi);
        for (int ci = 0; ci < n_in; ci++) {
            prefetch_rows(in, ci, y + 1, y + 2, x0 + off, n);
            tb->src[ci] += n;
        }
    }
    for (int ci = 0; ci < n_in; ci++) tb->src[ci] -= w;
}

/* n outputs of a planar sum stencil from its taps src (tap order) or, for
 * a box stage, from its rows at column `off` (rows[r] at its dx_min). */
static void stencil_sum(const ps_row_kernels *K, const ps_pstage *S, const ps_gx_stage *X, float *out, int64_t n,
                        const float *const *src, const float *const *rows, int64_t off, const float *w, float bias)
{
    if (!X->box_s) {
        K->sum(out, n, src, w, S->n_taps, S->sx, bias);
        return;
    }
    const float *at[PS_BOX_MAX_TAPS / 2];
    for (int r = 0; r < X->n_rows; r++) at[r] = rows[r] + off;
    K->box_sum(out, n, at, X->n_rows, X->box_s, bias);
}

/* One row segment of one channel of a stencil, channel mix or resampling
 * stage: row y, columns [x0, x0 + w), into dst (contiguous). */
static void stage_row(const ps_graph_plan *pl, int s, int64_t c, int64_t y, int64_t x0, int64_t w, const view *in,
                      float *dst, thread_bufs *tb)
{
    const ps_pstage *S = &pl->pipe.st[s];
    const ps_gx_stage *X = &pl->xs[s];
    const ps_row_kernels *K = pl->k;
    switch (S->kind) {
    case PS_NODE_STENCIL: {
        /* Columns whose taps all fall inside the input's domain read it in
         * place; only the few at the domain's edges go through a copy with
         * the boundary applied (a whole-row copy per row would double the
         * traffic of wide tiles). */
        const ps_box *d = &in[0].dom;
        int64_t ix0 = ceil_div(d->x0 - X->dx_min, S->sx), ix1 = ps_floor_div(d->x0 + d->w - 1 - X->dx_max, S->sx) + 1;
        if (ix0 < x0) ix0 = x0;
        if (ix1 > x0 + w) ix1 = x0 + w;
        if (ix1 < ix0) ix1 = ix0 = x0 + w; /* no interior: one edge part */
        int64_t part[3][2] = {{x0, ix0}, {ix0, ix1}, {ix1, x0 + w}};
        const float *wts = S->w + (S->per_channel ? c * S->n_taps : 0);
        for (int pi = 0; pi < 3; pi++) {
            int64_t a = part[pi][0], np = part[pi][1] - a;
            if (np <= 0) continue;
            int64_t len = S->sx * (np - 1) + (X->dx_max - X->dx_min) + 1, xs = S->sx * a + X->dx_min;
            for (int r = 0; r < X->n_rows; r++)
                tb->rowp[r] = fetch(&in[0], c, S->sy * y + X->row_dy[r], xs, len, S->boundary, tb->staging + r * len,
                                    fill_row(S, tb));
            for (int t = 0; t < S->n_taps; t++) tb->src[t] = tb->rowp[X->tap_row[t]] + (S->dx[t] - X->dx_min);
            float *dp = dst + (a - x0);
            const float bias = S->bias ? S->bias[c] : 0.0f;
            if (!in[0].prefetch) {
                if (S->reduce == PS_REDUCE_SUM) stencil_sum(K, S, X, dp, np, tb->src, tb->rowp, 0, wts, bias);
                else K->maxmin(dp, np, tb->src, wts, S->n_taps, S->sx, S->reduce == PS_REDUCE_MAX);
                if (S->act) K->clamp(dp, np, S->act_lo, S->act_hi);
                continue;
            }
            /* the rows row y + 1 reads that row y did not, a piece at a time */
            const int64_t next = S->sy * y + X->row_dy[X->n_rows - 1] + 1, piece = pl->prefetch_piece;
            for (int64_t off = 0; off < np; off += piece) {
                int64_t n = np - off < piece ? np - off : piece;
                if (S->reduce == PS_REDUCE_SUM) stencil_sum(K, S, X, dp + off, n, tb->src, tb->rowp, off, wts, bias);
                else K->maxmin(dp + off, n, tb->src, wts, S->n_taps, S->sx, S->reduce == PS_REDUCE_MAX);
                if (S->act) K->clamp(dp + off, n, S->act_lo, S->act_hi);
                prefetch_rows(&in[0], c, next, next + S->sy, xs + S->sx * off, S->sx * (n - 1) + (X->dx_max - X->dx_min) + 1);
                for (int t = 0; t < S->n_taps; t++) tb->src[t] += S->sx * n;
            }
        }
        return;
    }
    case PS_NODE_MIX:
        for (int64_t ci = 0; ci < S->in_c && S->in_c <= PS_STENCIL_MAX_TAPS; ci++)
            tb->src[ci] = fetch(&in[0], ci, y, x0, w, PS_BOUNDARY_CLAMP, tb->staging + ci * w, tb->zeros);
        mix_row(pl, S, c, dst, y, x0, w, &in[0], 1, tb);
        return;
    case PS_NODE_RESAMPLE: {
        int64_t j0 = ps_floor_div(x0, 2), j1 = ps_floor_div(x0 + w - 1, 2);
        int parity = (int)(x0 - 2 * j0);
        if (S->resample == PS_RESAMPLE_UP2_NEAREST) {
            const float *src = fetch(&in[0], c, ps_floor_div(y, 2), j0, j1 - j0 + 1, S->boundary, tb->staging, tb->zeros);
            K->up2_nearest(dst, w, src, parity);
        } else if (S->resample == PS_RESAMPLE_UP2_BILINEAR) {
            /* exactly the coarse columns the outputs read: an odd first
             * column needs none left of j0, an even last none right of j1 */
            int64_t k = ps_floor_div(y, 2), far = y - 2 * k ? k + 1 : k - 1;
            int64_t lo = ps_floor_div(x0 - 1, 2), len = ps_floor_div(x0 + w, 2) - lo + 1;
            const float *a = fetch(&in[0], c, k, lo, len, S->boundary, tb->staging, tb->zeros);
            const float *f = fetch(&in[0], c, far, lo, len, S->boundary, tb->staging + len, tb->zeros);
            K->up2_bilinear_v(tb->vrow, len, a, f);
            K->up2_bilinear_h(dst, w, tb->vrow + (j0 - lo), parity);
        } else {
            const float *a = fetch(&in[0], c, 2 * y, 2 * x0, 2 * w, S->boundary, tb->staging, tb->zeros);
            const float *b = fetch(&in[0], c, 2 * y + 1, 2 * x0, 2 * w, S->boundary, tb->staging + 2 * w, tb->zeros);
            K->down2_average(dst, w, a, b);
            prefetch_rows(&in[0], c, 2 * y + 2, 2 * y + 4, 2 * x0, 2 * w);
        }
        return;
    }
    default: return;
    }
}

/* ------------------------------------------------------------ pixel rows */

/* Whether v stores each pixel's C channels contiguously (channels last). */
static inline int px_contiguous(const view *v, int64_t C) { return v->cs == 1 && v->ps == C; }

/* Row y, pixels [x0, x0 + n) with all C channels, contiguous (pixel stride
 * C), the boundary applied outside the domain (fill: the row ZERO and
 * IGNORE read there, at least n * C floats): a pointer into the tensor
 * when it stores channels last and the pixels are inside, else a copy in
 * `stage`. */
static const float *fetch_px(const view *v, int64_t C, int64_t y, int64_t x0, int64_t n, ps_boundary bd,
                             const float *fill, float *stage)
{
    const ps_box *d = &v->dom;
    if (y < d->y0 || y >= d->y0 + d->h) {
        if (outside_is_fill(bd)) return fill;
        y = clamp64(y, d->y0, d->y0 + d->h - 1);
    }
    const float *row = v->base + row_slot(v, y) * v->rs;
    int64_t lo = d->x0, hi = d->x0 + d->w;
    if (px_contiguous(v, C) && x0 >= lo && x0 + n <= hi) return row + (x0 - v->x0) * C;
    for (int64_t i = 0; i < n; i++) {
        int64_t x = x0 + i;
        float *o = stage + i * C;
        if (x < lo || x >= hi) {
            if (outside_is_fill(bd)) {
                memcpy(o, fill, (size_t)C * sizeof *o);
                continue;
            }
            x = clamp64(x, lo, hi - 1);
        }
        const float *src = row + (x - v->x0) * v->ps;
        if (v->cs == 1) memcpy(o, src, (size_t)C * sizeof *o);
        else
            for (int64_t c = 0; c < C; c++) o[c] = src[c * v->cs];
    }
    return stage;
}

/* Where pixel row y (from x0) of C channels is written: the destination
 * when it stores channels last, else the temporary row put_px scatters. */
static float *dst_px(const view *o, int64_t C, int64_t y, int64_t x0, float *temp)
{
    if (!px_contiguous(o, C) || o->stream) return temp;
    return o->base + row_slot(o, y) * o->rs + (x0 - o->x0) * C;
}

static void put_px(const view *o, int64_t C, int64_t y, int64_t x0, int64_t n, const float *row, const float *temp)
{
    if (row != temp) return;
    float *d = o->base + row_slot(o, y) * o->rs + (x0 - o->x0) * o->ps;
    if (o->cs == 1) {
        /* channels last with a wider pixel stride: a concatenation's slice */
        for (int64_t i = 0; i < n; i++) memcpy(d + i * o->ps, row + i * C, (size_t)C * sizeof *d);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < C; c++) d[i * o->ps + c * o->cs] = row[i * C + c];
}

/* The columns of a tap stage's output row [x0, x0 + w) split into the
 * part whose taps all read inside the input's columns and the edges
 * before and after it. */
static void tap_parts(const ps_pstage *S, const ps_gx_stage *X, const view *in, int64_t x0, int64_t w, int64_t part[3][2])
{
    const ps_box *d = &in->dom;
    int64_t ix0 = ceil_div(d->x0 - X->dx_min, S->sx), ix1 = ps_floor_div(d->x0 + d->w - 1 - X->dx_max, S->sx) + 1;
    if (ix0 < x0) ix0 = x0;
    if (ix1 > x0 + w) ix1 = x0 + w;
    if (ix1 < ix0) ix1 = ix0 = x0 + w;
    part[0][0] = x0, part[0][1] = ix0;
    part[1][0] = ix0, part[1][1] = ix1;
    part[2][0] = ix1, part[2][1] = x0 + w;
}

/* A stencil (depthwise convolution, pooling, batch normalization) or a
 * convolution, one output row on pixel rows: the interior part reads its
 * input in place, the edges through copies with the boundary applied. The
 * convolution is a batch-reduce GEMM per block of up to PS_CONV_NB pixels:
 * C[K x n] (bias-filled) += sum over taps of W_t[K x C] * In_t[C x n]. */
/* The first nb output pixels of a convolution block before its GEMM adds
 * the taps: the bias, plus a folded residual's pixels (res, K apart). */
static void conv_prefill(const ps_pstage *S, float *o, int64_t nb, const float *res)
{
    const int64_t K = S->c;
    for (int64_t j = 0; j < nb; j++) {
        float *oj = o + j * K;
        if (res) {
            const float *r = res + j * K;
            if (S->bias)
                for (int64_t k = 0; k < K; k++) oj[k] = S->bias[k] + r[k];
            else memcpy(oj, r, (size_t)K * sizeof *oj);
        } else if (S->bias) memcpy(oj, S->bias, (size_t)K * sizeof *oj);
        else memset(oj, 0, (size_t)K * sizeof *oj);
    }
}

/* The weight blocks of a convolution's taps as a batch-reduce call's A
 * list: refilled before every call (LIBXSMM 1.17's address-batch kernels
 * overwrite entries of their lists; see lib/execution/run.c). */
static void conv_weight_list(const ps_pstage *S, int64_t C, thread_bufs *tb)
{
    for (int t = 0; t < S->n_taps; t++) tb->src[t] = S->w + (size_t)t * (size_t)(C * S->c);
}

/* One output pixel of a tap stage whose taps point at its input's pixels
 * (tb->src for a stencil, tb->bptr for a convolution): the edge pixels,
 * whose taps outside the input read the fill row instead of a copy of
 * the row with the boundary applied. */
static void px_tap_pixel(const ps_graph_plan *pl, const ps_pstage *S, const ps_gx_stage *X, int64_t C, float *o,
                         const float *res, thread_bufs *tb)
{
    const int64_t K = S->c;
    if (S->kind == PS_NODE_STENCIL) {
        if (S->reduce == PS_REDUCE_SUM) pl->k->px_sum(o, 1, C, K, tb->src, S->pxw, S->n_taps, 0, S->bias);
        else pl->k->px_maxmin(o, 1, C, K, tb->src, S->pxw, S->n_taps, 0, S->reduce == PS_REDUCE_MAX);
    } else {
        unsigned long long count = (unsigned long long)S->n_taps;
        conv_prefill(S, o, 1, res);
        conv_weight_list(S, C, tb);
        X->conv_k[1](tb->src, tb->bptr, o, &count);
    }
    if (S->act) pl->k->clamp(o, K, S->act_lo, S->act_hi);
}

/* A stencil (depthwise convolution, pooling, batch normalization) or a
 * convolution, one output row on pixel rows: the interior part reads its
 * input in place; the edges too where the boundary is a fill (zero, or
 * ignore) and the input stores whole pixels, pixel by pixel with the taps
 * outside pointing at the fill row, else through copies of the rows with
 * the boundary applied. The convolution is a batch-reduce GEMM per block
 * of up to PS_CONV_NB pixels: C[K x n] (bias-filled) += sum over taps of
 * W_t[K x C] * In_t[C x n]. */
static void px_tap_row(const ps_graph_plan *pl, int s, int64_t y, int64_t x0, int64_t w, const view *in, float *dst,
                       thread_bufs *tb)
{
    const ps_pstage *S = &pl->pipe.st[s];
    const ps_gx_stage *X = &pl->xs[s];
    const int64_t C = pl->pipe.st[S->in[0]].c, K = S->c;
    const float *fill = fill_row(S, tb);
    if (S->kind == PS_NODE_STENCIL && S->reduce == PS_REDUCE_SUM && X->grid_s) {
        /* A grid stencil (stride 1 or 2): the whole row in one call. With a
         * fill boundary on whole stored pixels the kernel reads the input in
         * place and skips the taps outside it; else through copies of the
         * rows with the boundary applied. */
        const view *v = &in[0];
        const int64_t xs = S->sx * x0 + X->dx_min, len = S->sx * (w - 1) + X->dx_max - X->dx_min + 1;
        if (outside_is_fill(S->boundary) && px_contiguous(v, C)) {
            int64_t j0 = v->dom.x0 - xs, j1 = v->dom.x0 + v->dom.w - xs;
            if (j0 < 0) j0 = 0;
            if (j1 > len) j1 = len;
            for (int r = 0; r < X->n_rows; r++) {
                int64_t yr = S->sy * y + X->row_dy[r];
                tb->rowp[r] = j0 < j1 && yr >= v->dom.y0 && yr < v->dom.y0 + v->dom.h
                                  ? v->base + row_slot(v, yr) * v->rs + (xs + j0 - v->x0) * C
                                  : NULL;
            }
            pl->k->px_grid(dst, w, C, K, tb->rowp, S->pxw, X->n_rows, X->grid_s, S->sx, j0, j1, S->bias, S->act,
                           S->act_lo, S->act_hi);
            return;
        }
        for (int r = 0; r < X->n_rows; r++)
            tb->rowp[r] = fetch_px(v, C, S->sy * y + X->row_dy[r], xs, len, S->boundary, fill,
                                   tb->staging + (size_t)r * (size_t)(len * C));
        pl->k->px_grid(dst, w, C, K, tb->rowp, S->pxw, X->n_rows, X->grid_s, S->sx, 0, len, S->bias, S->act,
                       S->act_lo, S->act_hi);
        return;
    }
    int64_t part[3][2];
    tap_parts(S, X, &in[0], x0, w, part);
    const int in_place_edges = outside_is_fill(S->boundary) && px_contiguous(&in[0], C);
    for (int pi = 0; pi < 3; pi++) {
        int64_t a = part[pi][0], np = part[pi][1] - a;
        if (np <= 0) continue;
        float *dp = dst + (a - x0) * K;
        if (pi != 1 && in_place_edges) {
            const view *v = &in[0];
            const float *rowb[PS_STENCIL_MAX_TAPS];
            for (int r = 0; r < X->n_rows; r++) {
                int64_t yr = S->sy * y + X->row_dy[r];
                rowb[r] = yr >= v->dom.y0 && yr < v->dom.y0 + v->dom.h ? v->base + row_slot(v, yr) * v->rs : NULL;
            }
            const float *res = S->sum_in ? fetch_px(&in[1], K, y, a, np, PS_BOUNDARY_CLAMP, tb->zeros, tb->staging) : NULL;
            const float **taps = S->kind == PS_NODE_STENCIL ? tb->src : tb->bptr;
            for (int64_t i = 0; i < np; i++) {
                int64_t x = a + i;
                for (int t = 0; t < S->n_taps; t++) {
                    int64_t col = S->sx * x + S->dx[t];
                    const float *rb = rowb[X->tap_row[t]];
                    taps[t] = rb && col >= v->dom.x0 && col < v->dom.x0 + v->dom.w ? rb + (col - v->x0) * C : fill;
                }
                px_tap_pixel(pl, S, X, C, dp + i * K, res ? res + i * K : NULL, tb);
            }
            continue;
        }
        int64_t len = S->sx * (np - 1) + (X->dx_max - X->dx_min) + 1, xs = S->sx * a + X->dx_min;
        for (int r = 0; r < X->n_rows; r++)
            tb->rowp[r] = fetch_px(&in[0], C, S->sy * y + X->row_dy[r], xs, len, S->boundary, fill,
                                   tb->staging + (size_t)r * (size_t)(len * C));
        if (S->kind == PS_NODE_STENCIL) {
            for (int t = 0; t < S->n_taps; t++) tb->src[t] = tb->rowp[X->tap_row[t]] + (S->dx[t] - X->dx_min) * C;
            if (S->reduce == PS_REDUCE_SUM) pl->k->px_sum(dp, np, C, K, tb->src, S->pxw, S->n_taps, S->sx * C, S->bias);
            else pl->k->px_maxmin(dp, np, C, K, tb->src, S->pxw, S->n_taps, S->sx * C, S->reduce == PS_REDUCE_MAX);
            if (S->act) pl->k->clamp(dp, np * K, S->act_lo, S->act_hi);
            continue;
        }
        unsigned long long count = (unsigned long long)S->n_taps;
        /* a folded residual: its pixels start the sum, with the bias */
        const float *res = S->sum_in ? fetch_px(&in[1], K, y, a, np, PS_BOUNDARY_CLAMP, tb->zeros,
                                                tb->staging + (size_t)X->n_rows * (size_t)(len * C))
                                     : NULL;
        if (ps_pstage_small_gemm(S)) {
            /* the whole part in blocks of up to 64 output channels, the epilogue in registers */
            const float *x = tb->rowp[X->tap_row[0]] + (S->dx[0] - X->dx_min) * C;
            for (int64_t k0 = 0; k0 < K; k0 += 64) {
                const int mv = (int)((K - k0 < 64 ? K - k0 : 64) / 16);
                pl->k->px_small_gemm(dp + k0, K, np, mv, S->w + k0, K, C, x, C, S->bias ? S->bias + k0 : NULL,
                                     res ? res + k0 : NULL, S->act, S->act_lo, S->act_hi);
            }
            continue;
        }
        for (int64_t i = 0; i < np; i += PS_CONV_NB) {
            int64_t nb = np - i < PS_CONV_NB ? np - i : PS_CONV_NB;
            float *o = dp + i * K;
            conv_prefill(S, o, nb, res ? res + i * K : NULL);
            for (int t = 0; t < S->n_taps; t++)
                tb->bptr[t] = tb->rowp[X->tap_row[t]] + (S->sx * i + S->dx[t] - X->dx_min) * C;
            conv_weight_list(S, C, tb);
            X->conv_k[nb](tb->src, tb->bptr, o, &count);
            if (S->act) pl->k->clamp(o, nb * K, S->act_lo, S->act_hi);
        }
    }
}

/* A stage on pixel rows; 0 when it has no pixel form here (resampling, a
 * pointwise stage broadcasting a one-channel input): the per-channel rows
 * then run on these views through copies. */
static int compute_px(const ps_graph_plan *pl, int s, const ps_box *B, const view *in, const view *out, thread_bufs *tb)
{
    const ps_pstage *S = &pl->pipe.st[s];
    const int64_t C = S->c, y1 = B->y0 + B->h, x0 = B->x0, w = B->w;
    switch (S->kind) {
    case PS_NODE_STENCIL:
    case PS_NODE_CONV:
        for (int64_t y = B->y0; y < y1; y++) {
            float *d = dst_px(out, C, y, x0, tb->temp);
            px_tap_row(pl, s, y, x0, w, in, d, tb);
            put_px(out, C, y, x0, w, d, tb->temp);
        }
        return 1;
    case PS_NODE_POINTWISE:
        for (int j = 0; j < S->n_in; j++)
            if (S->bcast[j]) return 0;
        for (int64_t y = B->y0; y < y1; y++) {
            for (int j = 0; j < S->n_in; j++)
                tb->src[j] = fetch_px(&in[j], C, y, x0, w, PS_BOUNDARY_CLAMP, tb->zeros, tb->staging + (size_t)j * (size_t)(w * C));
            float *d = dst_px(out, C, y, x0, tb->temp);
            pl->k->vprog(&S->prog, d, tb->src, w * C, tb->regs);
            put_px(out, C, y, x0, w, d, tb->temp);
        }
        return 1;
    case PS_NODE_CONCAT:
        for (int64_t y = B->y0; y < y1; y++) {
            float *d = dst_px(out, C, y, x0, tb->temp);
            int64_t off = 0;
            for (int j = 0; j < S->n_in; j++) {
                int64_t cj = pl->pipe.st[S->in[j]].c;
                if (pl->xs[S->in[j]].slice_of == s) {
                    /* written into its slice of d by its own group (place_slices:
                     * d is then the stored tensor itself) */
                    off += cj;
                    continue;
                }
                const float *r = fetch_px(&in[j], cj, y, x0, w, PS_BOUNDARY_CLAMP, tb->zeros, tb->staging);
                for (int64_t i = 0; i < w; i++) memcpy(d + i * C + off, r + i * cj, (size_t)cj * sizeof *d);
                off += cj;
            }
            put_px(out, C, y, x0, w, d, tb->temp);
        }
        return 1;
    case PS_NODE_GAP: {
        /* the block is the one pixel (0, 0): sums of rows, then the mean */
        const ps_box *d = &in[0].dom;
        float *acc = tb->temp;
        memset(acc, 0, (size_t)C * sizeof *acc);
        for (int64_t y = d->y0; y < d->y0 + d->h; y++) {
            const float *r = fetch_px(&in[0], C, y, d->x0, d->w, PS_BOUNDARY_CLAMP, tb->zeros, tb->staging);
            for (int64_t i = 0; i < d->w; i++)
                for (int64_t c = 0; c < C; c++) acc[c] += r[i * C + c];
        }
        const float scale = 1.0f / (float)(d->h * d->w);
        for (int64_t c = 0; c < C; c++) acc[c] *= scale;
        float *o = dst_px(out, C, 0, 0, tb->vrow);
        if (o != tb->vrow) memcpy(o, acc, (size_t)C * sizeof *o);
        else {
            memcpy(tb->vrow, acc, (size_t)C * sizeof *o);
            put_px(out, C, 0, 0, 1, tb->vrow, tb->vrow);
        }
        return 1;
    }
    default: return 0;
    }
}

/* Rows y and y + 1 of channel c of a vertical line stencil (ps_gx_stage.vline)
 * in one sum_pair call, where both are written in place and every column
 * lies inside the input's domain (its rows in place, or a boundary's row
 * of zeros or clamped row: no copies). An input in memory has the two rows
 * the next pair reads first requested a piece at a time, as stage_row
 * does. Returns 0 where it does not apply: the caller computes the rows one
 * by one. */
static int pair_rows(const ps_graph_plan *pl, int s, int64_t c, int64_t y, int64_t x0, int64_t w, const view *in,
                     const view *out, thread_bufs *tb)
{
    const ps_pstage *S = &pl->pipe.st[s];
    const ps_gx_stage *X = &pl->xs[s];
    const ps_box *d = &in[0].dom;
    if (!X->vline || in[0].ps != 1 || x0 < d->x0 || x0 + w > d->x0 + d->w) return 0;
    float *d0 = dst_row(out, c, y, x0, tb->temp), *d1 = dst_row(out, c, y + 1, x0, tb->temp);
    if (d0 == tb->temp || d1 == tb->temp || d0 == d1) return 0;
    const int n = S->n_taps;
    for (int r = 0; r <= n; r++) tb->rowp[r] = fetch(&in[0], c, y + X->row_dy[0] + r, x0, w, S->boundary, NULL, fill_row(S, tb));
    const float bias = S->bias ? S->bias[c] : 0.0f, *wts = S->w + (S->per_channel ? c * n : 0);
    const int64_t piece = in[0].prefetch ? pl->prefetch_piece : w, next = y + X->row_dy[0] + n + 1;
    for (int64_t off = 0; off < w; off += piece) {
        const int64_t m = w - off < piece ? w - off : piece;
        for (int r = 0; r <= n; r++) tb->src[r] = tb->rowp[r] + off;
        pl->k->sum_pair(d0 + off, d1 + off, m, tb->src, wts, n, bias);
        prefetch_rows(&in[0], c, next, next + 2, x0 + off, m);
    }
    if (S->act) {
        pl->k->clamp(d0, w, S->act_lo, S->act_hi);
        pl->k->clamp(d1, w, S->act_lo, S->act_hi);
    }
    return 1;
}

static void compute_stage(const ps_graph_plan *pl, int s, const ps_box *B, const view *in, const view *out,
                          thread_bufs *tb)
{
    const ps_pstage *S = &pl->pipe.st[s];
    const ps_row_kernels *K = pl->k;
    int64_t y1 = B->y0 + B->h, w = B->w;
    if (S->px && compute_px(pl, s, B, in, out, tb)) return;
    switch (S->kind) {
    case PS_NODE_STENCIL:
    case PS_NODE_RESAMPLE:
        for (int64_t c = 0; c < S->c; c++)
            for (int64_t y = B->y0; y < y1; y++) {
                if (y + 1 < y1 && pair_rows(pl, s, c, y, B->x0, w, in, out, tb)) {
                    y++;
                    continue;
                }
                float *dst = dst_row(out, c, y, B->x0, tb->temp);
                stage_row(pl, s, c, y, B->x0, w, in, dst, tb);
                put_row(out, c, y, B->x0, w, dst);
            }
        return;
    case PS_NODE_POINTWISE:
        for (int64_t c = 0; c < S->c; c++)
            for (int64_t y = B->y0; y < y1; y++) {
                for (int j = 0; j < S->n_in; j++) {
                    const int64_t cj = S->bcast[j] ? 0 : c;
                    tb->src[j] = fetch(&in[j], cj, y, B->x0, w, PS_BOUNDARY_CLAMP, tb->staging + j * w, tb->zeros);
                    prefetch_rows(&in[j], cj, y + 1, y + 2, B->x0, w);
                }
                float *d = dst_row(out, c, y, B->x0, tb->temp);
                K->vprog(&S->prog, d, tb->src, w, tb->regs);
                put_row(out, c, y, B->x0, w, d);
            }
        return;
    case PS_NODE_MIX:
        for (int64_t y = B->y0; y < y1; y++) {
            for (int64_t ci = 0; ci < S->in_c && S->in_c <= PS_STENCIL_MAX_TAPS; ci++)
                tb->src[ci] = fetch(&in[0], ci, y, B->x0, w, PS_BOUNDARY_CLAMP, tb->staging + ci * w, tb->zeros);
            for (int64_t k = 0; k < S->c; k++) {
                float *d = dst_row(out, k, y, B->x0, tb->temp);
                mix_row(pl, S, k, d, y, B->x0, w, &in[0], k == 0, tb);
                put_row(out, k, y, B->x0, w, d);
            }
        }
        return;
    default: return;
    }
}

/* The stored tensor of stage s for image n: a graph input, the workspace
 * copy, or (output = 1) the user's output. */
static view memory_view(const ps_graph_plan *pl, int s, int64_t n, const float *const *inputs, float *const *outputs,
                        float *ws, int output, const float *zeros)
{
    const ps_pstage *S = &pl->pipe.st[s];
    view v = {0};
    if (pl->xs[s].slice_of >= 0 && !output) {
        /* its channels of the concatenation's tensor (the same pixels) */
        v = memory_view(pl, pl->xs[s].slice_of, n, inputs, outputs, ws, 0, zeros);
        v.base += pl->xs[s].slice_c0 * v.cs;
        v.dom = S->dom;
        return v;
    }
    v.dom = S->dom;
    v.ring = 0;
    v.stream = NULL;
    v.prefetch = NULL;
    if (S->needless) {
        /* Every read of it falls outside its domain (boundary ZERO): the
         * reads never reach a pixel; a zero row stands in. */
        v.base = (float *)zeros;
        v.y0 = S->dom.y0;
        v.x0 = S->dom.x0;
        return v;
    }
    if (S->kind == PS_NODE_INPUT || output) {
        const ps_box *r = output ? &S->out_region : &S->dom;
        float *base = output ? outputs[S->output_index] : (float *)inputs[S->input_index];
        int64_t plane = r->h * r->w;
        v.base = base + n * S->c * plane;
        v.y0 = r->y0;
        v.x0 = r->x0;
        if (!output && pl->xs[s].prefetch) v.prefetch = r;
        if (S->layout == PS_LAYOUT_NCHW) {
            v.cs = plane;
            v.rs = r->w;
            v.ps = 1;
        } else {
            v.cs = 1;
            v.rs = r->w * S->c;
            v.ps = S->c;
        }
        return v;
    }
    const ps_box *r = &S->need;
    int64_t plane = r->h * r->w;
    v.base = ws + pl->xs[s].ws_off + n * S->c * plane;
    v.y0 = r->y0;
    v.x0 = r->x0;
    if (pl->xs[s].prefetch) v.prefetch = r;
    if (S->px) {
        v.cs = 1;
        v.rs = r->w * S->c;
        v.ps = S->c;
    } else {
        v.cs = plane;
        v.rs = r->w;
        v.ps = 1;
    }
    return v;
}

static view scratch_view(const ps_graph_plan *pl, const ps_gx_member *m, const ps_box *B, float *area)
{
    view v;
    const ps_pstage *S = &pl->pipe.st[m->stage];
    v.base = area + m->scr_off;
    if (S->px) {
        v.cs = 1;
        v.rs = m->scr_rs * S->c;
        v.ps = S->c;
    } else {
        v.rs = m->scr_rs;
        v.cs = m->scr_h * m->scr_rs;
        v.ps = 1;
    }
    v.y0 = B->y0;
    v.x0 = B->x0;
    v.dom = pl->pipe.st[m->stage].dom;
    v.ring = m->scr_h;
    v.prefetch = NULL;
    v.stream = NULL;
    return v;
}

/* Copies the part `r` of a member's scratch region to a destination. */
static void copy_out(const ps_pstage *S, const view *from, const view *to, const ps_box *r)
{
    if (px_contiguous(from, S->c) && px_contiguous(to, S->c)) {
        for (int64_t y = r->y0; y < r->y0 + r->h; y++)
            memcpy(to->base + row_slot(to, y) * to->rs + (r->x0 - to->x0) * S->c,
                   from->base + row_slot(from, y) * from->rs + (r->x0 - from->x0) * S->c,
                   (size_t)(r->w * S->c) * sizeof(float));
        return;
    }
    if (px_contiguous(from, S->c) && to->cs == 1) {
        /* into a concatenation's slice: a pixel's channels at a time */
        for (int64_t y = r->y0; y < r->y0 + r->h; y++) {
            float *d = to->base + row_slot(to, y) * to->rs + (r->x0 - to->x0) * to->ps;
            const float *src = from->base + row_slot(from, y) * from->rs + (r->x0 - from->x0) * S->c;
            for (int64_t i = 0; i < r->w; i++) memcpy(d + i * to->ps, src + i * S->c, (size_t)S->c * sizeof *d);
        }
        return;
    }
    for (int64_t c = 0; c < S->c; c++)
        for (int64_t y = r->y0; y < r->y0 + r->h; y++) {
            const float *src = from->base + c * from->cs + row_slot(from, y) * from->rs + (r->x0 - from->x0) * from->ps;
            float *d = to->base + c * to->cs + (y - to->y0) * to->rs + (r->x0 - to->x0) * to->ps;
            if (to->ps == 1 && from->ps == 1) memcpy(d, src, (size_t)r->w * sizeof *d);
            else
                for (int64_t i = 0; i < r->w; i++) d[i * to->ps] = src[i * from->ps];
        }
}

/* The live-out's rows that go to memory: its own part of the tile, inside
 * what the destination stores. */
static ps_box stored_rows(const ps_pstage *S, const ps_gx_member *m, int64_t ti, const ps_box *B)
{
    ps_box own = ps_member_own(m, ti, 0);
    own.x0 = B->x0;
    own.w = B->w;
    return ps_box_intersect(&own, &S->need);
}

int ps_band_targets(const ps_pipeline *p, const ps_gx_group *g, const ps_box *B, int64_t ti, int64_t b,
                    const int64_t *done, int64_t *hi)
{
    int more = 0;
    for (int k = g->n - 1; k >= 0; k--) {
        const ps_gx_member *m = &g->mem[k];
        const ps_pstage *S = &p->st[m->stage];
        int64_t end = B[k].y0 + B[k].h, t = B[k].y0;
        if (ps_box_empty(&B[k])) {
            hi[k] = done[k];
            continue;
        }
        if (m->live_out) {
            ps_box own = stored_rows(S, m, ti, &B[k]);
            if (!ps_box_empty(&own)) {
                /* the band's end, in this member's rows */
                int64_t step = m->own_h * g->band / g->ty;
                int64_t e = own.y0 + (b + 1) * step;
                if (e >= own.y0 + own.h) e = own.y0 + own.h;
                else more = 1;
                if (e > t) t = e;
            }
        }
        for (int i = 0; i < m->n_reads; i++) {
            int q = m->read_by[i];
            if (hi[q] <= B[q].y0) continue;
            ps_box rows = {B[q].y0, B[q].x0, hi[q] - B[q].y0, B[q].w};
            ps_box r = ps_input_region(p, g->mem[q].stage, m->read_as[i], &rows);
            if (!ps_box_empty(&r) && r.y0 + r.h > t) t = r.y0 + r.h;
        }
        if (t > end) t = end;
        if (t < done[k]) t = done[k];
        hi[k] = t;
    }
    return more;
}

int ps_chunk_targets(const ps_pipeline *p, const ps_gx_group *g, const ps_box *B, int64_t tj, int64_t c,
                     const int64_t *done, const int64_t *hi, const int64_t *xdone, int64_t *hx)
{
    int more = 0;
    for (int k = g->n - 1; k >= 0; k--) {
        const ps_gx_member *m = &g->mem[k];
        int64_t end = B[k].x0 + B[k].w, t = B[k].x0;
        if (hi[k] <= done[k]) {
            hx[k] = xdone[k];
            continue;
        }
        if (m->live_out) {
            ps_box own = ps_member_own(m, 0, tj);
            int64_t o0 = own.x0 > B[k].x0 ? own.x0 : B[k].x0, o1 = own.x0 + own.w < end ? own.x0 + own.w : end;
            if (o1 > o0) {
                int64_t e = o0 + (c + 1) * (m->own_w * g->chunk / g->tx);
                if (e >= o1) e = o1;
                else more = 1;
                if (e > t) t = e;
            }
        }
        for (int i = 0; i < m->n_reads; i++) {
            int q = m->read_by[i];
            if (hi[q] <= done[q] || hx[q] <= B[q].x0) continue;
            ps_box blk = {done[q], B[q].x0, hi[q] - done[q], hx[q] - B[q].x0};
            ps_box r = ps_input_region(p, g->mem[q].stage, m->read_as[i], &blk);
            if (!ps_box_empty(&r) && r.x0 + r.w > t) t = r.x0 + r.w;
        }
        if (t > end) t = end;
        if (t < xdone[k]) t = xdone[k];
        hx[k] = t;
    }
    /* The band's last chunk completes every row it started: later bands
     * read these rows as whole rows. */
    if (!more)
        for (int k = 0; k < g->n; k++)
            if (hi[k] > done[k]) hx[k] = B[k].x0 + B[k].w;
    return more;
}

int64_t ps_band_low(const ps_pipeline *p, const ps_gx_group *g, const ps_box *B, int64_t ti, int k, const int64_t *done,
                    const int64_t *hi)
{
    const ps_gx_member *m = &g->mem[k];
    int64_t low = hi[k];
    if (m->live_out && !m->direct) {
        ps_box own = stored_rows(&p->st[m->stage], m, ti, &B[k]);
        int64_t a = own.y0 > done[k] ? own.y0 : done[k];
        if (!ps_box_empty(&own) && a < low) low = a;
    }
    for (int i = 0; i < m->n_reads; i++) {
        int q = m->read_by[i];
        ps_box r;
        if (g->mem[q].inlined_into >= 0) {
            /* q is computed at the taps of the sums reading its rows from
             * its own band low on: this member's rows under those */
            int64_t lq = ps_band_low(p, g, B, ti, q, done, hi);
            ps_box tap_rows = {lq, B[q].x0, hi[q] - lq, B[q].w};
            r = ps_input_region(p, g->mem[q].stage, m->read_as[i], &tap_rows);
            if (!ps_box_empty(&r) && r.y0 < low) low = r.y0;
        }
        if (hi[q] <= done[q]) continue;
        ps_box rows = {done[q], B[q].x0, hi[q] - done[q], B[q].w};
        r = ps_input_region(p, g->mem[q].stage, m->read_as[i], &rows);
        if (!ps_box_empty(&r) && r.y0 < low) low = r.y0;
    }
    return low;
}

/* A pointwise member with producer epilogues (graph_exec.h): for every row
 * and channel, a chunk of columns at a time, its fused producers compute
 * their chunk into L1 (thread_bufs.fused) and the expression reads them
 * there; its other inputs come from their rings or memory. */
static void compute_fused(const ps_graph_plan *pl, const ps_gx_group *g, const ps_gx_member *m, const ps_box *B,
                          const ps_box *boxes, const view *in, const view *out, int64_t n, const float *const *inputs,
                          float *const *outputs, float *ws, thread_bufs *tb)
{
    const ps_pstage *Q = &pl->pipe.st[m->stage];
    view pin[PS_POINTWISE_MAX_INPUTS];
    for (int j = 0; j < Q->n_in; j++) {
        if (!m->fused[j]) continue;
        const ps_gx_member *k = &g->mem[m->in_member[j]];
        const ps_pstage *K = &pl->pipe.st[k->stage];
        int pk = k->in_member[0];
        pin[j] = pk >= 0 ? scratch_view(pl, &g->mem[pk], &boxes[pk], tb->area)
                         : memory_view(pl, K->in[0], n, inputs, outputs, ws, 0, tb->zeros);
    }
    const float *src[PS_POINTWISE_MAX_INPUTS];
    int64_t y1 = B->y0 + B->h, w = B->w;
    for (int64_t c = 0; c < Q->c; c++)
        for (int64_t y = B->y0; y < y1; y++) {
            float *d = dst_row(out, c, y, B->x0, tb->temp);
            for (int64_t x0 = B->x0; x0 < B->x0 + w; x0 += PS_FUSED_CHUNK) {
                int64_t len = B->x0 + w - x0 < PS_FUSED_CHUNK ? B->x0 + w - x0 : PS_FUSED_CHUNK;
                for (int j = 0; j < Q->n_in; j++) {
                    if (!m->fused[j]) continue;
                    float *chunk = tb->fused + (size_t)j * PS_FUSED_CHUNK;
                    stage_row(pl, g->mem[m->in_member[j]].stage, c, y, x0, len, &pin[j], chunk, tb);
                    src[j] = chunk;
                }
                for (int j = 0; j < Q->n_in; j++)
                    if (!m->fused[j]) {
                        src[j] = fetch(&in[j], Q->bcast[j] ? 0 : c, y, x0, len, PS_BOUNDARY_CLAMP,
                                       tb->staging + (size_t)j * (size_t)len, tb->zeros);
                        prefetch_rows(&in[j], Q->bcast[j] ? 0 : c, y + 1, y + 2, x0, len);
                    }
                pl->k->vprog(&Q->prog, d + (x0 - B->x0), src, len, tb->regs);
            }
            put_row(out, c, y, B->x0, w, d);
        }
}

/* Row ry of inlined producer PS (member pk) for channel c, columns [xs,
 * xs + L), into buf as the sum's fetch of its stored row would give it:
 * rows outside its domain zeros or clamped, columns outside zeros or its
 * edge values (boundary bd). pin: staging for its inputs' rows. */
static const float *producer_row(const ps_graph_plan *pl, const ps_gx_group *g, int pk, const ps_box *boxes, int64_t c,
                                 int64_t ry, int64_t xs, int64_t L, ps_boundary bd, float *buf, float *pin, int64_t stride,
                                 int64_t n, const float *const *inputs, float *const *outputs, float *ws, thread_bufs *tb)
{
    const ps_gx_member *P = &g->mem[pk];
    const ps_pstage *PS = &pl->pipe.st[P->stage];
    const ps_box *d = &PS->dom;
    if (ry < d->y0 || ry >= d->y0 + d->h) {
        if (outside_is_fill(bd)) return tb->zeros;
        ry = clamp64(ry, d->y0, d->y0 + d->h - 1);
    }
    const int64_t ca = clamp64(xs, d->x0, d->x0 + d->w - 1), cb = clamp64(xs + L - 1, d->x0, d->x0 + d->w - 1) + 1;
    const float *src[PS_POINTWISE_MAX_INPUTS];
    for (int k = 0; k < PS->n_in; k++) {
        const int mk = P->in_member[k];
        view v = mk >= 0 ? scratch_view(pl, &g->mem[mk], &boxes[mk], tb->area)
                         : memory_view(pl, PS->in[k], n, inputs, outputs, ws, 0, tb->zeros);
        src[k] = fetch(&v, PS->bcast[k] ? 0 : c, ry, ca, cb - ca, PS_BOUNDARY_CLAMP, pin + (size_t)k * (size_t)stride,
                       tb->zeros);
    }
    pl->k->vprog(&PS->prog, buf + (ca - xs), src, cb - ca, tb->regs);
    const int fill = outside_is_fill(bd);
    const float left = fill ? 0.0f : buf[ca - xs], right = fill ? 0.0f : buf[cb - 1 - xs];
    for (int64_t i = 0; i < ca - xs; i++) buf[i] = left;
    for (int64_t i = cb - xs; i < L; i++) buf[i] = right;
    return buf;
}

/* Outputs [x0, x0 + len) of row y of a tap program's member where an
 * inlined producer's taps leave its domain: the sums from rows of the
 * producer computed here (producer_row) through the stencil row kernel,
 * then the expression, the operations of the epilogue path in its order,
 * so the values are the same bit for bit. */
static void compute_taps_edge(const ps_graph_plan *pl, const ps_gx_group *g, const ps_gx_member *m, const ps_box *boxes,
                              const view *rv, int64_t c, int64_t y, int64_t x0, int64_t len, float *dst, int64_t n,
                              const float *const *inputs, float *const *outputs, float *ws, thread_bufs *tb)
{
    const ps_pstage *Q = &pl->pipe.st[m->stage];
    const ps_tprog *T = m->tap;
    const int64_t stride = PS_FUSED_CHUNK + m->tap_span;
    float *own = tb->staging + (size_t)T->n_rows * (size_t)stride;
    const float *src[PS_POINTWISE_MAX_INPUTS];
    for (int j = 0; j < T->n_terms; j++) {
        if (!T->term[j].n_taps) continue;
        const int sk = m->in_member[j], s = g->mem[sk].stage, pk = g->mem[sk].in_member[0];
        float *chunk = tb->fused + (size_t)j * PS_FUSED_CHUNK;
        src[j] = chunk;
        if (!T->term[j].inl) {
            stage_row(pl, s, c, y, x0, len, &rv[T->term[j].tap_row[0]], chunk, tb);
            continue;
        }
        const ps_pstage *S = &pl->pipe.st[s];
        const ps_gx_stage *X = &pl->xs[s];
        const int64_t xs = x0 + X->dx_min, L = len + X->dx_max - X->dx_min;
        for (int r = 0; r < X->n_rows; r++)
            tb->rowp[r] = producer_row(pl, g, pk, boxes, c, (int64_t)S->sy * y + X->row_dy[r], xs, L, S->boundary,
                                       own + (size_t)r * (size_t)stride, own + (size_t)X->n_rows * (size_t)stride, stride,
                                       n, inputs, outputs, ws, tb);
        for (int t = 0; t < S->n_taps; t++) tb->src[t] = tb->rowp[X->tap_row[t]] + (S->dx[t] - X->dx_min);
        const float *wts = S->w + (S->per_channel ? c * S->n_taps : 0);
        stencil_sum(pl->k, S, X, chunk, len, tb->src, tb->rowp, 0, wts, S->bias ? S->bias[c] : 0.0f);
        if (S->act) pl->k->clamp(chunk, len, S->act_lo, S->act_hi);
    }
    for (int j = 0; j < T->n_terms; j++) {
        if (T->term[j].n_taps) continue;
        const int r = T->term[j].tap_row[0];
        const ps_gx_taprow *R = &m->rows[r];
        src[j] = fetch(&rv[r], R->chan0 ? 0 : c, y, x0, len, PS_BOUNDARY_CLAMP, tb->staging + (size_t)r * (size_t)stride,
                       tb->zeros);
    }
    pl->k->vprog(&Q->prog, dst, src, len, tb->regs);
}

/* The views of a tap program's rows and the columns [*ix0, *ix1) (within
 * [vx0, vx1)) where every row is read in place. */
static void tap_views(const ps_graph_plan *pl, const ps_gx_group *g, const ps_gx_taprow *rows, int n_rows,
                      const ps_box *boxes, int64_t n, const float *const *inputs, float *const *outputs, float *ws,
                      thread_bufs *tb, int64_t vx0, int64_t vx1, view *rv, int64_t *ix0, int64_t *ix1)
{
    *ix0 = vx0;
    *ix1 = vx1;
    for (int r = 0; r < n_rows; r++) {
        const ps_gx_taprow *R = &rows[r];
        rv[r] = R->member >= 0 ? scratch_view(pl, &g->mem[R->member], &boxes[R->member], tb->area)
                               : memory_view(pl, R->stage, n, inputs, outputs, ws, 0, tb->zeros);
        const int64_t a = rv[r].dom.x0 - R->dx0, b = rv[r].dom.x0 + rv[r].dom.w - R->dx0 - R->span;
        if (a > *ix0) *ix0 = a;
        if (b < *ix1) *ix1 = b;
    }
    if (*ix1 < *ix0) *ix0 = *ix1 = vx1;
}

/* The end of the piece of columns from x0: the first cut after x0, at
 * most PS_FUSED_CHUNK on. */
static int64_t piece_end(int64_t x0, int64_t x1, const int64_t *cut, int n_cut)
{
    int64_t e = x1;
    for (int i = 0; i < n_cut; i++)
        if (x0 < cut[i] && cut[i] < e) e = cut[i];
    return e - x0 < PS_FUSED_CHUNK ? e : x0 + PS_FUSED_CHUNK;
}

/* Fetches a program's rows for output row y, columns [x0, x0 + len). */
static void tap_fetch(const ps_gx_taprow *rows, int n_rows, const view *rv, int64_t c, int64_t y, int64_t x0, int64_t len,
                      int64_t stride, thread_bufs *tb, const float **out)
{
    for (int r = 0; r < n_rows; r++) {
        const ps_gx_taprow *R = &rows[r];
        const int64_t ch = R->chan0 ? 0 : c, ry = (int64_t)R->sy * y + R->dy;
        out[r] = fetch(&rv[r], ch, ry, x0 + R->dx0, len + R->span, R->bd, tb->staging + (size_t)r * (size_t)stride, tb->zeros);
        if (R->ahead) prefetch_rows(&rv[r], ch, ry + R->sy, ry + R->sy + 1, x0 + R->dx0, len + R->span);
    }
}

/* A member with a tap program (graph_exec.h): per channel, two rows at a
 * time through the pair program where both are inside the inlined
 * producers' domains (else one), their rows fetched a piece of columns at
 * a time (in place where inside their domains, copied with the boundary at
 * the edges), the compiled loop computing the sums and the expression in
 * registers. Pieces break where a row's reads leave its domain, so only
 * the edge pieces are copied; outputs whose inlined taps leave a
 * producer's domain take the edge path. */
static void compute_taps(const ps_graph_plan *pl, const ps_gx_group *g, const ps_gx_member *m, const ps_box *B,
                         const ps_box *boxes, const view *out, int64_t n, const float *const *inputs,
                         float *const *outputs, float *ws, thread_bufs *tb)
{
    const ps_pstage *Q = &pl->pipe.st[m->stage];
    const ps_tprog *T = m->tap, *T2 = m->tap2;
    view rv[PS_TAP_ROWS_MAX], rv2[PS_TAP_ROWS_MAX];
    const float *rows[PS_TAP_ROWS_MAX], *wv[PS_POINTWISE_MAX_INPUTS];
    float bias[PS_POINTWISE_MAX_INPUTS] = {0};
    const int64_t x1 = B->x0 + B->w, y1 = B->y0 + B->h;
    const int64_t stride = PS_FUSED_CHUNK + m->tap_span, stride2 = PS_FUSED_CHUNK + m->tap2_span;
    /* [vx0, vx1): columns whose inlined taps stay inside their producers'
     * domains; [ix0, ix1): those every row also reads in place */
    const int64_t vx0 = m->tap_valid.x0 > B->x0 ? m->tap_valid.x0 : B->x0;
    const int64_t vx1 = m->tap_valid.x0 + m->tap_valid.w < x1 ? m->tap_valid.x0 + m->tap_valid.w : x1;
    int64_t cut[4] = {vx0, vx1, 0, 0}, cut2[4] = {vx0, vx1, 0, 0};
    tap_views(pl, g, m->rows, T->n_rows, boxes, n, inputs, outputs, ws, tb, vx0, vx1, rv, &cut[2], &cut[3]);
    if (T2) tap_views(pl, g, m->rows2, T2->n_rows, boxes, n, inputs, outputs, ws, tb, vx0, vx1, rv2, &cut2[2], &cut2[3]);
    for (int64_t c = 0; c < Q->c; c++) {
        for (int j = 0; j < T->n_terms; j++) {
            if (!T->term[j].n_taps) continue;
            const ps_pstage *S = &pl->pipe.st[g->mem[m->in_member[j]].stage];
            wv[j] = S->w + (S->per_channel ? c * S->n_taps : 0);
            bias[j] = S->bias ? S->bias[c] : 0.0f;
        }
        for (int64_t y = B->y0; y < y1;) {
            const int row_ok = y >= m->tap_valid.y0 && y < m->tap_valid.y0 + m->tap_valid.h;
            const int R = T2 ? T2->rows_per_call : 1;
            if (R > 1 && row_ok && y + R <= y1 && y + R <= m->tap_valid.y0 + m->tap_valid.h) {
                /* rows y .. y + R - 1, each in a temporary row of its own
                 * where the destination needs one */
                float *dd[PS_TAP_ROWS_PER_CALL], *dr[PS_TAP_ROWS_PER_CALL];
                for (int b = 0; b < R; b++) dd[b] = dst_row(out, c, y + b, B->x0, tb->temp + (size_t)b * tb->temp_floats);
                {
                    for (int64_t x0 = B->x0; x0 < x1;) {
                        const int64_t len = piece_end(x0, x1, cut2, 4) - x0;
                        if (x0 < vx0 || x0 >= vx1) {
                            for (int b = 0; b < R; b++)
                                compute_taps_edge(pl, g, m, boxes, rv, c, y + b, x0, len, dd[b] + (x0 - B->x0), n, inputs,
                                                  outputs, ws, tb);
                        } else {
                            tap_fetch(m->rows2, T2->n_rows, rv2, c, y, x0, len, stride2, tb, rows);
                            for (int b = 0; b < R; b++) dr[b] = dd[b] + (x0 - B->x0);
                            T2->fnn(dr[0], dr[1], rows, wv, bias, len);
                        }
                        x0 += len;
                    }
                    for (int b = 0; b < R; b++) put_row(out, c, y + b, B->x0, B->w, dd[b]);
                    y += R;
                    continue;
                }
            }
            float *d = dst_row(out, c, y, B->x0, tb->temp);
            for (int64_t x0 = B->x0; x0 < x1;) {
                const int64_t len = piece_end(x0, x1, cut, 4) - x0;
                if (!row_ok || x0 < vx0 || x0 >= vx1) {
                    compute_taps_edge(pl, g, m, boxes, rv, c, y, x0, len, d + (x0 - B->x0), n, inputs, outputs, ws, tb);
                } else {
                    tap_fetch(m->rows, T->n_rows, rv, c, y, x0, len, stride, tb, rows);
                    T->fn(d + (x0 - B->x0), rows, wv, bias, len);
                }
                x0 += len;
            }
            put_row(out, c, y, B->x0, B->w, d);
            y++;
        }
    }
}

/* Where member m writes in a tile whose boxes are given: its destination
 * in memory when it is written in place, else its ring. */
static view member_out(const ps_graph_plan *pl, const ps_gx_member *m, const ps_box *box, int64_t n,
                       const float *const *inputs, float *const *outputs, float *ws, thread_bufs *tb)
{
    if (!m->direct) return scratch_view(pl, m, box, tb->area);
    view out = memory_view(pl, m->stage, n, inputs, outputs, ws, pl->pipe.st[m->stage].output_index >= 0, tb->zeros);
    out.stream = m->stream ? pl->k : NULL;
    return out;
}

/* A live-out computed in its ring copies the part of block blk that is
 * its own share of tile (ti, tj) to the workspace and the graph output. */
static void store_live_out(const ps_graph_plan *pl, const ps_gx_member *m, int64_t ti, int64_t tj, const ps_box *blk,
                           const view *out, int64_t n, const float *const *inputs, float *const *outputs, float *ws,
                           thread_bufs *tb)
{
    if (!m->live_out || m->direct) return;
    const ps_pstage *S = &pl->pipe.st[m->stage];
    ps_box own = ps_member_own(m, ti, tj);
    own = ps_box_intersect(&own, blk);
    if (pl->xs[m->stage].ws_off != SIZE_MAX) {
        ps_box r = ps_box_intersect(&own, &S->need);
        view to = memory_view(pl, m->stage, n, inputs, outputs, ws, 0, tb->zeros);
        if (!ps_box_empty(&r)) copy_out(S, out, &to, &r);
    }
    if (S->output_index >= 0) {
        ps_box r = ps_box_intersect(&own, &S->out_region);
        view to = memory_view(pl, m->stage, n, inputs, outputs, ws, 1, tb->zeros);
        if (!ps_box_empty(&r)) copy_out(S, out, &to, &r);
    }
}

/* A lead of sibling sums (graph_exec.h) and its siblings over block B
 * (the same block of each): rows and columns whose taps all read inside
 * the input's domain through the compiled loop, two rows per call where it
 * has that form, the input rows read in place (an input in memory: the
 * rows the next call reads first requested ahead); the rest (edge columns,
 * rows at the domain's edge) each sibling by the stencil row kernel. The
 * loop sums as the row kernel does, so the values are the same bit for bit. */
static void compute_sibs(const ps_graph_plan *pl, const ps_gx_group *g, int k, const ps_box *B, const ps_box *boxes,
                         const view *in, int64_t ti, int64_t tj, int64_t img, const float *const *inputs,
                         float *const *outputs, float *ws, thread_bufs *tb)
{
    const ps_gx_member *m = &g->mem[k];
    const ps_pstage *S = &pl->pipe.st[m->stage];
    const ps_gx_stage *X = &pl->xs[m->stage];
    const int n = 1 + m->n_sib;
    int st[PS_TAPM_MAX_OUT], mem[PS_TAPM_MAX_OUT], direct = in[0].ps == 1;
    view out[PS_TAPM_MAX_OUT];
    for (int j = 0; j < n; j++) {
        mem[j] = j ? m->sib[j - 1] : k;
        st[j] = g->mem[mem[j]].stage;
        out[j] = member_out(pl, &g->mem[mem[j]], &boxes[mem[j]], img, inputs, outputs, ws, tb);
        /* each row written where it stays (no temporary row to scatter) */
        direct &= out[j].ps == 1 && !out[j].stream;
    }
    if (!direct) {
        for (int j = 0; j < n; j++) {
            compute_stage(pl, st[j], B, in, &out[j], tb);
            store_live_out(pl, &g->mem[mem[j]], ti, tj, B, &out[j], img, inputs, outputs, ws, tb);
        }
        return;
    }
    const ps_box *d = &in[0].dom;
    const int64_t x1 = B->x0 + B->w, y1 = B->y0 + B->h, sy = S->sy;
    int64_t ix0 = d->x0 - X->dx_min, ix1 = d->x0 + d->w - X->dx_max;
    if (ix0 < B->x0) ix0 = B->x0;
    if (ix1 > x1) ix1 = x1;
    if (ix1 <= ix0) ix0 = ix1 = x1;
    /* rows y whose taps' rows sy * y + dy0 .. sy * y + dy1 are inside */
    const int64_t ya = ceil_div(d->y0 - m->sib_dy0, sy), yb = ps_floor_div(d->y0 + d->h - 1 - m->sib_dy1, sy);
    const float *wv[PS_TAPM_MAX_OUT], *rows[PS_TAP_ROWS_MAX];
    float bias[PS_TAPM_MAX_OUT];
    for (int64_t c = 0; c < S->c; c++) {
        for (int j = 0; j < n; j++) {
            const ps_pstage *Sj = &pl->pipe.st[st[j]];
            wv[j] = Sj->w + (Sj->per_channel ? c * Sj->n_taps : 0);
            bias[j] = Sj->bias ? Sj->bias[c] : 0.0f;
        }
        for (int64_t y = B->y0; y < y1;) {
            const int inside = y >= ya && y <= yb && ix0 < ix1;
            const int R = inside && m->stap2 && y + 1 < y1 && y + 1 <= yb ? 2 : 1;
            float *dst[PS_TAPM_MAX_OUT][2];
            for (int j = 0; j < n; j++)
                for (int b = 0; b < R; b++) dst[j][b] = dst_row(&out[j], c, y + b, B->x0, tb->temp);
            const int64_t part[2][2] = {{B->x0, inside ? ix0 : x1}, {inside ? ix1 : x1, x1}};
            for (int pi = 0; pi < 2; pi++) {
                if (part[pi][1] <= part[pi][0]) continue;
                for (int j = 0; j < n; j++)
                    for (int b = 0; b < R; b++)
                        stage_row(pl, st[j], c, y + b, part[pi][0], part[pi][1] - part[pi][0], in,
                                  dst[j][b] + (part[pi][0] - B->x0), tb);
            }
            if (inside) {
                const ps_tprog *T = R == 2 ? m->stap2 : m->stap;
                const int64_t len = ix1 - ix0, span = X->dx_max - X->dx_min;
                /* an input in memory: the rows the next call reads first (stage_row's requests) */
                prefetch_rows(&in[0], c, sy * y + m->sib_dy1 + 1, sy * (y + R) + m->sib_dy1 + 1, ix0 + X->dx_min, len + span);
                for (int r = 0; r < T->n_rows; r++)
                    rows[r] = fetch(&in[0], c, sy * y + m->sib_dy0 + r, ix0 + X->dx_min, len + span, S->boundary, NULL,
                                    tb->zeros);
                float *o[PS_TAPM_MAX_OUT] = {0};
                for (int b = 0; b < R; b++)
                    for (int j = 0; j < n; j++) o[b * n + j] = dst[j][b] + (ix0 - B->x0);
                T->fns(o[0], o[1], o[2], o[3], rows, wv, bias, len);
            }
            y += R;
        }
    }
    for (int j = 0; j < n; j++) store_live_out(pl, &g->mem[mem[j]], ti, tj, B, &out[j], img, inputs, outputs, ws, tb);
}

/* One tile: its kind's program of steps (graph_exec.h), each a block of
 * one member's rows and columns computed into its ring of rows (or straight
 * into memory); live-outs copy their own part out as it is completed. No
 * row is computed twice within a tile; only the tile's halo is recomputed
 * by its neighbours. */
static void run_tile(const ps_graph_plan *pl, const ps_gx_group *g, int64_t n, int64_t ti, int64_t tj,
                     const float *const *inputs, float *const *outputs, float *ws, thread_bufs *tb, ps_box *boxes)
{
    const ps_pipeline *p = &pl->pipe;
    int64_t cell = (ti - g->ti0) * g->gx + (tj - g->tj0);
    int bt = g->btile[cell];
    for (int k = 0; k < g->n; k++)
        boxes[k] = bt < 0 ? ps_region_at(&g->mem[k].form, ti, tj) : g->bbox[(size_t)bt * g->n + k];
    int kind = g->kind_of[cell];
    const ps_gx_step *step = g->steps + g->kind_first[kind], *end = step + g->kind_len[kind];
    view in[PS_POINTWISE_MAX_INPUTS];
    for (; step < end; step++) {
        int k = step->k;
        const ps_gx_member *m = &g->mem[k];
        const ps_box *B = &boxes[k];
        const ps_pstage *S = &p->st[m->stage];
        for (int j = 0; j < S->n_in; j++) {
            int mk = m->in_member[j];
            if (m->fused[j]) continue; /* computed in the pass itself */
            in[j] = mk >= 0 ? scratch_view(pl, &g->mem[mk], &boxes[mk], tb->area)
                            : memory_view(pl, S->in[j], n, inputs, outputs, ws, 0, tb->zeros);
        }
        ps_box blk = {B->y0 + step->y0, B->x0 + step->x0, step->h, step->w};
        if (m->stap) {
            compute_sibs(pl, g, k, &blk, boxes, in, ti, tj, n, inputs, outputs, ws, tb);
            continue;
        }
        view out = member_out(pl, m, B, n, inputs, outputs, ws, tb);
        if (m->tap) compute_taps(pl, g, m, &blk, boxes, &out, n, inputs, outputs, ws, tb);
        else if (m->n_fused) compute_fused(pl, g, m, &blk, boxes, in, &out, n, inputs, outputs, ws, tb);
        else compute_stage(pl, m->stage, &blk, in, &out, tb);
        store_live_out(pl, m, ti, tj, &blk, &out, n, inputs, outputs, ws, tb);
    }
}

/* Tile `id` of group g counted over all images: image id / (gy gx), then
 * row-major in the tile grid. */
static inline void run_tile_id(const ps_graph_plan *pl, const ps_gx_group *g, int64_t id, const float *const *inputs,
                               float *const *outputs, float *ws, thread_bufs *tb, ps_box *boxes)
{
    const int64_t per_image = g->gy * g->gx, n = id / per_image, r = id % per_image;
    run_tile(pl, g, n, g->ti0 + r / g->gx, g->tj0 + r % g->gx, inputs, outputs, ws, tb, boxes);
}

static size_t round16(size_t v) { return (v + 15) & ~(size_t)15; }

/* A group that is one convolution run as a layer plan (graph_exec.h): the
 * whole tensor at once, the plan's own threads. */
static void run_layer_group(const ps_graph_plan *pl, const ps_gx_group *g, const float *const *inputs,
                            float *const *outputs, float *ws)
{
    const ps_pstage *S = &pl->pipe.st[g->mem[0].stage];
    const float zero = 0.0f;
    view in = memory_view(pl, S->in[0], 0, inputs, outputs, ws, 0, &zero);
    view out = memory_view(pl, g->mem[0].stage, 0, inputs, outputs, ws, S->output_index >= 0, &zero);
    ps_exec_args a;
    ps_exec_args_init(&a);
    a.src = in.base;
    a.weights = g->layer_weights;
    a.bias = S->bias;
    a.dst = out.base;
    if (S->sum_in) a.sum = memory_view(pl, S->in[1], 0, inputs, outputs, ws, 0, &zero).base;
    ps_plan_execute(g->layer, &a); /* checked at plan time: the arguments are the plan's own */
    if (g->layer_clamp) {
        /* rows of pixels ps apart: a slice of a concatenation's tensor clamps its own channels only */
        const int64_t rows = S->n * S->dom.h, w = S->dom.w, C = S->c, ps = out.ps;
#pragma omp parallel for num_threads(pl->nthreads) schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            float *row = out.base + r * w * ps;
            if (ps == C) pl->k->clamp(row, w * C, S->act_lo, S->act_hi);
            else
                for (int64_t i = 0; i < w; i++) pl->k->clamp(row + i * ps, C, S->act_lo, S->act_hi);
        }
    }
}

void ps_graph_run(const ps_graph_plan *pl, const float *const *inputs, float *const *outputs, float *workspace,
                  double *group_ms)
{
    float *threads_area = workspace + round16(pl->ws_tensor_floats);
    /* Runs of tiled groups share one parallel region; a layer group runs
     * between them with its plan's own. */
    for (int g0 = 0; g0 < pl->n_groups;) {
        if (pl->groups[g0].layer) {
            double t0 = group_ms ? omp_get_wtime() : 0;
            run_layer_group(pl, &pl->groups[g0], inputs, outputs, workspace);
            if (group_ms) group_ms[g0] = (omp_get_wtime() - t0) * 1e3;
            g0++;
            continue;
        }
        double t_prev = group_ms ? omp_get_wtime() : 0;
        int g1 = g0;
        while (g1 < pl->n_groups && !pl->groups[g1].layer) g1++;
#pragma omp parallel num_threads(pl->nthreads)
        {
            /* The thread's area: member scratch, staging rows, temporary rows,
             * expression registers, a row of zeros, the tile's boxes. */
            float *area = threads_area + (size_t)omp_get_thread_num() * pl->thread_floats;
            size_t off = pl->thread_floats - pl->staging_floats - (size_t)pl->temp_rows * pl->temp_floats - pl->regs_floats -
                         pl->fused_floats - 3 * pl->zero_floats - pl->boxes_floats;
            thread_bufs tb;
            tb.area = area;
            tb.staging = area + off;
            off += pl->staging_floats;
            tb.temp = area + off;
            off += pl->temp_floats;
            tb.vrow = area + off;
            off += (size_t)(pl->temp_rows - 1) * pl->temp_floats; /* vrow, and rows for a tap program's several rows */
            tb.temp_floats = pl->temp_floats;
            tb.regs = area + off;
            off += pl->regs_floats;
            tb.fused = area + off;
            off += pl->fused_floats;
            memset(area + off, 0, pl->zero_floats * sizeof(float));
            tb.zeros = area + off;
            off += pl->zero_floats;
            for (size_t i = 0; i < pl->zero_floats; i++) {
                area[off + i] = -INFINITY;
                area[off + pl->zero_floats + i] = INFINITY;
            }
            tb.ninf = area + off;
            tb.pinf = area + off + pl->zero_floats;
            off += 2 * pl->zero_floats;
            ps_box *boxes = (ps_box *)(void *)(area + off);
            for (int gi = g0; gi < g1; gi++) {
                const ps_gx_group *g = &pl->groups[gi];
                int64_t per_image = g->gy * g->gx, total = g->nothing_left ? 0 : per_image * g->images;
                /* static: a thread takes the same share of the tiles (the same
                 * rows of the same images) in every group, so the rows it
                 * wrote are still in its own L2 when the next group reads
                 * them; with dynamic assignment half of them would come from
                 * the other core's cache. A group alone in its run has no
                 * such reuse (what it reads comes from memory or a layer
                 * plan's threads): its tiles go to whichever thread is free,
                 * so a core slowed by another tenant of the machine, or
                 * given the costlier edge tiles, does not hold the others at
                 * the barrier. */
                if (g1 - g0 == 1) {
#pragma omp for schedule(dynamic, 1)
                    for (int64_t id = 0; id < total; id++) run_tile_id(pl, g, id, inputs, outputs, workspace, &tb, boxes);
                } else {
#pragma omp for schedule(static)
                    for (int64_t id = 0; id < total; id++) run_tile_id(pl, g, id, inputs, outputs, workspace, &tb, boxes);
                }
                /* before the barrier that ends the loop: the next group reads
                 * what this one streamed */
                pl->k->stream_fence();
                if (group_ms) {
#pragma omp barrier
#pragma omp master
                    {
                        double t = omp_get_wtime();
                        group_ms[gi] = (t - t_prev) * 1e3;
                        t_prev = t;
                    }
                }
            }
        }
        g0 = g1;
    }
}
